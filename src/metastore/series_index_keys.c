/*
 * series_index_keys.c
 *		The keys of the series index: of a label (the GIN index on
 *		parca.series, parca.series_label_keys) and of an hour
 *		(parca.series_hour); series_index.h.
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "ids/ids.h"
#include "metastore/series_index.h"
#include "metastore/series_index_internal.h"

PG_FUNCTION_INFO_V1(parca_series_label_keys);
PG_FUNCTION_INFO_V1(parca_series_hour);

int64
series_index_key(const char *profile_type, const char *name, const char *value)
{
	size_t		tlen = strlen(profile_type);
	size_t		nlen = strlen(name);
	size_t		vlen = strlen(value);
	char	   *buf = palloc(tlen + nlen + vlen + 2);
	int64		key;

	/* names and types hold no NUL: the parts cannot run into each other */
	memcpy(buf, profile_type, tlen);
	buf[tlen] = '\0';
	memcpy(buf + tlen + 1, name, nlen);
	buf[tlen + 1 + nlen] = '\0';
	memcpy(buf + tlen + nlen + 2, value, vlen);
	key = (int64) parca_hash64(buf, tlen + nlen + vlen + 2);
	pfree(buf);
	return key;
}

TimestampTz
series_index_hour(TimestampTz t)
{
	TimestampTz rem;

	if (TIMESTAMP_NOT_FINITE(t))
		return t;
	rem = t % USECS_PER_HOUR;
	if (rem < 0)
		rem += USECS_PER_HOUR;
	return t - rem;
}

Datum
parca_series_hour(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(series_index_hour(PG_GETARG_TIMESTAMPTZ(0)));
}

void
series_index_labels_each(Jsonb *labels, LabelFn fn, void *arg)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;

	if (!JB_ROOT_IS_OBJECT(labels))
		return;
	it = JsonbIteratorInit(&labels->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			name = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE && v.type != jbvNull)
		{
			char	   *value;

			if (v.type == jbvString)
				value = pnstrdup(v.val.string.val, v.val.string.len);
			else
			{
				Jsonb	   *scalar = JsonbValueToJsonb(&v);

				value = JsonbToCString(NULL, &scalar->root, VARSIZE(scalar));
			}
			fn(arg, name, value);
		}
	}
}

typedef struct KeyList
{
	const char *profile_type;
	Datum	   *keys;
	int			n;
	int			cap;
} KeyList;

static void
add_key(void *arg, const char *name, const char *value)
{
	KeyList    *kl = arg;

	if (kl->n == kl->cap)
	{
		kl->cap = kl->cap ? kl->cap * 2 : 16;
		kl->keys = kl->keys ? repalloc(kl->keys, kl->cap * sizeof(Datum)) :
			palloc(kl->cap * sizeof(Datum));
	}
	kl->keys[kl->n++] = Int64GetDatum(series_index_key(kl->profile_type, name, value));
}

/* parca.series_label_keys(profile_type, labels): the GIN index's keys. */
Datum
parca_series_label_keys(PG_FUNCTION_ARGS)
{
	KeyList		kl = {0};

	kl.profile_type = text_to_cstring(PG_GETARG_TEXT_PP(0));
	series_index_labels_each(PG_GETARG_JSONB_P(1), add_key, &kl);
	PG_RETURN_ARRAYTYPE_P(construct_array(kl.keys, kl.n, INT8OID, 8, FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
}
