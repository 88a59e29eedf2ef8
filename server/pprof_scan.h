/*
 * What the server needs to know of a pprof before the database reads it:
 * its sample types (which name the profile, as Pyroscope names it) and
 * its time.  One pass over the encoded message, nothing decoded or
 * allocated; parca_ingest_pprof validates the rest.
 */
#ifndef SERVER_PPROF_SCAN_H
#define SERVER_PPROF_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PPROF_MAX_SAMPLE_TYPES 32
#define PPROF_TYPE_NAME_MAX 64

typedef struct PprofSummary
{
	int			nsample_types;
	char		type[PPROF_MAX_SAMPLE_TYPES][PPROF_TYPE_NAME_MAX];
	char		unit[PPROF_MAX_SAMPLE_TYPES][PPROF_TYPE_NAME_MAX];
	int64_t		time_nanos;
	int64_t		duration_nanos;
} PprofSummary;

/* Reads an uncompressed pprof; false with err if it is not one. */
bool		pprof_scan(const uint8_t *data, size_t len, PprofSummary *s, char *err, size_t errlen);

/*
 * Appends time_nanos (field 9) to an encoded pprof: a later occurrence of
 * a scalar field wins, so the profile's time becomes t.
 */
bool		pprof_append_time(uint8_t **data, size_t *len, int64_t t);

#endif
