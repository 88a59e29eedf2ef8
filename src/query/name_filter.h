/*
 * name_filter.h
 *		Which function names a function view reports: those that match a
 *		text as equal, contains, starts_with or their negations say
 *		(parca_function_values, parca_function_range).
 */
#ifndef PARCA_QUERY_NAME_FILTER_H
#define PARCA_QUERY_NAME_FILTER_H

#include "postgres.h"

#include "query/symbols.h"

typedef struct NameFilter NameFilter;

/*
 * The filter of function names that match text as match says (one of
 * equal, not_equal, contains, not_contains, starts_with, not_starts_with;
 * any other is an error), allocated in cxt.
 */
extern NameFilter *name_filter_create(MemoryContext cxt, const char *text, const char *match);

/* Whether f was made with this text and match. */
extern bool name_filter_is(const NameFilter *f, const char *text, const char *match);

extern void name_filter_free(NameFilter *f);

/*
 * Whether the name numbered name in syms passes; decided once per name
 * and remembered (syms must be the same table at every call).
 */
extern bool name_filter_wants(NameFilter *f, const Symbols *syms, int name);

#endif							/* PARCA_QUERY_NAME_FILTER_H */
