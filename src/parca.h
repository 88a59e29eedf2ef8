/*
 * parca.h
 *		Settings and module-wide declarations of the parca extension.
 */
#ifndef PARCA_H
#define PARCA_H

/* parca.max_profile_size: largest accepted profile, decompressed, in bytes. */
extern int	parca_max_profile_size;

/* The schema of extension parca (palloc'd), or NULL if it is not installed. */
extern char *parca_extension_schema(void);

#endif							/* PARCA_H */
