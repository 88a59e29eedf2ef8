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

/*
 * sample is followed by sample->stack_len bytes of user stack, then
 * sample->go_stack_len bytes of a goroutine's.
 */
typedef void (*SampleHandler) (Sampler *sampler, const struct parca_sample *sample,
							   void *arg);

typedef struct SamplerConfig
{
	int			frequency;		/* on-CPU samples per second per CPU */
	bool		report_idle;
	bool		copy_stack;		/* send the top of the user stack, for CFI unwinding */
	bool		off_cpu;		/* sample waits too */
	uint64_t	off_cpu_min_ns; /* shorter waits are not sampled */
	double		off_cpu_rate;	/* bound of off-CPU samples per second per CPU */
} SamplerConfig;

/*
 * Start sampling every online CPU.  On failure returns NULL and writes a
 * message saying why (no BTF, no privileges, ...) into err.
 */
extern Sampler *sampler_start(const SamplerConfig *config, SampleHandler handler,
							  void *arg, char *err, size_t errlen);

/*
 * Wait up to timeout_ms for samples, then deliver all that are queued;
 * with off-CPU sampling, adjust the probability that a wait is timed.
 */
extern void sampler_poll(Sampler *sampler, int timeout_ms);

/* The BPF program's counters, summed over CPUs. */
typedef struct SamplerCounters
{
	uint64_t	samples;		/* on-CPU samples sent */
	uint64_t	lost;
	uint64_t	idle;
	uint64_t	off_cpu_waits;	/* waits timed that were long enough */
	uint64_t	off_cpu;		/* off-CPU samples sent */
	double		off_cpu_probability;	/* that a wait is timed, now */
} SamplerCounters;

extern void sampler_counters(Sampler *sampler, SamplerCounters *out);

/*
 * Tell the BPF program that pid is a Go process (started at start_time):
 * where its g is in thread-local storage and m.curg in its m.  Its samples
 * on the scheduler's stack then carry the goroutine's (see sample.h).
 */
extern void sampler_add_go_process(Sampler *sampler, uint32_t pid, uint64_t start_time,
								   int64_t tls_g, uint64_t m_curg);

/*
 * Tell the BPF program that pid is a CPython process (py: where its
 * _PyRuntime is and the structure offsets of its version); its samples
 * then carry the sampled thread's Python frames (see sample.h).  False if
 * the kernel cannot (no bpf_loop: before Linux 5.17).
 */
extern bool sampler_add_python_process(Sampler *sampler, uint32_t pid,
									   const struct python_process *py);

/*
 * Tell the BPF program that pid is a PostgreSQL backend whose layout was
 * checked (pg); its samples then carry its backend status (see sample.h).
 */
extern void sampler_add_postgres_process(Sampler *sampler, uint32_t pid,
										 const struct postgres_process *pg);

extern void sampler_stop(Sampler *sampler);

#endif							/* AGENT_SAMPLER_H */
