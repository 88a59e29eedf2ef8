/*
 * merge.c
 *		parca_merge(stacktrace, bigint): the aggregate that merges samples
 *		into a profile.
 *
 * The transition state is a ProfileBuilder in the aggregate's memory
 * context.  For parallel aggregation partial states travel as serialized
 * profiles (the same format as the profile type) and are combined by
 * merging one builder into another.
 *
 * parca.merge_profiles(profile) merges profiles with the same state: the
 * coordinator's half of a merge that Citus distributes (docs/scale-out.md),
 * each worker sending merged profiles, not rows.
 */
#include "postgres.h"

#include "fmgr.h"

#include "types/profile.h"
#include "types/stacktrace.h"

PG_FUNCTION_INFO_V1(parca_merge_transfn);
PG_FUNCTION_INFO_V1(parca_merge_combinefn);
PG_FUNCTION_INFO_V1(parca_merge_serialfn);
PG_FUNCTION_INFO_V1(parca_merge_deserialfn);
PG_FUNCTION_INFO_V1(parca_merge_finalfn);
PG_FUNCTION_INFO_V1(parca_merge_profiles_transfn);

static MemoryContext
aggregate_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s called in non-aggregate context", fname)));
	return aggcxt;
}

Datum
parca_merge_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = aggregate_context(fcinfo, "parca_merge_transfn");
	ProfileBuilder *b = PG_ARGISNULL(0) ? NULL : (ProfileBuilder *) PG_GETARG_POINTER(0);
	struct varlena *stack;

	if (b == NULL)
		b = profile_builder_create(aggcxt);
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		PG_RETURN_POINTER(b);
	stack = PG_GETARG_STACKTRACE_P(1);
	profile_builder_add(b, stacktrace_frames_ptr(stack), stacktrace_nframes(stack),
						PG_GETARG_INT64(2), 0);
	PG_RETURN_POINTER(b);
}

Datum
parca_merge_profiles_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = aggregate_context(fcinfo, "parca_merge_profiles_transfn");
	ProfileBuilder *b = PG_ARGISNULL(0) ? NULL : (ProfileBuilder *) PG_GETARG_POINTER(0);

	if (b == NULL)
		b = profile_builder_create(aggcxt);
	/* (detoasted in the per-row context: the builder keeps its own copies) */
	if (!PG_ARGISNULL(1))
		profile_builder_add_profile(b, PG_GETARG_PROFILE_P(1));
	PG_RETURN_POINTER(b);
}

Datum
parca_merge_combinefn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = aggregate_context(fcinfo, "parca_merge_combinefn");
	ProfileBuilder *a = PG_ARGISNULL(0) ? NULL : (ProfileBuilder *) PG_GETARG_POINTER(0);
	ProfileBuilder *b = PG_ARGISNULL(1) ? NULL : (ProfileBuilder *) PG_GETARG_POINTER(1);
	MemoryContext old;

	if (b == NULL)
		PG_RETURN_POINTER(a);
	if (a == NULL)
		a = profile_builder_create(aggcxt);
	/* Serializing b is the simplest correct way to walk its entries. */
	old = MemoryContextSwitchTo(aggcxt);
	profile_builder_add_profile(a, profile_builder_finish(b));
	MemoryContextSwitchTo(old);
	PG_RETURN_POINTER(a);
}

Datum
parca_merge_serialfn(PG_FUNCTION_ARGS)
{
	ProfileBuilder *b = (ProfileBuilder *) PG_GETARG_POINTER(0);

	PG_RETURN_POINTER(profile_builder_finish(b));
}

Datum
parca_merge_deserialfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = aggregate_context(fcinfo, "parca_merge_deserialfn");
	ProfileBuilder *b = profile_builder_create(aggcxt);

	profile_builder_add_profile(b, PG_GETARG_PROFILE_P(0));
	PG_RETURN_POINTER(b);
}

Datum
parca_merge_finalfn(PG_FUNCTION_ARGS)
{
	ProfileBuilder *b;

	aggregate_context(fcinfo, "parca_merge_finalfn");
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	b = (ProfileBuilder *) PG_GETARG_POINTER(0);
	PG_RETURN_POINTER(profile_builder_finish(b));
}
