/*
 * sampler.c
 *		The BPF side of the agent: load, attach, receive; see sampler.h.
 */
#include "sampler.h"

#include <errno.h>
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
	SampleHandler handler;
	void	   *arg;
};

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
		size >= sizeof(struct parca_sample) + sample->stack_len)
		s->handler(sample, s->arg);
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
ring_size(int ncpus, int frequency, bool copy_stack)
{
	/* Room for two seconds of samples from every CPU, at least 256 kB. */
	size_t		want = (size_t) ncpus * frequency * 2 *
		(sizeof(struct parca_sample) + (copy_stack ? SAMPLE_STACK_COPY : 0));
	size_t		size = 256 * 1024;

	while (size < want)
		size *= 2;
	return size;
}

Sampler *
sampler_start(int frequency, bool report_idle, bool copy_stack, SampleHandler handler,
			  void *arg, char *err, size_t errlen)
{
	Sampler    *s = xcalloc(1, sizeof(Sampler));
	bool	   *online;
	int			nonline = 0;
	int			rc;

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
	s->skel->rodata->report_idle = report_idle;
	s->skel->rodata->copy_stack = copy_stack;
	s->skel->rodata->wakeup_bytes = ring_size(s->ncpus, frequency, copy_stack) / 2;
	bpf_map__set_max_entries(s->skel->maps.samples,
							 ring_size(s->ncpus, frequency, copy_stack));
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
		attr.sample_period = 1000000000ull / (uint64_t) frequency;
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
		s->links[cpu] = bpf_program__attach_perf_event(s->skel->progs.on_sample, fd);
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

	s->ring = ring_buffer__new(bpf_map__fd(s->skel->maps.samples),
							   on_ring_record, s, NULL);
	if (s->ring == NULL)
	{
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	log_msg(LOG_INFO, "sampling %d CPUs at %d Hz", nonline, frequency);
	return s;

fail:
	sampler_stop(s);
	return NULL;
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
}

void
sampler_counters(Sampler *s, SamplerCounters *out)
{
	int			n = libbpf_num_possible_cpus();
	uint64_t   *values = xcalloc(n, sizeof(uint64_t));
	uint64_t	sums[NCOUNTERS] = {0};
	int			fd = bpf_map__fd(s->skel->maps.counters);

	for (uint32_t k = 0; k < NCOUNTERS; k++)
	{
		if (bpf_map_lookup_elem(fd, &k, values) != 0)
			continue;
		for (int c = 0; c < n; c++)
			sums[k] += values[c];
	}
	free(values);
	out->samples = sums[COUNTER_SAMPLES];
	out->lost = sums[COUNTER_LOST];
	out->idle = sums[COUNTER_IDLE];
}

void
sampler_stop(Sampler *s)
{
	if (s == NULL)
		return;
	if (s->ring)
		ring_buffer__free(s->ring);
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
