/*
 * valid_text.h
 *		Making bytes from outside (a pprof, an HTTP header) valid text, and
 *		short enough to quote in a message.
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

/* How many characters of a value a message quotes. */
#define MESSAGE_QUOTE_CHARS 64

/*
 * s[0..len) for a message, quotes included: "s" whole when it has at most
 * MESSAGE_QUOTE_CHARS characters, else "its first ones..." (N bytes), so
 * that an error names a bad argument without echoing megabytes of it into
 * the log and to the client.  Bytes that are not valid text are shown as
 * valid_text() repairs them.
 */
extern char *message_quote(const char *s, Size len);

/* message_quote() of a NUL-terminated string. */
extern char *message_quote_cstring(const char *s);

#endif							/* PARCA_VALID_TEXT_H */
