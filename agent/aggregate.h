/*
 * aggregate.h
 *		Counting samples per (label set, stack) over a flush interval.
 */
#ifndef AGENT_AGGREGATE_H
#define AGENT_AGGREGATE_H

#include <stdint.h>
#include <stdio.h>

#include "batch.h"

/*
 * Count one sample.  labels is the series' label set as a JSON object;
 * title names it in folded output ("comm (pid)").  frames are location
 * ids, leaf first.
 */
extern void agg_add(const char *labels, const char *title,
					const uint64_t *frames, int nframes);

/*
 * A stack's last frame may be AGG_UNDECIDED: whether it ends there or is
 * truncated is known only once its frames are symbolized.  agg_settle()
 * asks decide() for each such stack (with its other frames and its count)
 * what to put in its place (0: nothing) and merges the stacks that become equal.
 */
#define AGG_UNDECIDED UINT64_C(0)

extern void agg_settle(uint64_t (*decide) (const uint64_t *frames, int nframes,
											  int64_t count));

/*
 * Print the counted stacks in folded form ("title;root;...;leaf count"),
 * most frequent first.
 */
extern void agg_print_folded(FILE *out);

/*
 * Turn what was counted into a batch and start over; NULL if nothing was
 * counted.
 */
extern Batch *agg_take(uint64_t batch_id, uint64_t time_ns, uint64_t duration_ns);

#endif							/* AGENT_AGGREGATE_H */
