/*
 * selector.c
 *		Parsing series selectors and finding the series they match.
 *
 * Grammar (whitespace allowed between tokens):
 *   selector  := [profile_type] ['{' [matcher {',' matcher} [',']] '}']
 *   profile_type := field ':' field ':' field ':' field ':' field [':' 'delta']
 *   field     := {any character but ':', '{', '}', '"', white space and control
 *                characters}   (what ingestion accepts: profile_type.h)
 *   matcher   := label_name ('=' | '!=' | '=~' | '!~') string
 *   string    := '"' ... '"' | '\'' ... '\'' | '`' ... '`'   (\ escapes in the first two;
 *                in a regex, an escape the string does not know is the regex's)
 *
 * Matching is done in SQL over parca.series, so regexes are PostgreSQL's
 * advanced regular expressions, anchored as Prometheus anchors them:
 * `^(?:re)$`; the series index (series_index.h) narrows the rows read down
 * to those of the label values matched.
 */
#include "postgres.h"

#include "catalog/pg_collation_d.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "query/selector.h"
#include "metastore/series_index.h"
#include "types/valid_text.h"

typedef struct SelParser
{
	const char *text;
	const char *p;
	int			nregexes;		/* regex matchers so far */
} SelParser;

/* 1-based character position of p in the selector text. */
static int
sel_position(const SelParser *ps, const char *p)
{
	return pg_mbstrlen_with_len(ps->text, (int) (p - ps->text)) + 1;
}

static void
sel_error_at(const SelParser *ps, const char *at, const char *msg)
{
	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 errmsg("invalid selector at position %d: %s", sel_position(ps, at), msg),
			 *at ? errdetail("The selector is %s; the error is at %s.",
							 message_quote_cstring(ps->text), message_quote_cstring(at))
			 : errdetail("The selector %s ends there.", message_quote_cstring(ps->text))));
}

/* A limit of selector.h passed, at the given place. */
static void
sel_limit_error(const SelParser *ps, const char *at, const char *msg, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("selector too large at position %d: %s", sel_position(ps, at), msg),
			 errdetail("The selector is %s.", message_quote_cstring(ps->text)),
			 errhint("%s", hint)));
}

static void
sel_skip_space(SelParser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
	{
		CHECK_FOR_INTERRUPTS();
		ps->p++;
	}
}

static bool
is_label_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_label_char(char c)
{
	return is_label_start(c) || (c >= '0' && c <= '9');
}

/* The profile type, which ends at '{', white space or the end of the text. */
static void
sel_parse_type(SelParser *ps, Selector *sel)
{
	const char *start = ps->p;
	int			error_at;

	while (*ps->p != '\0' && *ps->p != '{' && *ps->p != ' ' && *ps->p != '\t' &&
		   *ps->p != '\n' && *ps->p != '\r')
	{
		CHECK_FOR_INTERRUPTS();
		ps->p++;
	}
	switch (profile_type_parse(start, (int) (ps->p - start), &sel->type, &error_at))
	{
		case PROFILE_TYPE_OK:
			break;
		case PROFILE_TYPE_BAD_CHAR:
			sel_error_at(ps, start + error_at, "unexpected character in the profile type");
			break;
		case PROFILE_TYPE_TOO_MANY_FIELDS:
			sel_error_at(ps, start + error_at, "a profile type has at most six fields");
			break;
		case PROFILE_TYPE_TOO_FEW_FIELDS:
			sel_error_at(ps, start + error_at,
						 "a profile type has five fields, name:sample_type:sample_unit:period_type:period_unit, and an optional :delta");
			break;
		case PROFILE_TYPE_EMPTY_NAME:
			sel_error_at(ps, start + error_at, "the profile type's name is empty");
			break;
		case PROFILE_TYPE_NOT_DELTA:
			sel_error_at(ps, start + error_at, "the sixth field of a profile type can only be \"delta\"");
			break;
	}
	sel->profile_type = pnstrdup(start, ps->p - start);
}

/*
 * A quoted label value.  In a regex matcher's value an escape the string
 * does not know, such as the \. that Grafana's ${var:regex} writes, is
 * handed to the regex as it is (where, as in RE2, it escapes the
 * character); elsewhere it is an error.  The value is never longer than
 * its quoted form, which is measured first: the value takes that much
 * memory once, and an unterminated one none.
 */
static char *
sel_parse_string(SelParser *ps, bool regex)
{
	char		quote = *ps->p;
	const char *start = ps->p;
	const char *end;
	char	   *value;
	char	   *out;

	if (quote != '"' && quote != '\'' && quote != '`')
		sel_error_at(ps, ps->p, "expected a quoted label value");
	for (end = start + 1; *end != quote; end++)
	{
		CHECK_FOR_INTERRUPTS();
		if (*end == '\0' || (*end == '\\' && quote != '`' && *++end == '\0'))
			sel_error_at(ps, start, "unterminated label value");
	}
	value = out = palloc(end - start);
	for (ps->p = start + 1; ps->p < end; ps->p++)
	{
		CHECK_FOR_INTERRUPTS();
		if (*ps->p != '\\' || quote == '`')
		{
			*out++ = *ps->p;
			continue;
		}
		switch (*++ps->p)
		{
			case 'n':
				*out++ = '\n';
				break;
			case 't':
				*out++ = '\t';
				break;
			case '\\':
			case '"':
			case '\'':
				*out++ = *ps->p;
				break;
			default:
				if (!regex)
					sel_error_at(ps, ps->p - 1, "unknown escape in label value");
				*out++ = '\\';
				*out++ = *ps->p;
		}
	}
	*out = '\0';
	if (regex && out - value > SELECTOR_MAX_REGEX_BYTES)
		sel_limit_error(ps, start,
						psprintf("a regular expression is longer than %d bytes", SELECTOR_MAX_REGEX_BYTES),
						"Match fewer values with one regular expression.");
	ps->p = end + 1;
	return value;
}

/* Error context: says which matcher's regex failed to compile. */
static void
regex_error_context(void *arg)
{
	errcontext("in the regular expression at position %d of the selector",
			   *(int *) arg);
}

/* The anchored form of a matcher's regex. */
static char *
anchored_regex(const char *re)
{
	return psprintf("^(?:%s)$", re);
}

/*
 * Compiles the regex now, so that a bad one is an error that points at it
 * (PostgreSQL's engine refuses one whose automaton is too large, and can
 * be cancelled while it compiles); the compiled form stays in the
 * backend's cache of regexes for the query that uses it.
 */
static void
check_regex(SelParser *ps, const char *at, const char *re)
{
	ErrorContextCallback cb;
	int			pos = sel_position(ps, at);

	cb.callback = regex_error_context;
	cb.arg = &pos;
	cb.previous = error_context_stack;
	error_context_stack = &cb;
	(void) RE_compile_and_cache(cstring_to_text(anchored_regex(re)),
								REG_ADVANCED, DEFAULT_COLLATION_OID);
	error_context_stack = cb.previous;
}

static LabelMatcher *
sel_parse_matcher(SelParser *ps)
{
	LabelMatcher *m = palloc0(sizeof(LabelMatcher));
	const char *start = ps->p;
	const char *value_at;
	bool		regex;

	if (!is_label_start(*ps->p))
		sel_error_at(ps, ps->p, *ps->p == '\0' ? "expected a label name" :
					 "expected a label name (letters, digits and _, not starting with a digit)");
	while (is_label_char(*ps->p))
	{
		CHECK_FOR_INTERRUPTS();
		ps->p++;
	}
	m->name = pnstrdup(start, ps->p - start);
	sel_skip_space(ps);
	if (ps->p[0] == '=' && ps->p[1] == '~')
		m->op = MATCH_RE, ps->p += 2;
	else if (ps->p[0] == '!' && ps->p[1] == '~')
		m->op = MATCH_NRE, ps->p += 2;
	else if (ps->p[0] == '!' && ps->p[1] == '=')
		m->op = MATCH_NEQ, ps->p += 2;
	else if (ps->p[0] == '=')
		m->op = MATCH_EQ, ps->p += 1;
	else
		sel_error_at(ps, ps->p, "expected =, !=, =~ or !~ after the label name");
	regex = m->op == MATCH_RE || m->op == MATCH_NRE;
	if (regex && ++ps->nregexes > SELECTOR_MAX_REGEX_MATCHERS)
		sel_limit_error(ps, start,
						psprintf("more than %d regular expression matchers", SELECTOR_MAX_REGEX_MATCHERS),
						"Join alternatives into one regular expression: a=~\"x|y\".");
	sel_skip_space(ps);
	value_at = ps->p;
	m->value = sel_parse_string(ps, regex);
	if (regex)
		check_regex(ps, value_at, m->value);
	return m;
}

/*
 * Label matchers separated by commas (one may end the list) up to the
 * character end: '}' in a selector, '\0' for selector_parse_matchers().
 */
static void
sel_parse_matchers(SelParser *ps, Selector *sel, char end)
{
	sel_skip_space(ps);
	while (*ps->p != end)
	{
		if (list_length(sel->matchers) == SELECTOR_MAX_MATCHERS)
			sel_limit_error(ps, ps->p,
							psprintf("more than %d label matchers", SELECTOR_MAX_MATCHERS),
							"A selector names a few labels; match several values of one label with one regular expression.");
		sel->matchers = lappend(sel->matchers, sel_parse_matcher(ps));
		sel_skip_space(ps);
		if (*ps->p == ',')
		{
			ps->p++;
			sel_skip_space(ps);
		}
		else if (*ps->p != end)
			sel_error_at(ps, ps->p,
						 end != '}' ? "expected , after a label matcher" :
						 *ps->p ? "expected , or } after a label matcher" :
						 "missing } at the end of the label matchers");
	}
}

static void
sel_parser_init(SelParser *ps, const char *text)
{
	ps->text = text;
	ps->p = text;
	ps->nregexes = 0;
}

Selector *
selector_parse(const char *text)
{
	SelParser	ps;
	Selector   *sel = palloc0(sizeof(Selector));

	sel_parser_init(&ps, text);
	sel_skip_space(&ps);
	if (*ps.p != '{' && *ps.p != '\0')
		sel_parse_type(&ps, sel);
	sel_skip_space(&ps);
	if (*ps.p == '{')
	{
		ps.p++;
		sel_parse_matchers(&ps, sel, '}');
		ps.p++;
		sel_skip_space(&ps);
	}
	if (*ps.p != '\0')
		sel_error_at(&ps, ps.p, "unexpected text after the selector");
	return sel;
}

void
selector_parse_matchers(const char *text, int *nmatchers, int *nregexes)
{
	SelParser	ps;
	Selector	sel;

	memset(&sel, 0, sizeof(sel));
	sel_parser_init(&ps, text);
	sel_parse_matchers(&ps, &sel, '\0');
	*nmatchers = list_length(sel.matchers);
	*nregexes = ps.nregexes;
}

Size
selector_quoted_length(const char *value, int len)
{
	Size		n = (Size) len + 2;

	for (int i = 0; i < len; i++)
		n += value[i] == '"' || value[i] == '\\';
	return n;
}

void
selector_append_quoted(StringInfo buf, const char *value, int len)
{
	Size		quoted = selector_quoted_length(value, len);

	if (quoted >= MaxAllocSize - (Size) buf->len)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a quoted label value would be longer than %zu bytes", (Size) MaxAllocSize)));
	enlargeStringInfo(buf, (int) quoted);
	buf->data[buf->len++] = '"';
	for (int i = 0; i < len; i++)
	{
		CHECK_FOR_INTERRUPTS();
		if (value[i] == '"' || value[i] == '\\')
			buf->data[buf->len++] = '\\';
		buf->data[buf->len++] = value[i];
	}
	buf->data[buf->len++] = '"';
	buf->data[buf->len] = '\0';
}

Selector *
selector_parse_text(const text *t)
{
	int			len = VARSIZE_ANY_EXHDR(t);
	char	   *s;
	Selector   *sel;

	if (len > SELECTOR_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("selector %s is longer than %d bytes", message_quote(VARDATA_ANY(t), len),
						SELECTOR_MAX_BYTES),
				 errdetail("A label set is at most %d bytes: a longer value matches nothing, or everything.",
						   LABELS_MAX_BYTES)));
	s = text_to_cstring(t);
	sel = selector_parse(s);
	pfree(s);
	return sel;
}

void
selector_require_type(const Selector *sel, const text *t)
{
	if (sel->profile_type == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("selector %s names no profile type", message_quote(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))),
				 errhint("Start it with a profile type such as process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta; parca_profile_types() lists them.")));
}

/* --- finding the series ------------------------------------------------ */

/*
 * Parameters of the statement being built: values and types, numbered
 * from 1.
 */
typedef struct Params
{
	Oid		   *types;
	Datum	   *values;
	int			n;
	int			cap;
} Params;

static int
add_param(Params *p, Oid type, Datum value)
{
	if (p->n == p->cap)
	{
		p->cap = p->cap ? p->cap * 2 : 8;
		p->types = p->types ? repalloc(p->types, p->cap * sizeof(Oid)) : palloc(p->cap * sizeof(Oid));
		p->values = p->values ? repalloc(p->values, p->cap * sizeof(Datum)) :
			palloc(p->cap * sizeof(Datum));
	}
	p->types[p->n] = type;
	p->values[p->n] = value;
	return ++p->n;
}

static void
run_select(const char *sql, Params *p)
{
	int			ret = SPI_execute_with_args(sql, p ? p->n : 0, p ? p->types : NULL,
											p ? p->values : NULL, NULL, true, 0);

	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));
}

Datum
selector_list_array(List *items, Oid type)
{
	Datum	   *d = palloc(Max(list_length(items), 1) * sizeof(Datum));
	ListCell   *lc;
	int			n = 0;
	int16		len;
	bool		byval;
	char		align;

	foreach(lc, items)
		d[n++] = type == TEXTOID ? CStringGetTextDatum((char *) lfirst(lc)) : (Datum) lfirst(lc);
	get_typlenbyvalalign(type, &len, &byval, &align);
	return PointerGetDatum(construct_array(d, n, type, len, byval, align));
}

List *
selector_types(const Selector *sel)
{
	List	   *types = NIL;

	if (sel->profile_type)
		return list_make1(pstrdup(sel->profile_type));
	/* the distinct types, one index probe each */
	run_select("WITH RECURSIVE t AS ("
			   " SELECT (SELECT s.profile_type FROM parca.series s ORDER BY s.profile_type LIMIT 1) AS t"
			   " UNION ALL"
			   " SELECT (SELECT s.profile_type FROM parca.series s"
			   "         WHERE s.profile_type OPERATOR(pg_catalog.>) t.t ORDER BY s.profile_type LIMIT 1)"
			   " FROM t WHERE t.t IS NOT NULL)"
			   " SELECT t.t FROM t WHERE t.t IS NOT NULL", NULL);
	for (uint64 i = 0; i < SPI_processed; i++)
		types = lappend(types, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
	return types;
}

/*
 * The strings a regex matches when it is only literal alternatives, as
 * parca_selector writes a dashboard's values (a|b\.c): NIL otherwise,
 * or if it matches the empty string.
 */
static List *
regex_literals(const char *re)
{
	List	   *literals = NIL;
	StringInfoData buf;

	initStringInfo(&buf);
	for (const char *p = re;; p++)
	{
		if (*p == '\0' || *p == '|')
		{
			if (buf.len == 0)
				return NIL;
			literals = lappend(literals, pstrdup(buf.data));
			resetStringInfo(&buf);
			if (*p == '\0')
				return literals;
		}
		else if (*p == '\\')
		{
			/* an escaped character that is not a letter or digit is itself */
			if (p[1] == '\0' || (unsigned char) p[1] >= 0x80 || isalnum((unsigned char) p[1]))
				return NIL;
			appendStringInfoChar(&buf, *++p);
		}
		else if (strchr(".[](){}*+?^$", *p) != NULL)
			return NIL;
		else
			appendStringInfoChar(&buf, *p);
	}
}

/* Beyond this many values a regex matcher is only a filter. */
#define MAX_REGEX_KEYS 1000

/*
 * The keys of the label values matcher m matches among the series of
 * types, into *keys; false when it cannot narrow the series down (it
 * matches series without the label, or too many values, or the values
 * cannot be listed for this user).
 */
static bool
matcher_keys(const LabelMatcher *m, List *types, List **keys)
{
	char	   *re;
	List	   *literals;
	ListCell   *lt;
	ListCell   *lv;
	Params		p = {0};
	SeriesIndexAccess access;

	*keys = NIL;
	if (m->op == MATCH_EQ)
		literals = m->value[0] ? list_make1(m->value) : NIL;
	else if (m->op == MATCH_RE)
		literals = regex_literals(m->value);
	else
		return false;
	if (literals != NIL)
	{
		foreach(lt, types)
			foreach(lv, literals)
			*keys = lappend(*keys, (void *) Int64GetDatum(series_index_key(lfirst(lt), m->name,
																		   lfirst(lv))));
		return true;
	}
	if (m->op == MATCH_EQ)
		return false;			/* ="" : the series without the label too */
	re = anchored_regex(m->value);
	if (RE_compile_and_execute(cstring_to_text(re), "", 0, REG_ADVANCED, DEFAULT_COLLATION_OID,
							   0, NULL) || !series_index_readable(false))
		return false;
	add_param(&p, TEXTARRAYOID, selector_list_array(types, TEXTOID));
	add_param(&p, TEXTOID, CStringGetTextDatum(m->name));
	add_param(&p, TEXTOID, CStringGetTextDatum(re));
	add_param(&p, INT4OID, Int32GetDatum(MAX_REGEX_KEYS + 1));
	series_index_access_begin(&access);
	run_select("SELECT DISTINCT d.profile_type, d.value FROM parca.label_values d"
			   " WHERE d.profile_type OPERATOR(pg_catalog.=) ANY ($1) AND d.name OPERATOR(pg_catalog.=) $2"
			   "   AND d.value OPERATOR(pg_catalog.~) $3 LIMIT $4", &p);
	series_index_access_end(&access);
	if (SPI_processed > MAX_REGEX_KEYS)
		return false;
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];

		*keys = lappend(*keys, (void *) Int64GetDatum(series_index_key(SPI_getvalue(tup, SPI_tuptable->tupdesc, 1),
																	   m->name,
																	   SPI_getvalue(tup, SPI_tuptable->tupdesc, 2))));
	}
	return true;
}

/*
 * The series are read from parca.series as the caller reads it.  Each
 * matcher is applied as it always was, coalesce(labels ->> name, '') op
 * value; those that name label values (=, and =~ when it does not match
 * the empty string) also give the keys of those values, which the GIN
 * index on parca.series_label_keys looks up, so that the rows read are
 * about those that match.  Without such a matcher the type's series are
 * read (through the index on profile_type), or all.
 */
SeriesMatch *
selector_find_series(const Selector *sel, List *value_labels, int *nseries)
{
	StringInfoData sql;
	Params		p = {0};
	List	   *types = NIL;
	bool		types_listed = false;
	ListCell   *lc;
	SeriesMatch *result;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT id, profile_type");
	foreach(lc, value_labels)
		appendStringInfo(&sql, ", coalesce(labels OPERATOR(pg_catalog.->>) $%d, '')",
						 add_param(&p, TEXTOID, CStringGetTextDatum((char *) lfirst(lc))));
	appendStringInfoString(&sql, " FROM parca.series WHERE true");
	if (sel->profile_type)
		appendStringInfo(&sql, " AND profile_type OPERATOR(pg_catalog.=) $%d",
						 add_param(&p, TEXTOID, CStringGetTextDatum(sel->profile_type)));
	foreach(lc, sel->matchers)
	{
		LabelMatcher *m = lfirst(lc);
		static const char *const ops[] = {"=", "<>", "~", "!~"};
		const char *value = (m->op == MATCH_RE || m->op == MATCH_NRE) ?
			anchored_regex(m->value) : m->value;
		List	   *keys;

		if (!types_listed && (m->op == MATCH_EQ || m->op == MATCH_RE))
		{
			types = selector_types(sel);
			types_listed = true;
		}
		if ((m->op == MATCH_EQ || m->op == MATCH_RE) && matcher_keys(m, types, &keys))
			appendStringInfo(&sql, " AND parca.series_label_keys(profile_type, labels)"
							 " OPERATOR(pg_catalog.&&) $%d",
							 add_param(&p, INT8ARRAYOID, selector_list_array(keys, INT8OID)));
		appendStringInfo(&sql, " AND coalesce(labels OPERATOR(pg_catalog.->>) $%d, '') OPERATOR(pg_catalog.%s) $%d",
						 add_param(&p, TEXTOID, CStringGetTextDatum(m->name)), ops[m->op],
						 add_param(&p, TEXTOID, CStringGetTextDatum(value)));
	}
	appendStringInfoString(&sql, " ORDER BY id");

	run_select(sql.data, &p);
	*nseries = (int) SPI_processed;
	result = palloc(sizeof(SeriesMatch) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			nv = list_length(value_labels);

		result[i].id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		result[i].profile_type = SPI_getvalue(tup, desc, 2);
		result[i].values = nv ? palloc(sizeof(char *) * nv) : NULL;
		for (int k = 0; k < nv; k++)
			result[i].values[k] = SPI_getvalue(tup, desc, 3 + k);
	}
	return result;
}
