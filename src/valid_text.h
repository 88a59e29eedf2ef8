/*
 * valid_text.h
 *		Making bytes from outside (a pprof, an HTTP header) valid text.
 *
 * PostgreSQL's text holds neither NULs nor byte sequences invalid in the
 * database encoding: pg_dump would write them out, and the dump would not
 * restore.  Strings that C code turns into text without the type's input
 * function must be checked here first.
 */
#ifndef PARCA_VALID_TEXT_H
#define PARCA_VALID_TEXT_H

#include "postgres.h"

/*
 * s[0..len) as text: s itself if it is valid in the database encoding,
 * else a palloc'd, NUL-terminated copy in which each NUL and each byte
 * that does not start a valid character is U+FFFD ('?' if the database
 * encoding is not UTF8).  *repaired says which.
 */
extern const char *valid_text(const char *s, Size len, bool *repaired);

#endif							/* PARCA_VALID_TEXT_H */
