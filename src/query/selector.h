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
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"

#include "types/labels.h"
#include "types/profile_type.h"

/*
 * What one selector may hold (docs/query.md, "Limits"), refused with an
 * error as soon as the parser passes them.  Each regular expression is
 * compiled once per query and stays in the backend's cache of 32 compiled
 * regexes: 16 leave room for others, and 16 kB (about 400 values of 40
 * characters) compiles in some 15 ms into about 1 MB.  PostgreSQL's
 * engine bounds what a short but complex regex may cost ("regular
 * expression is too complex").
 */
#define SELECTOR_MAX_MATCHERS 64
/*
 * bytes of a selector's text: a label set is at most LABELS_MAX_BYTES
 * (labels.h), so a longer value matches nothing, or everything
 */
#define SELECTOR_MAX_BYTES LABELS_MAX_BYTES
/* label names a query groups or sums by (selector_find_series' value_labels) */
#define SELECTOR_MAX_LABEL_NAMES 64
#define SELECTOR_MAX_REGEX_MATCHERS 16
#define SELECTOR_MAX_REGEX_BYTES (16 * 1024)

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

/*
 * selector_parse() of a text argument, refused unread beyond
 * SELECTOR_MAX_BYTES; the parts are copies, the text is not kept.
 */
extern Selector *selector_parse_text(const text *t);

/*
 * Checks that text is label matchers as between a selector's braces
 * (without them; a comma may end the list), within the selector's limits;
 * a malformed list is an error pointing at the position.  Says how many
 * matchers, and how many of them regex matchers, it has.
 */
extern void selector_parse_matchers(const char *text, int *nmatchers, int *nregexes);

/*
 * Appends value[0..len) to buf as a selector's quoted label value: in
 * double quotes, with '"' and '\' escaped, so that it reads back as
 * itself; selector_quoted_length() is how many bytes that takes.
 */
extern Size selector_quoted_length(const char *value, int len);
extern void selector_append_quoted(StringInfo buf, const char *value, int len);

/* Raises an error unless the selector (parsed from t) names a profile type. */
extern void selector_require_type(const Selector *sel, const text *t);

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
