/*
 * diff.c
 *		parca_diff(base, compared, absolute): two profiles side by side.
 *
 * The result is a diff profile: every stack of either side once, with
 * the base's value as "value" and the compared side's as "value_right".
 * By default the comparison is relative, as in Parca: the base is scaled
 * to the compared side's total, so that a stack's share, not the amount
 * of data in each range, is compared.  absolute => true keeps the base's
 * own values (what `go tool pprof -diff_base` shows).
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"

#include "types/profile.h"
#include "types/valid_text.h"

static int64
profile_total(const struct varlena *profile, ProfileMeta *meta, uint32 *nstacks)
{
	ProfileReader r;
	ProfileSample s;
	int64		total = 0;

	profile_reader_init(&r, profile);
	*meta = r.meta;
	*nstacks = r.remaining;
	while (profile_reader_next(&r, &s))
		profile_value_add(&total, s.value);
	return total;
}

/* A base value scaled to the compared side, rounded; out of range is an error. */
static int64
scaled_value(int64 value, double scale)
{
	double		v = round((double) value * scale);

	/* (double) PG_INT64_MAX rounds up to 2^63, which is already out of range */
	if (!(v >= (double) PG_INT64_MIN && v < (double) PG_INT64_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("profile value out of range: a scaled base value exceeds 64 bits")));
	return (int64) v;
}

PG_FUNCTION_INFO_V1(parca_diff);

Datum
parca_diff(PG_FUNCTION_ARGS)
{
	struct varlena *base = PG_GETARG_PROFILE_P(0);
	struct varlena *compared = PG_GETARG_PROFILE_P(1);
	bool		absolute = PG_GETARG_BOOL(2);
	ProfileMeta base_meta;
	ProfileMeta compared_meta;
	uint32		base_stacks;
	uint32		compared_stacks;
	int64		base_total = profile_total(base, &base_meta, &base_stacks);
	int64		compared_total = profile_total(compared, &compared_meta, &compared_stacks);
	double		scale = 1.0;
	ProfileBuilder *b;
	ProfileReader r;
	ProfileSample s;
	ProfileMeta meta;

	if (base_meta.is_diff || compared_meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parca_diff takes two plain profiles, not a diff")));
	/* an empty side (a range without samples) compares with anything */
	if (base_stacks > 0 && compared_stacks > 0 &&
		base_meta.profile_type[0] && compared_meta.profile_type[0] &&
		strcmp(base_meta.profile_type, compared_meta.profile_type) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot compare a profile of type %s with one of type %s",
						message_quote_cstring(base_meta.profile_type),
						message_quote_cstring(compared_meta.profile_type))));
	if (!absolute && base_total != 0)
		scale = (double) compared_total / (double) base_total;

	b = profile_builder_create(CurrentMemoryContext);
	profile_reader_init(&r, compared_stacks > 0 || base_stacks == 0 ? compared : base);
	meta = r.meta;
	profile_reader_init(&r, compared);
	meta.is_diff = true;
	profile_builder_set_meta(b, &meta);
	while (profile_reader_next(&r, &s))
		profile_builder_add(b, s.frames, s.nframes, 0, s.value);
	profile_reader_init(&r, base);
	while (profile_reader_next(&r, &s))
		profile_builder_add(b, s.frames, s.nframes,
							absolute ? s.value : scaled_value(s.value, scale), 0);
	PG_RETURN_POINTER(profile_builder_finish(b));
}
