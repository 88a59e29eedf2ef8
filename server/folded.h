/*
 * Folded stacks, the text formats of Pyroscope's /ingest: "groups"
 * (`main;work;spin 12`, a stack and its count a line, the default) and
 * "lines" (one stack a line, each line one sample).  Frames are ';'
 * separated, root first.
 */
#ifndef SERVER_FOLDED_H
#define SERVER_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FOLDED_MAX_DEPTH 4096	/* frames of a stack, as parca_ingest_pprof allows */

typedef struct FoldedMeta
{
	const char *sample_type;
	const char *sample_unit;
	const char *period_type;	/* NULL: none */
	const char *period_unit;
	int64_t		period;			/* each count is multiplied by it (when > 0) */
	int64_t		time_nanos;
	int64_t		duration_nanos;
} FoldedMeta;

/*
 * The text as a pprof (*out malloc'd; NULL when no line has a count);
 * false with err on bad input.
 */
bool		folded_to_pprof(const uint8_t *text, size_t len, bool one_per_line, const FoldedMeta *meta,
							size_t memory_limit, uint8_t **out, size_t *out_len, char *err, size_t errlen);

#endif
