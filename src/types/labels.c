/*
 * labels.c
 *		Label sets.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "types/labels.h"
#include "types/valid_text.h"

bool
label_name_is_valid(const char *name)
{
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
		  name[0] == '_'))
		return false;
	for (const char *p = name + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

void
label_name_validate(const char *name, const char *what)
{
	if (!label_name_is_valid(name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid label name %s in %s", message_quote_cstring(name), what),
				 errdetail("Label names start with a letter or underscore and contain only letters, digits and underscores.")));
}

List *
label_names_from_array(ArrayType *names, int max, const char *what)
{
	List	   *result = NIL;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	if (ArrayGetNItems(ARR_NDIM(names), ARR_DIMS(names)) > max)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s names more than %d labels", what, max)));
	deconstruct_array(names, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			continue;
		if (VARSIZE_ANY_EXHDR(DatumGetPointer(elems[i])) > LABEL_NAME_QUERY_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("a label name in %s is longer than %d bytes", what, LABEL_NAME_QUERY_MAX)));
		result = lappend(result, TextDatumGetCString(elems[i]));
		label_name_validate(llast(result), what);
	}
	return result;
}

char *
label_name_sanitize(const char *name)
{
	size_t		len = strlen(name);
	char	   *out = palloc(len + 2);
	char	   *o = out;

	if (len == 0)
	{
		out[0] = '\0';
		return out;
	}
	if (name[0] >= '0' && name[0] <= '9')
		*o++ = '_';
	for (const char *p = name; *p; p++)
	{
		bool		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			(*p >= '0' && *p <= '9') || *p == '_';

		*o++ = ok ? *p : '_';
	}
	*o = '\0';
	return out;
}

LabelPair *
labels_from_jsonb(Jsonb *labels, int *npairs, const char *what)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	LabelPair  *pairs;
	int			n = 0;
	char	   *name = NULL;

	if (!JB_ROOT_IS_OBJECT(labels))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a JSON object of label names to string values", what)));
	if (VARSIZE(labels) > LABELS_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is %zu bytes of jsonb, more than the %d a label set may take", what,
						(Size) VARSIZE(labels), LABELS_MAX_BYTES)));
	pairs = palloc(Max(JB_ROOT_COUNT(labels), 1) * sizeof(LabelPair));
	it = JsonbIteratorInit(&labels->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			name = pnstrdup(v.val.string.val, v.val.string.len);
			label_name_validate(name, what);
		}
		else if (tok == WJB_VALUE)
		{
			if (v.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("label %s in %s must have a string value", message_quote_cstring(name), what)));
			pairs[n].name = name;
			pairs[n].value = pnstrdup(v.val.string.val, v.val.string.len);
			n++;
		}
	}
	*npairs = n;
	return pairs;
}

Jsonb *
labels_to_jsonb(LabelPair *pairs, int npairs)
{
	JsonbParseState *state = NULL;
	JsonbValue *result;

	/*
	 * jsonb keeps the last of duplicate keys, so push in reverse for the
	 * earlier pair to win.
	 */
	pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	for (int i = npairs - 1; i >= 0; i--)
	{
		JsonbValue	k,
					v;

		k.type = jbvString;
		k.val.string.val = (char *) pairs[i].name;
		k.val.string.len = strlen(pairs[i].name);
		v.type = jbvString;
		v.val.string.val = (char *) pairs[i].value;
		v.val.string.len = strlen(pairs[i].value);
		pushJsonbValue(&state, WJB_KEY, &k);
		pushJsonbValue(&state, WJB_VALUE, &v);
	}
	result = pushJsonbValue(&state, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(result);
}
