/*
 * sampler.c
 *		The BPF side of the agent: load, attach, receive; see sampler.h.
 */
#include "sampler.h"

#include <errno.h>
#include <math.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"
#include "util.h"

struct Sampler
{
	struct profile_bpf *skel;
	struct ring_buffer *ring;
	int			ncpus;
	int		   *fds;			/* perf event per CPU, -1 if offline */
	struct bpf_link **links;
	struct bpf_link *on_switch;	/* --off-cpu */
	struct bpf_link *on_sys_exit;
	bool		python;			/* the programs that walk CPython frames are loaded */
	SampleHandler handler;
	void	   *arg;

	/* Off-CPU sampling's rate bound (see adjust_off_cpu). */
	bool		off_cpu;
	double		off_cpu_target;	/* samples per second, all CPUs */
	double		waits_per_second;	/* long enough waits, smoothed estimate */
	uint64_t	last_waits;
	uint64_t	last_adjust_ns;
};

/* Off-CPU: the lowest probability that a wait is timed, and the first. */
#define OFF_CPU_MIN_PROBABILITY (1.0 / 65536)
#define OFF_CPU_START 64

/* libbpf's own messages (the verifier's log among them) with --verbose. */
static int
libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !log_enabled(LOG_DEBUG))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int
on_ring_record(void *ctx, void *data, size_t size)
{
	Sampler    *s = ctx;
	const struct parca_sample *sample = data;

	if (size >= sizeof(struct parca_sample) &&
		size >= sizeof(struct parca_sample) + (size_t) sample->stack_len + sample->go_stack_len)
		s->handler(s, sample, s->arg);
	return 0;
}

/* Which CPUs are online: a flag per possible CPU, from "0-3,6,8-9". */
static bool *
read_online_cpus(int ncpus)
{
	char	   *text = read_file("/sys/devices/system/cpu/online", NULL);
	bool	   *online;
	char	   *p;

	if (text == NULL)
		return NULL;
	online = xcalloc(ncpus, sizeof(bool));
	p = text;
	while (*p >= '0' && *p <= '9')
	{
		long		first = strtol(p, &p, 10);
		long		last = first;

		if (*p == '-')
			last = strtol(p + 1, &p, 10);
		for (long c = first; c <= last && c < ncpus; c++)
			online[c] = true;
		if (*p == ',')
			p++;
	}
	free(text);
	return online;
}

static size_t
ring_size(int ncpus, double frequency, bool copy_stack)
{
	/*
	 * Room for two seconds of samples from every CPU, at least 256 kB: the
	 * agent reads the ring every 200 ms, but a flush, or a machine so
	 * loaded that the agent waits for a CPU, holds it up longer (a full
	 * ring loses samples, counted; one second's ring lost some at a load
	 * average of 80).  The ring's pages are the agent's resident memory,
	 * twice over (the kernel maps it twice so that records can wrap).
	 */
	size_t		want = (size_t) (ncpus * frequency) * 2 *
		(sizeof(struct parca_sample) + (copy_stack ? SAMPLE_STACK_COPY : 0));
	size_t		size = 256 * 1024;

	while (size < want)
		size *= 2;
	return size;
}

Sampler *
sampler_start(const SamplerConfig *cfg, SampleHandler handler, void *arg,
			  char *err, size_t errlen)
{
	Sampler    *s = xcalloc(1, sizeof(Sampler));
	bool	   *online;
	int			nonline = 0;
	int			rc;
	/*
	 * The ring is sized for the samples a second the agent expects; past
	 * a few times the on-CPU rate the off-CPU bound is a ceiling rather
	 * than an expectation (--off-cpu-rate=1e6 to time every wait), and the
	 * ring stays that size.
	 */
	double		rate = cfg->frequency +
		(cfg->off_cpu ? fmin(cfg->off_cpu_rate, 4.0 * cfg->frequency) : 0);

	libbpf_set_print(libbpf_log);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
	{
		snprintf(err, errlen, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s); "
				 "parca-agent needs a kernel built with CONFIG_DEBUG_INFO_BTF=y",
				 strerror(errno));
		goto fail;
	}
	s->handler = handler;
	s->arg = arg;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0)
	{
		snprintf(err, errlen, "cannot count CPUs: %s", strerror(-s->ncpus));
		goto fail;
	}

	s->skel = profile_bpf__open();
	if (s->skel == NULL)
	{
		snprintf(err, errlen, "cannot open the BPF program: %s", strerror(errno));
		goto fail;
	}
	s->skel->rodata->report_idle = cfg->report_idle;
	s->skel->rodata->copy_stack = cfg->copy_stack;
	s->skel->rodata->off_cpu_min_ns = cfg->off_cpu_min_ns;
	s->skel->rodata->wakeup_bytes = ring_size(s->ncpus, rate, cfg->copy_stack) / 2;
	bpf_map__set_max_entries(s->skel->maps.samples,
							 ring_size(s->ncpus, rate, cfg->copy_stack));
	/*
	 * Off-CPU sampling starts cautious, one wait in OFF_CPU_START timed,
	 * until the first adjustment (100 ms on) knows the rate of waits: a
	 * busy machine would otherwise send a burst at start.
	 */
	s->skel->data->off_cpu_threshold = OFF_CPU_ALWAYS / OFF_CPU_START;
	/*
	 * Without --off-cpu, nothing of it is loaded (its map needs Linux
	 * 5.12).  The variants that walk CPython frames call bpf_loop (Linux
	 * 5.17); without it, the others.
	 */
	s->python = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) == 1;
	bpf_program__set_autoload(s->skel->progs.on_sample, !s->python);
	bpf_program__set_autoload(s->skel->progs.on_sample_python, s->python);
	bpf_program__set_autoload(s->skel->progs.on_switch, cfg->off_cpu);
	bpf_program__set_autoload(s->skel->progs.on_sys_exit, cfg->off_cpu && !s->python);
	bpf_program__set_autoload(s->skel->progs.on_sys_exit_python, cfg->off_cpu && s->python);
	bpf_map__set_autocreate(s->skel->maps.off_cpu_waits, cfg->off_cpu);
	rc = profile_bpf__load(s->skel);
	if (rc != 0)
	{
		if (rc == -EPERM || rc == -EACCES)
			snprintf(err, errlen, "not allowed to load BPF programs (%s): run as root "
					 "or with CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE", strerror(-rc));
		else
			snprintf(err, errlen, "cannot load the BPF program: %s", strerror(-rc));
		goto fail;
	}

	online = read_online_cpus(s->ncpus);
	if (online == NULL)
	{
		snprintf(err, errlen, "cannot read /sys/devices/system/cpu/online");
		goto fail;
	}
	s->fds = xcalloc(s->ncpus, sizeof(int));
	s->links = xcalloc(s->ncpus, sizeof(struct bpf_link *));
	for (int cpu = 0; cpu < s->ncpus; cpu++)
	{
		struct perf_event_attr attr = {0};
		int			fd;

		s->fds[cpu] = -1;
		if (!online[cpu])
			continue;
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		/* cpu-clock counts nanoseconds: a fixed period gives exactly frequency Hz. */
		attr.sample_period = 1000000000ull / (uint64_t) cfg->frequency;
		fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
		{
			snprintf(err, errlen, "cannot open a perf event on CPU %d: %s%s", cpu,
					 strerror(errno),
					 errno == EACCES || errno == EPERM ?
					 " (run as root or with CAP_PERFMON)" : "");
			free(online);
			goto fail;
		}
		s->fds[cpu] = fd;
		s->links[cpu] = bpf_program__attach_perf_event(s->python ? s->skel->progs.on_sample_python :
													   s->skel->progs.on_sample, fd);
		if (s->links[cpu] == NULL)
		{
			snprintf(err, errlen, "cannot attach the BPF program on CPU %d: %s",
					 cpu, strerror(errno));
			free(online);
			goto fail;
		}
		nonline++;
	}
	free(online);

	if (cfg->off_cpu)
	{
		s->on_switch = bpf_program__attach(s->skel->progs.on_switch);
		s->on_sys_exit = s->on_switch ?
			bpf_program__attach(s->python ? s->skel->progs.on_sys_exit_python :
								s->skel->progs.on_sys_exit) : NULL;
		if (s->on_sys_exit == NULL)
		{
			snprintf(err, errlen, "--off-cpu: cannot attach to the sched_switch and "
					 "sys_exit tracepoints: %s", strerror(errno));
			goto fail;
		}
		s->off_cpu = true;
		s->off_cpu_target = cfg->off_cpu_rate * nonline;
		s->last_adjust_ns = now_monotonic_ns();
	}

	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.samples),
							   on_ring_record, s, NULL);
	if (s->ring == NULL)
	{
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	log_msg(LOG_INFO, "sampling %d CPUs at %d Hz%s%s", nonline, cfg->frequency,
			cfg->off_cpu ? ", and waits off the CPU" : "",
			s->python ? "" : "; Python frames are not read (the kernel has no bpf_loop: Linux 5.17)");
	return s;

fail:
	sampler_stop(s);
	return NULL;
}

/* The BPF program's per-CPU counters, summed. */
static void
read_counters(Sampler *s, uint64_t *sums)
{
	int			n = libbpf_num_possible_cpus();
	uint64_t   *values = xcalloc(n, sizeof(uint64_t));
	int			fd = bpf_map__fd(s->skel->maps.counters);

	for (uint32_t k = 0; k < NCOUNTERS; k++)
	{
		sums[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, values) != 0)
			continue;
		for (int c = 0; c < n; c++)
			sums[k] += values[c];
	}
	free(values);
}

/*
 * Bound the off-CPU samples to their rate: estimate how many waits a
 * second are long enough (the timed ones divided by the probability of
 * timing one), smoothed over the last polls, and time a wait with the
 * probability that brings that down to the bound.  Each sample carries
 * the probability with which its wait was timed, so that the agent counts
 * it 1/p times whatever the probability is by then.
 */
static void
adjust_off_cpu(Sampler *s)
{
	uint64_t	sums[NCOUNTERS];
	uint64_t	now = now_monotonic_ns();
	double		elapsed = (now - s->last_adjust_ns) / 1e9;
	double		p = (double) s->skel->data->off_cpu_threshold / OFF_CPU_ALWAYS;
	double		rate;

	if (elapsed < 0.1)
		return;
	read_counters(s, sums);
	rate = (sums[COUNTER_OFF_CPU_WAITS] - s->last_waits) / p / elapsed;
	s->waits_per_second = s->last_waits == 0 ? rate : (s->waits_per_second + rate) / 2;
	s->last_waits = sums[COUNTER_OFF_CPU_WAITS];
	s->last_adjust_ns = now;
	p = s->waits_per_second > s->off_cpu_target ? s->off_cpu_target / s->waits_per_second : 1;
	if (p < OFF_CPU_MIN_PROBABILITY)
		p = OFF_CPU_MIN_PROBABILITY;
	s->skel->data->off_cpu_threshold = (uint64_t) (p * OFF_CPU_ALWAYS);
}

void
sampler_poll(Sampler *s, int timeout_ms)
{
	/*
	 * The program wakes us only when the ring is half full, so a timeout
	 * is the usual way out of the wait; consume whatever is there.
	 */
	ring_buffer__poll(s->ring, timeout_ms);
	ring_buffer__consume(s->ring);
	if (s->off_cpu)
		adjust_off_cpu(s);
}

void
sampler_counters(Sampler *s, SamplerCounters *out)
{
	uint64_t	sums[NCOUNTERS];

	read_counters(s, sums);
	out->samples = sums[COUNTER_SAMPLES];
	out->lost = sums[COUNTER_LOST];
	out->idle = sums[COUNTER_IDLE];
	out->off_cpu_waits = sums[COUNTER_OFF_CPU_WAITS];
	out->off_cpu = sums[COUNTER_OFF_CPU];
	out->off_cpu_probability = s->off_cpu ?
		(double) s->skel->data->off_cpu_threshold / OFF_CPU_ALWAYS : 0;
}

void
sampler_add_go_process(Sampler *s, uint32_t pid, uint64_t start_time, int64_t tls_g,
					   uint64_t m_curg)
{
	struct go_process go = {.tls_g = tls_g, .m_curg = m_curg, .start_time = start_time};

	bpf_map_update_elem(bpf_map__fd(s->skel->maps.go_procs), &pid, &go, BPF_ANY);
}

bool
sampler_add_python_process(Sampler *s, uint32_t pid, const struct python_process *py)
{
	if (!s->python)
		return false;
	bpf_map_update_elem(bpf_map__fd(s->skel->maps.python_procs), &pid, py, BPF_ANY);
	return true;
}

void
sampler_add_postgres_process(Sampler *s, uint32_t pid, const struct postgres_process *pg)
{
	bpf_map_update_elem(bpf_map__fd(s->skel->maps.postgres_procs), &pid, pg, BPF_ANY);
}

void
sampler_stop(Sampler *s)
{
	if (s == NULL)
		return;
	if (s->ring)
		ring_buffer__free(s->ring);
	bpf_link__destroy(s->on_sys_exit);
	bpf_link__destroy(s->on_switch);
	for (int cpu = 0; s->links && cpu < s->ncpus; cpu++)
	{
		if (s->links[cpu])
			bpf_link__destroy(s->links[cpu]);
		if (s->fds[cpu] >= 0)
			close(s->fds[cpu]);
	}
	free(s->links);
	free(s->fds);
	if (s->skel)
		profile_bpf__destroy(s->skel);
	free(s);
}
