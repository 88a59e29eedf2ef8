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
 * Count a sample's value (1 on-CPU, nanoseconds off-CPU) in its series:
 * the sample's kind (SAMPLE_ON_CPU, SAMPLE_OFF_CPU) and label set, a JSON
 * object; title names the series in folded output ("comm (pid)").  frames
 * are location ids, leaf first.
 */
extern void agg_add(int kind, const char *labels, const char *title,
					const uint64_t *frames, int nframes, int64_t value);

/*
 * A stack's last frame may be AGG_UNDECIDED: whether it ends there or is
 * truncated is known only once its frames are symbolized.  agg_settle()
 * asks decide() for each such stack (with its other frames and how many
 * samples it counted)
 * what to put in its place (0: nothing) and merges the stacks that become equal.
 */
#define AGG_UNDECIDED UINT64_C(0)

extern void agg_settle(uint64_t (*decide) (const uint64_t *frames, int nframes,
											  int64_t samples));

/*
 * Print the counted stacks in folded form ("title;root;...;leaf count"),
 * most frequent first; off-CPU ones ("title [off-CPU];...;leaf ns") after.
 */
extern void agg_print_folded(FILE *out);

/*
 * Turn what was counted into a batch and start over; NULL if nothing was
 * counted.
 */
extern Batch *agg_take(uint64_t batch_id, uint64_t time_ns, uint64_t duration_ns);

#endif							/* AGENT_AGGREGATE_H */
