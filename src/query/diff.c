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

#include "profile.h"

static int64
profile_total(const struct varlena *profile, ProfileMeta *meta)
{
	ProfileReader r;
	ProfileSample s;
	int64		total = 0;

	profile_reader_init(&r, profile);
	*meta = r.meta;
	while (profile_reader_next(&r, &s))
		total += s.value;
	return total;
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
	int64		base_total = profile_total(base, &base_meta);
	int64		compared_total = profile_total(compared, &compared_meta);
	double		scale = 1.0;
	ProfileBuilder *b;
	ProfileReader r;
	ProfileSample s;
	ProfileMeta meta;

	if (base_meta.is_diff || compared_meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parca_diff takes two plain profiles, not a diff")));
	if (base_meta.profile_type[0] && compared_meta.profile_type[0] &&
		strcmp(base_meta.profile_type, compared_meta.profile_type) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot compare a profile of type \"%s\" with one of type \"%s\"",
						base_meta.profile_type, compared_meta.profile_type)));
	if (!absolute && base_total != 0)
		scale = (double) compared_total / (double) base_total;

	b = profile_builder_create(CurrentMemoryContext);
	profile_reader_init(&r, compared);
	meta = r.meta;
	meta.is_diff = true;
	profile_builder_set_meta(b, &meta);
	while (profile_reader_next(&r, &s))
		profile_builder_add(b, s.frames, s.nframes, 0, s.value);
	profile_reader_init(&r, base);
	while (profile_reader_next(&r, &s))
		profile_builder_add(b, s.frames, s.nframes,
							absolute ? s.value : (int64) llround(s.value * scale), 0);
	PG_RETURN_POINTER(profile_builder_finish(b));
}
