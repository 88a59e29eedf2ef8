/*
 * A pprof profile built in memory and encoded: strings, functions, mappings
 * and locations deduplicated, samples with the same stack and labels merged
 * (their values added).  Every allocation is charged to a budget; past it
 * every call fails and pb_error() says so.  Errors are sticky: after the
 * first, calls do nothing and return failure.  Plain C, no PostgreSQL.
 */
#ifndef SERVER_PROFILE_BUILDER_H
#define SERVER_PROFILE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_budget.h"

#define PB_MAX_SAMPLE_TYPES 16

typedef struct ProfileBuilder ProfileBuilder;

/* a line of a location: innermost first when a location has several */
typedef struct PbLine
{
	uint64_t	function_id;	/* from pb_function */
	int64_t		line;
} PbLine;

/* a sample label: a string label when str is not NULL, else numeric */
typedef struct PbLabel
{
	const char *key;
	const char *str;
	int64_t		num;
	const char *num_unit;		/* numeric labels: NULL or "" for none */
} PbLabel;

/* a 64-bit mixing hash (murmur3's finalizer), for the converters' tables too */
static inline uint64_t
pb_hash64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

/* a builder with a budget of its own of memory_limit bytes; NULL if out of memory */
ProfileBuilder *pb_create(size_t memory_limit);

/* a builder charging the caller's budget, which must outlive it */
ProfileBuilder *pb_create_in(AllocBudget *budget);

/* each call adds a sample type: every sample has one value per type */
void		pb_sample_type(ProfileBuilder *b, const char *type, const char *unit);
void		pb_period(ProfileBuilder *b, const char *type, const char *unit, int64_t period);
void		pb_time(ProfileBuilder *b, int64_t time_nanos, int64_t duration_nanos);

/* ids (from 1), deduplicated by content; 0 on error */
uint64_t	pb_function(ProfileBuilder *b, const char *name, const char *system_name,
						const char *filename, int64_t start_line);
uint64_t	pb_mapping(ProfileBuilder *b, uint64_t memory_start, uint64_t memory_limit,
					   uint64_t file_offset, const char *filename, const char *build_id);
uint64_t	pb_location(ProfileBuilder *b, uint64_t mapping_id, uint64_t address,
						const PbLine *lines, size_t nlines);

/*
 * A frame of one function (its name also its system name) at a line: a
 * location id, deduplicated.  mapping_file "" or NULL: no mapping.
 */
uint64_t	pb_frame(ProfileBuilder *b, const char *function, const char *filename, int64_t line,
					 const char *mapping_file);

/*
 * A sample: locs leaf first, values one per sample type.  A sample with the
 * same stack and labels (in the same order) as an earlier one is added to it.
 */
bool		pb_sample(ProfileBuilder *b, const uint64_t *locs, size_t nlocs, const int64_t *values,
					  const PbLabel *labels, size_t nlabels);

/* number of distinct samples so far */
size_t		pb_sample_count(const ProfileBuilder *b);

/*
 * The encoded (uncompressed) pprof, malloc'd (free() it); its size is charged
 * to the budget for good.  False with pb_error() set.
 */
bool		pb_encode(ProfileBuilder *b, uint8_t **out, size_t *len);

/* NULL is allowed */
void		pb_destroy(ProfileBuilder *b);

/* the first error, or NULL */
const char *pb_error(const ProfileBuilder *b);

#endif
