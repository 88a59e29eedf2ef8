/*
 * selector.h
 *		Series selectors: `profile_type{label="v", l2!="v", l3=~"re", l4!~"re"}`.
 *
 * A selector names one profile type (Parca's form
 * name:sample_type:sample_unit:period_type:period_unit[:delta]) and any
 * number of label matchers, as in Prometheus: regexes are anchored at
 * both ends, and a label that is absent compares as the empty string, so
 * `label=""` selects series without it.  Either part may be omitted
 * (`{job="api"}`, `memory:alloc_space:bytes:space:bytes`), but functions
 * that merge profiles insist on the profile type.
 */
#ifndef PARCA_QUERY_SELECTOR_H
#define PARCA_QUERY_SELECTOR_H

#include "postgres.h"
#include "nodes/pg_list.h"

#include "profile_type.h"

typedef enum MatchOp
{
	MATCH_EQ,					/* = */
	MATCH_NEQ,					/* != */
	MATCH_RE,					/* =~ */
	MATCH_NRE					/* !~ */
} MatchOp;

typedef struct LabelMatcher
{
	char	   *name;
	MatchOp		op;
	char	   *value;
} LabelMatcher;

typedef struct Selector
{
	char	   *profile_type;	/* NULL when the selector has none */
	ProfileType type;			/* its fields, when it has one */
	List	   *matchers;		/* of LabelMatcher * */
} Selector;

/* One series a selector matched. */
typedef struct SeriesMatch
{
	int64		id;
	char	   *profile_type;
	char	  **values;			/* the requested labels' values, "" if absent */
} SeriesMatch;

/* Parses text; a malformed selector is an error pointing at the position. */
extern Selector *selector_parse(const char *text);

/* Raises an error unless the selector names a profile type. */
extern void selector_require_type(const Selector *sel, const char *text);

/*
 * The profile types a selector's series may have: its own, or every
 * stored one.  Uses SPI: the caller has connected.
 */
extern List *selector_types(const Selector *sel);

/*
 * A List of C strings (type TEXTOID) or of Datums (another type) as an
 * array datum, for SPI arguments.
 */
extern Datum selector_list_array(List *items, Oid type);

/*
 * The series matching a selector, ordered by id, with the values of the
 * labels named in value_labels (a List of C strings, may be NIL).  Uses
 * SPI: the caller has connected.
 */
extern SeriesMatch *selector_find_series(const Selector *sel, List *value_labels,
										 int *nseries);

#endif							/* PARCA_QUERY_SELECTOR_H */
