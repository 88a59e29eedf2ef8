/*
 * profile.h
 *		The profile type: a merged set of stacks with their values.
 *
 * A profile is what parca_merge() returns and what every query function
 * takes: each distinct stack once, with its summed value, plus what the
 * values mean (profile type and period).  A diff profile carries two
 * values per stack: "value" is the base and "value_right" the compared
 * side, the order Grafana's flame graph panel expects.
 *
 * Serialized form (a varlena, all fields read with memcpy):
 *   uint8  version (PROFILE_VERSION)
 *   uint8  flags   (PROFILE_FLAG_DIFF)
 *   uint16 type_len
 *   int64  period
 *   uint32 nsamples
 *   char   profile_type[type_len]        (not NUL-terminated)
 *   then nsamples entries of:
 *     uint32 nframes, int64 value, [int64 value_right if diff],
 *     uint64 frames[nframes]             (location ids, leaf first)
 */
#ifndef PARCA_PROFILE_H
#define PARCA_PROFILE_H

#include "postgres.h"
#include "common/int.h"
#include "fmgr.h"
#include "utils/palloc.h"

#define PROFILE_VERSION		1
#define PROFILE_FLAG_DIFF	0x01

typedef struct ProfileMeta
{
	char	   *profile_type;	/* "name:sample_type:...", "" when unknown */
	int64		period;			/* 0 when unknown */
	bool		is_diff;
} ProfileMeta;

/* One stack of a profile while reading it. */
typedef struct ProfileSample
{
	int			nframes;
	const char *frames;			/* nframes uint64, unaligned: use memcpy */
	int64		value;
	int64		value_right;	/* 0 unless the profile is a diff */
} ProfileSample;

static inline uint64
profile_sample_frame(const ProfileSample *s, int i)
{
	uint64		id;

	memcpy(&id, s->frames + (Size) i * sizeof(uint64), sizeof(uint64));
	return id;
}

/*
 * Building: stacks are merged in a hash table as they are added; adding
 * the same stack again sums its values.  profile_builder_add returns the
 * stack's number: stacks are numbered from 0 in the order first added.
 * profile_builder_add_to adds value to stack number n if its frames are
 * these, with no hash lookup, and returns false (adding nothing) if not:
 * for callers that can guess a stack's number.  profile_builder_add_value
 * adds value to stack number n, for callers that know it.
 * profile_builder_stack gives stack number n's frames (8-byte aligned,
 * valid as long as the builder) and value.
 */
typedef struct ProfileBuilder ProfileBuilder;

extern ProfileBuilder *profile_builder_create(MemoryContext cxt);
extern void profile_builder_set_meta(ProfileBuilder *b, const ProfileMeta *meta);
extern uint32 profile_builder_add(ProfileBuilder *b, const char *frames, int nframes,
								  int64 value, int64 value_right);
extern bool profile_builder_add_to(ProfileBuilder *b, uint32 n, const char *frames, int nframes,
								   int64 value);
extern void profile_builder_add_value(ProfileBuilder *b, uint32 n, int64 value);
extern void profile_builder_add_profile(ProfileBuilder *b, const struct varlena *profile);
extern int64 profile_builder_nstacks(const ProfileBuilder *b);
extern const char *profile_builder_stack(const ProfileBuilder *b, uint32 n, int *nframes,
										 int64 *value);
extern struct varlena *profile_builder_finish(ProfileBuilder *b);

/*
 * Puts the stacks added so far in the order finish() writes them, and
 * keeps it for finish(): the stacks added after are sorted alone and
 * placed into it.  For a caller with time to fill before it finishes (a
 * leader whose workers are exiting).
 */
extern void profile_builder_sort(ProfileBuilder *b);

/* Reading a serialized profile (detoasted by the caller). */
typedef struct ProfileReader
{
	const char *pos;
	const char *end;
	uint32		remaining;
	ProfileMeta meta;
	bool		bad_input;		/* damage is bad input, not corruption */
} ProfileReader;

/* Damage found while reading is data corruption (XX001). */
extern void profile_reader_init(ProfileReader *r, const struct varlena *profile);
extern bool profile_reader_next(ProfileReader *r, ProfileSample *sample);

/*
 * *sum += value; a sum that leaves 64 bits is an error (every total and
 * inclusive value of a profile is such a sum), never a silent wrap.
 * Inline: merges call it once per row.
 */
extern void profile_value_overflow(void) pg_attribute_noreturn();

static inline void
profile_value_add(int64 *sum, int64 value)
{
	if (unlikely(pg_add_s64_overflow(*sum, value, sum)))
		profile_value_overflow();
}

#define PG_GETARG_PROFILE_P(n) ((struct varlena *) PG_DETOAST_DATUM(PG_GETARG_DATUM(n)))

#endif							/* PARCA_PROFILE_H */
