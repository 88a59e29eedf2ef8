/*
 * selector_build.c
 *		parca_selector(): a selector from parts, for dashboards.
 *
 * Grafana pastes template variables into SQL string literals (which its
 * SQL datasource quotes), never into selector syntax: the profile type and
 * label name must be what their grammar allows, each value is quoted (and
 * escaped for a regex when several are matched), and the extra matchers
 * must be matchers, so that a variable can select values but never add
 * matchers of its own; the parts together stay within the limits of one
 * selector (selector.h).  A long value is held once more, as the result.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "types/labels.h"
#include "types/profile_type.h"
#include "query/selector.h"

/* Error context: names the argument whose matchers failed to parse. */
static void
matchers_error_context(void *arg)
{
	errcontext("in the argument matchers of parca_selector");
}

/* The regex that matches exactly one of the values: each escaped, joined by |. */
static char *
values_regex(Datum *values, int n)
{
	StringInfoData re;

	initStringInfo(&re);
	for (int i = 0; i < n; i++)
	{
		const char *v = VARDATA_ANY(DatumGetPointer(values[i]));
		int			len = VARSIZE_ANY_EXHDR(DatumGetPointer(values[i]));

		if (i > 0)
			appendStringInfoChar(&re, '|');
		/* a backslash before each ASCII punctuation character */
		for (int k = 0; k < len; k++)
		{
			unsigned char c = (unsigned char) v[k];

			CHECK_FOR_INTERRUPTS();
			if (c < 0x80 && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') &&
				!(c >= '0' && c <= '9') && c != '_')
				appendStringInfoChar(&re, '\\');
			appendStringInfoChar(&re, v[k]);
		}
		if (re.len > SELECTOR_MAX_REGEX_BYTES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the %d label_values of parca_selector make a regular expression longer than %d bytes",
							n, SELECTOR_MAX_REGEX_BYTES),
					 errhint("Select fewer values, or all of them (a NULL value).")));
	}
	return re.data;
}

/* matchers without the white space and commas around them. */
static char *
trim_matchers(const char *s)
{
	const char *end = s + strlen(s);

	while (*s && strchr(" \t\n\r,", *s))
		s++;
	while (end > s && strchr(" \t\n\r,", end[-1]))
		end--;
	return pnstrdup(s, end - s);
}

PG_FUNCTION_INFO_V1(parca_selector);

/*
 * parca_selector(profile_type text, label text DEFAULT NULL,
 *                label_values text[] DEFAULT NULL, matchers text DEFAULT '')
 *   RETURNS text
 * NULL for an empty profile type, or a label with an empty list of values;
 * a NULL list, or a NULL value in it, matches any value (no matcher).
 */
Datum
parca_selector(PG_FUNCTION_ARGS)
{
	text	   *type_text;
	char	   *label = PG_ARGISNULL(1) ? "" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	char	   *matchers = PG_ARGISNULL(3) ? "" : trim_matchers(text_to_cstring(PG_GETARG_TEXT_PP(3)));
	ProfileType type;
	int			error_at;
	Datum	   *values = NULL;
	bool	   *nulls;
	int			nvalues = 0;
	bool		any_value = true;
	const char *value = NULL;	/* the label matcher's value, or regex */
	int			value_len = 0;
	int			nmatchers = 0;	/* of the argument matchers */
	int			nregexes = 0;
	Size		length;
	StringInfoData buf;

	if (PG_ARGISNULL(0) || VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)) == 0)
		PG_RETURN_NULL();
	type_text = PG_GETARG_TEXT_PP(0);
	if (profile_type_parse(VARDATA_ANY(type_text), VARSIZE_ANY_EXHDR(type_text), &type,
						   &error_at) != PROFILE_TYPE_OK)
		profile_type_parse_or_error(text_to_cstring(type_text), &type);
	if (label[0] != '\0')
	{
		label_name_validate(label, "the label of parca_selector");
		if (!PG_ARGISNULL(2))
		{
			ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(2);

			/* more values than separators fit in a regex: refused before they are read */
			if (ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr)) > SELECTOR_MAX_REGEX_BYTES + 1)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("parca_selector matches at most %d label_values", SELECTOR_MAX_REGEX_BYTES + 1),
						 errhint("Select fewer values, or all of them (a NULL value).")));
			deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls, &nvalues);
			if (nvalues == 0)
				PG_RETURN_NULL();
			any_value = false;
			for (int i = 0; i < nvalues; i++)
				any_value |= nulls[i];
		}
	}
	if (!any_value && nvalues == 1)
	{
		value = VARDATA_ANY(DatumGetPointer(values[0]));
		value_len = VARSIZE_ANY_EXHDR(DatumGetPointer(values[0]));
	}
	else if (!any_value)
	{
		value = values_regex(values, nvalues);
		value_len = strlen(value);
	}
	if (matchers[0] != '\0')
	{
		ErrorContextCallback cb;

		cb.callback = matchers_error_context;
		cb.arg = NULL;
		cb.previous = error_context_stack;
		error_context_stack = &cb;
		selector_parse_matchers(matchers, &nmatchers, &nregexes);
		error_context_stack = cb.previous;
	}
	if (nmatchers + !any_value > SELECTOR_MAX_MATCHERS ||
		nregexes + (!any_value && nvalues > 1) > SELECTOR_MAX_REGEX_MATCHERS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("parca_selector would make a selector of more than %d label matchers, or of more than %d regular expressions",
						SELECTOR_MAX_MATCHERS, SELECTOR_MAX_REGEX_MATCHERS)));

	/* the text made in place, its length known first: a long value is copied once */
	length = (Size) VARSIZE_ANY_EXHDR(type_text) + 1 + strlen(label) + 2 +
		(any_value ? 0 : selector_quoted_length(value, value_len)) + 2 + strlen(matchers) + 1;
	if (length > SELECTOR_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("parca_selector would make a selector longer than %d bytes", SELECTOR_MAX_BYTES)));
	initStringInfo(&buf);
	enlargeStringInfo(&buf, VARHDRSZ + length);
	appendStringInfoSpaces(&buf, VARHDRSZ);
	appendBinaryStringInfo(&buf, VARDATA_ANY(type_text), VARSIZE_ANY_EXHDR(type_text));
	appendStringInfoChar(&buf, '{');
	if (!any_value)
	{
		appendStringInfoString(&buf, label);
		appendStringInfoString(&buf, nvalues == 1 ? "=" : "=~");
		selector_append_quoted(&buf, value, value_len);
	}
	if (matchers[0] != '\0')
	{
		if (!any_value)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, matchers);
	}
	appendStringInfoChar(&buf, '}');
	SET_VARSIZE(buf.data, buf.len);
	PG_RETURN_TEXT_P((text *) buf.data);
}
