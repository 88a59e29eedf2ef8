/*
 * profiler.h
 *		Turns each sample from the BPF program into a stack of location
 *		ids and counts it under its label set.
 */
#ifndef AGENT_PROFILER_H
#define AGENT_PROFILER_H

#include <stdbool.h>
#include <stdint.h>

#include "relabel.h"
#include "sampler.h"

/* Counts of what happened to the samples, since the start. */
typedef struct ProfilerStats
{
	uint64_t	samples;		/* on-CPU and off-CPU */
	uint64_t	off_cpu;		/* off-CPU */
	uint64_t	kernel_only;	/* kernel threads, idle */
	uint64_t	complete;		/* user stack walked to its bottom */
	uint64_t	truncated;		/* user stack cut (depth, stack copy) */
	uint64_t	failed;			/* user stack unwinding failed */
	uint64_t	dropped;		/* dropped by the --relabel rules */
	uint64_t	python;			/* with Python frames (CPython processes) */
} ProfilerStats;

/*
 * Set the labels every series carries (node, kernel_release, --label
 * ones); the set's strings must outlive the agent's run.  With upload,
 * the debug information of the files met is offered to the writer
 * (--upload-debuginfo).
 */
extern void profiler_init(const LabelSet *common_labels, bool upload);

/* The sampler's callback. */
extern void profiler_on_sample(Sampler *sampler, const struct parca_sample *sample,
							   void *arg);

/* Symbolize the locations registered since the last call. */
extern void profiler_resolve(void);

extern const ProfilerStats *profiler_stats(void);

#endif							/* AGENT_PROFILER_H */
