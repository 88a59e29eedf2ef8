/*
 * sampler.h
 *		Loads the BPF program, opens one cpu-clock perf event per online
 *		CPU and hands every sample the program sends to a callback.
 */
#ifndef AGENT_SAMPLER_H
#define AGENT_SAMPLER_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

typedef struct Sampler Sampler;

/* sample is followed by sample->stack_len bytes of user stack. */
typedef void (*SampleHandler) (const struct parca_sample *sample, void *arg);

/*
 * Start sampling every online CPU at frequency Hz; copy_stack: send a copy
 * of the top of the user stack with each sample, for CFI unwinding.  On failure returns NULL
 * and writes a message saying why (no BTF, no privileges, ...) into err.
 */
extern Sampler *sampler_start(int frequency, bool report_idle, bool copy_stack,
							  SampleHandler handler, void *arg,
							  char *err, size_t errlen);

/* Wait up to timeout_ms for samples, then deliver all that are queued. */
extern void sampler_poll(Sampler *sampler, int timeout_ms);

/* The BPF program's counters, summed over CPUs. */
typedef struct SamplerCounters
{
	uint64_t	samples;
	uint64_t	lost;
	uint64_t	idle;
} SamplerCounters;

extern void sampler_counters(Sampler *sampler, SamplerCounters *out);

extern void sampler_stop(Sampler *sampler);

#endif							/* AGENT_SAMPLER_H */
