/*
 * profile_builder_internal.h
 *		What the profile builder's files share (profile_builder.c: the
 *		entities, interned within a budget; profile_builder_encode.c: the
 *		profile encoded): the builder itself.
 */
#ifndef SERVER_PROFILE_BUILDER_INTERNAL_H
#define SERVER_PROFILE_BUILDER_INTERNAL_H

#include "profile_builder.h"

/*
 * Entities live in arrays in the order added (their id is the index + 1) and
 * are found through an open-addressing table of slots, each the entity's
 * 32-bit hash and its index + 1 (0: empty), kept at most half full.
 */
typedef struct Table
{
	uint64_t   *slots;
	size_t		cap;			/* a power of two, or 0 */
	size_t		n;
} Table;

typedef struct PbString
{
	char	   *s;
	size_t		len;
} PbString;

typedef struct PbFunction
{
	int64_t		name;
	int64_t		system_name;
	int64_t		filename;
	int64_t		start_line;
} PbFunction;

typedef struct PbMapping
{
	uint64_t	memory_start;
	uint64_t	memory_limit;
	uint64_t	file_offset;
	int64_t		filename;
	int64_t		build_id;
} PbMapping;

typedef struct PbLocation
{
	uint64_t	mapping_id;
	uint64_t	address;
	size_t		first_line;		/* in lines */
	size_t		nlines;
} PbLocation;

typedef struct PbLabelIdx
{
	int64_t		key;
	int64_t		str;
	int64_t		num;
	int64_t		num_unit;
} PbLabelIdx;

typedef struct PbSample
{
	size_t		first_loc;		/* in sample_locs */
	size_t		nlocs;
	size_t		first_label;	/* in sample_labels */
	size_t		nlabels;
} PbSample;

typedef struct ValueTypeIdx
{
	int64_t		type;
	int64_t		unit;
} ValueTypeIdx;

struct ProfileBuilder
{
	AllocBudget own_budget;
	AllocBudget *budget;
	size_t		limit;			/* for messages */
	bool		failed;
	char		err[256];

	PbString   *strings;
	size_t		nstrings, cap_strings;
	Table		string_tab;

	PbFunction *functions;
	size_t		nfunctions, cap_functions;
	Table		function_tab;

	PbMapping  *mappings;
	size_t		nmappings, cap_mappings;
	Table		mapping_tab;

	PbLocation *locations;
	size_t		nlocations, cap_locations;
	Table		location_tab;
	PbLine	   *lines;
	size_t		nlines, cap_lines;

	PbSample   *samples;
	size_t		nsamples, cap_samples;
	Table		sample_tab;
	uint64_t   *sample_locs;
	size_t		nsample_locs, cap_sample_locs;
	PbLabelIdx *sample_labels;
	size_t		nsample_labels, cap_sample_labels;
	int64_t    *values;			/* nsample_types per sample */
	size_t		cap_values;

	ValueTypeIdx sample_types[PB_MAX_SAMPLE_TYPES];
	size_t		nsample_types;
	bool		has_period_type;
	ValueTypeIdx period_type;
	int64_t		period;
	int64_t		time_nanos;
	int64_t		duration_nanos;
};

/* Fails b with a message (printf's), unless it failed already. */
extern void pb_fail(ProfileBuilder *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));

#endif							/* SERVER_PROFILE_BUILDER_INTERNAL_H */
