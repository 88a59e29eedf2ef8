/*
 * extension_version.h
 *		The extension's SQL version this library was built for, checked
 *		against the installed one where a difference would do harm; the
 *		schema the extension is installed in.
 *
 * A server upgraded to a new library keeps each database's objects at the
 * version they were created or last updated to until ALTER EXTENSION
 * parca UPDATE; writing with the new library into the old tables could
 * store rows the old schema does not expect.
 */
#ifndef PARCA_EXTENSION_VERSION_H
#define PARCA_EXTENSION_VERSION_H

/* PARCA_EXTVERSION comes from the Makefile (EXTVERSION). */

/*
 * Raises an error, with a hint to run ALTER EXTENSION parca UPDATE, unless
 * the database's extension parca is at PARCA_EXTVERSION.
 */
extern void extension_version_check(void);

/* The schema of extension parca (palloc'd), or NULL if it is not installed. */
extern char *parca_extension_schema(void);

#endif							/* PARCA_EXTENSION_VERSION_H */
