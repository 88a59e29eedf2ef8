/*
 * string_table.h
 *		Strings numbered densely from 0 in the order they are first seen.
 *
 * The pprof export's string table and the names of a profile's frames
 * (symbols.h) are both made this way: each distinct string is copied once
 * and known by its number afterwards.  Allocated in the memory context
 * current at string_table_init.
 */
#ifndef PARCA_QUERY_STRING_TABLE_H
#define PARCA_QUERY_STRING_TABLE_H

#include "postgres.h"

#include "utils/hsearch.h"

typedef struct StringTable
{
	HTAB	   *index;			/* string -> number */
	char	  **strings;		/* number -> string */
	int			n;
	int			cap;
} StringTable;

extern void string_table_init(StringTable *t, const char *name);

/* The number of s, which is copied in if new (then *added, if given, is true). */
extern int	string_table_add(StringTable *t, const char *s, bool *added);

/* The number of s, or -1 if the table does not hold it. */
extern int	string_table_find(const StringTable *t, const char *s);

#endif							/* PARCA_QUERY_STRING_TABLE_H */
