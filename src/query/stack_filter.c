/*
 * stack_filter.c
 *		Stack filters: parca_query's keep_/drop_ arguments and
 *		parca_filter(), Parca's FilterCriteria on a profile.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "types/profile.h"
#include "query/stack_filter.h"
#include "query/symbols.h"
#include "types/valid_text.h"

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Whether a sample has a frame in the sorted set (sorted as int64). */
static bool
sample_has_any(const ProfileSample *s, const uint64 *set, int n)
{
	for (int i = 0; i < s->nframes; i++)
	{
		int64		id = (int64) profile_sample_frame(s, i);

		if (bsearch(&id, set, n, sizeof(int64), cmp_int64))
			return true;
	}
	return false;
}

struct varlena *
stack_filter_apply(struct varlena *profile, StackFilter *filters, int nfilters,
				   MemoryContext cxt)
{
	int			nids;
	uint64	   *ids = profile_location_ids(profile, &nids);
	ProfileBuilder *b;
	ProfileReader r;
	ProfileSample s;

	/* sorted as bigint, which is what bsearch uses */
	for (int f = 0; f < nfilters; f++)
		filters[f].set = metastore_locations_matching(ids, nids, filters[f].field, filters[f].match,
													  filters[f].text, &filters[f].n);

	MemoryContextSwitchTo(cxt);
	b = profile_builder_create(cxt);
	profile_reader_init(&r, profile);
	profile_builder_set_meta(b, &r.meta);
	while (profile_reader_next(&r, &s))
	{
		bool		pass = true;

		CHECK_FOR_INTERRUPTS();
		for (int f = 0; f < nfilters && pass; f++)
			pass = sample_has_any(&s, filters[f].set, filters[f].n) == filters[f].keep;
		if (pass)
			profile_builder_add(b, s.frames, s.nframes, s.value, s.value_right);
	}
	return profile_builder_finish(b);
}

static void
bad_filter(int i, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("stack filter %d: %s", i + 1, why),
			 errhint("Filters are a JSON array of objects {\"field\": function, file, binary or address, "
					 "\"match\": equal, not_equal, contains, not_contains, starts_with or not_starts_with, "
					 "\"value\": text}.")));
}

/* The string member key of filter object c (number i), or an error. */
static char *
filter_member(JsonbContainer *c, const char *key, int i)
{
	JsonbValue *v = getKeyJsonValueFromContainer(c, key, strlen(key), NULL);

	if (v == NULL || v->type != jbvString)
		bad_filter(i, psprintf("\"%s\" must be a string", key));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* One filter object of parca_filter's argument. */
static void
parse_filter(JsonbValue *elem, int i, StackFilter *f)
{
	JsonbContainer *c;
	char	   *field;
	char	   *match;
	static const char *const matches[] = {"equal", "contains", "starts_with"};
	bool		found = false;

	if (elem->type != jbvBinary || !JsonContainerIsObject(elem->val.binary.data))
		bad_filter(i, "not an object");
	c = elem->val.binary.data;
	if (JsonContainerSize(c) != 3)
		bad_filter(i, "an object has exactly the members field, match and value");
	field = filter_member(c, "field", i);
	match = filter_member(c, "match", i);
	f->text = filter_member(c, "value", i);

	if (strcmp(field, "function") == 0)
		f->field = LOCATION_FUNCTION;
	else if (strcmp(field, "file") == 0)
		f->field = LOCATION_FILE;
	else if (strcmp(field, "binary") == 0)
		f->field = LOCATION_BINARY;
	else if (strcmp(field, "address") == 0)
		f->field = LOCATION_ADDRESS;
	else
		bad_filter(i, psprintf("unknown field %s", message_quote_cstring(field)));

	f->keep = strncmp(match, "not_", 4) != 0;
	for (int m = 0; m < lengthof(matches); m++)
		if (strcmp(f->keep ? match : match + 4, matches[m]) == 0)
		{
			f->match = m == 0 ? NAME_EQUAL : m == 1 ? NAME_CONTAINS : NAME_STARTS_WITH;
			found = true;
		}
	if (!found)
		bad_filter(i, psprintf("unknown match %s", message_quote_cstring(match)));

	if (f->field == LOCATION_ADDRESS)
	{
		char	   *end;
		uint64		address;

		if (f->match != NAME_EQUAL)
			bad_filter(i, "an address is matched with equal or not_equal");
		errno = 0;
		address = strtoull(f->text, &end, 0);
		if (errno != 0 || end == f->text || *end != '\0' || f->text[0] == '-')
			bad_filter(i, psprintf("%s is not an address (decimal, or hexadecimal with 0x)",
								   message_quote_cstring(f->text)));
		/* stored as bigint */
		f->text = psprintf(INT64_FORMAT, (int64) address);
	}
}

PG_FUNCTION_INFO_V1(parca_filter);

/*
 * parca_filter(profile, filters jsonb) RETURNS profile
 * The stacks that pass every filter: a positive match keeps the stacks
 * with a frame that matches, its not_ form the stacks without one.
 */
Datum
parca_filter(PG_FUNCTION_ARGS)
{
	MemoryContext cxt = CurrentMemoryContext;
	struct varlena *profile = PG_GETARG_PROFILE_P(0);
	Jsonb	   *jb = PG_GETARG_JSONB_P(1);
	int			n;
	StackFilter *filters;
	struct varlena *result;

	if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("stack filters must be a JSON array")));
	n = JB_ROOT_COUNT(jb);
	if (n == 0)
		PG_RETURN_POINTER(profile);
	if (n > STACK_FILTER_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("at most %d stack filters apply at once", STACK_FILTER_MAX)));
	filters = palloc0(sizeof(StackFilter) * n);
	for (int i = 0; i < n; i++)
		parse_filter(getIthJsonbValueFromContainer(&jb->root, i), i, &filters[i]);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	result = stack_filter_apply(profile, filters, n, cxt);
	SPI_finish();
	PG_RETURN_POINTER(result);
}
