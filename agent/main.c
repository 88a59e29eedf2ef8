/*
 * main.c
 *		parca-agent: whole-machine CPU profiling with eBPF, written into
 *		PostgreSQL.  Command line, main loop, shutdown.
 *
 * The main thread receives samples from the BPF program, symbolizes and
 * counts them, and every flush interval hands the counts to the writer
 * thread as one batch (see writer.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"
#include "kernel.h"
#include "metastore.h"
#include "process.h"
#include "profiler.h"
#include "sampler.h"
#include "symbols.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

#define AGENT_VERSION "0.1"
#define PROFILE_TYPE "parca_agent:samples:count:cpu:nanoseconds:delta"

/* Cache bounds (see docs/agent.md). */
#define MAX_LOCATIONS 20000
#define MAX_FILES 4096

static volatile sig_atomic_t stop_requested;

static void
on_signal(int sig)
{
	stop_requested = sig;
}

static void
usage(FILE *out)
{
	fprintf(out,
			"Usage: parca-agent [OPTION]...\n"
			"Samples the stacks of every process on this machine with eBPF and\n"
			"writes them into PostgreSQL (the parca extension).\n"
			"\n"
			"  --dsn=CONNSTR          libpq connection string (default: PG* variables)\n"
			"  --frequency=HZ         samples per second per CPU (default 19)\n"
			"  --flush-interval=SECS  write interval in seconds (default 10)\n"
			"  --label=NAME=VALUE     add a label to every series (repeatable)\n"
			"  --node=NAME            the node label (default: the host name)\n"
			"  --duration=SECS        run this long, flush and exit (default: until signalled)\n"
			"  --buffer-size=BYTES    bound of the unwritten backlog; k, M, G suffixes\n"
			"                         (default 16M); beyond it the oldest data is dropped\n"
			"  --idle                 also report the idle task's samples\n"
			"  --frame-pointers-only  walk user stacks by frame pointers only: no stack\n"
			"                         copies, no CFI unwinding (cheaper; wrong for code\n"
			"                         built without frame pointers)\n"
			"  --offline              do not connect; print each interval's stacks to\n"
			"                         standard output in folded form, most frequent first\n"
			"  --verbose              log every flush, and libbpf's messages\n"
			"  --help                 show this help and exit\n"
			"  --version              show the version and exit\n"
			"\n"
			"Profile type: " PROFILE_TYPE "\n"
			"Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_RESOURCE and CAP_SYS_PTRACE)\n"
			"and a kernel with BTF.\n");
}

static void
die(const char *fmt, const char *arg)
{
	fprintf(stderr, "parca-agent: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'parca-agent --help' for more information.\n");
	exit(2);
}

static double
parse_number(const char *text, const char *option, double min)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end != '\0' || v < min)
		die("invalid value for %s", option);
	return v;
}

static size_t
parse_size(const char *text)
{
	char	   *end;
	double		v = strtod(text, &end);
	double		unit = 1;

	if (end == text || v <= 0)
		die("invalid --buffer-size: %s", text);
	if (*end == 'k' || *end == 'K')
		unit = 1024, end++;
	else if (*end == 'M')
		unit = 1024 * 1024, end++;
	else if (*end == 'G')
		unit = 1024.0 * 1024 * 1024, end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		die("invalid --buffer-size: %s", text);
	return (size_t) (v * unit);
}

/* Label names follow Prometheus: [a-zA-Z_][a-zA-Z0-9_]*. */
static void
add_external_label(Buf *labels, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL || eq == arg)
		die("--label wants NAME=VALUE, got '%s'", arg);
	for (const char *p = arg; p < eq; p++)
	{
		bool		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			*p == '_' || (p > arg && *p >= '0' && *p <= '9');

		if (!ok)
			die("invalid label name in '%s'", arg);
	}
	buf_append(labels, ",\"", 2);
	buf_append(labels, arg, eq - arg);
	buf_append(labels, "\":\"", 3);
	buf_json_escape(labels, eq + 1);
	buf_append(labels, "\"", 1);
}

/* The BPF program's counters, as last read (they go with the sampler). */
static SamplerCounters bpf_counters;

static void
log_summary(const char *when)
{
	const ProfilerStats *ps = profiler_stats();
	WriterStats ws;

	writer_stats(&ws);
	log_msg(LOG_INFO, "%s: %" PRIu64 " samples (%" PRIu64 " complete, %" PRIu64
			" truncated, %" PRIu64 " failed, %" PRIu64 " kernel only, %" PRIu64
			" lost in a full ring buffer, %" PRIu64 " idle skipped); written %" PRIu64
			" in %" PRIu64 " batches; dropped %" PRIu64 " in %" PRIu64
			" batches; backlog %d batches",
			when, ps->samples, ps->complete, ps->truncated, ps->failed, ps->kernel_only,
			bpf_counters.lost, bpf_counters.idle, ws.values_written, ws.batches_written,
			ws.values_dropped, ws.batches_dropped, ws.backlog_batches);
}

int
main(int argc, char **argv)
{
	enum
	{
		OPT_DSN = 1000, OPT_FREQUENCY, OPT_FLUSH, OPT_LABEL, OPT_NODE,
		OPT_DURATION, OPT_BUFFER, OPT_IDLE, OPT_FP_ONLY, OPT_OFFLINE, OPT_VERBOSE,
		OPT_HELP, OPT_VERSION
	};
	static const struct option options[] = {
		{"dsn", required_argument, NULL, OPT_DSN},
		{"frequency", required_argument, NULL, OPT_FREQUENCY},
		{"flush-interval", required_argument, NULL, OPT_FLUSH},
		{"label", required_argument, NULL, OPT_LABEL},
		{"node", required_argument, NULL, OPT_NODE},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"buffer-size", required_argument, NULL, OPT_BUFFER},
		{"idle", no_argument, NULL, OPT_IDLE},
		{"frame-pointers-only", no_argument, NULL, OPT_FP_ONLY},
		{"offline", no_argument, NULL, OPT_OFFLINE},
		{"verbose", no_argument, NULL, OPT_VERBOSE},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0}
	};
	const char *dsn = NULL;
	int			frequency = 19;
	double		flush_s = 10;
	double		duration_s = 0;
	size_t		buffer_size = 16 * 1024 * 1024;
	bool		report_idle = false;
	bool		fp_only = false;
	bool		offline = false;
	bool		verbose = false;
	char		node[256] = "";
	Buf			external = {0};
	Buf			common = {0};
	char		err[512];
	Sampler    *sampler;
	struct sigaction sa = {0};
	uint64_t	start_ns, window_start_ns, stop_at_ns, last_summary_ns;
	uint64_t	batch_id = 0;
	int			opt;
	int			left = 0;

	buf_append(&external, "", 1);
	external.len = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1)
	{
		switch (opt)
		{
			case OPT_DSN:
				dsn = optarg;
				break;
			case OPT_FREQUENCY:
				frequency = (int) parse_number(optarg, "--frequency", 1);
				if (frequency > 1000)
					die("--frequency must be at most 1000, got %s", optarg);
				break;
			case OPT_FLUSH:
				flush_s = parse_number(optarg, "--flush-interval", 0.1);
				break;
			case OPT_LABEL:
				add_external_label(&external, optarg);
				break;
			case OPT_NODE:
				snprintf(node, sizeof(node), "%s", optarg);
				break;
			case OPT_DURATION:
				duration_s = parse_number(optarg, "--duration", 0);
				break;
			case OPT_BUFFER:
				buffer_size = parse_size(optarg);
				break;
			case OPT_IDLE:
				report_idle = true;
				break;
			case OPT_FP_ONLY:
				fp_only = true;
				break;
			case OPT_OFFLINE:
				offline = true;
				break;
			case OPT_VERBOSE:
				verbose = true;
				break;
			case OPT_HELP:
				usage(stdout);
				return 0;
			case OPT_VERSION:
				printf("parca-agent %s\n", AGENT_VERSION);
				return 0;
			default:
				fprintf(stderr, "Try 'parca-agent --help' for more information.\n");
				return 2;
		}
	}
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);
	log_set_level(verbose ? LOG_DEBUG : LOG_INFO);
	if (node[0] == '\0' && gethostname(node, sizeof(node) - 1) != 0)
		snprintf(node, sizeof(node), "unknown");

	/* Never wait on the network for debug information. */
	unsetenv("DEBUGINFOD_URLS");

	if (kernel_load_symbols() == 0)
		log_msg(LOG_WARN, "no kernel symbols in /proc/kallsyms (kptr_restrict?): "
				"kernel frames stay unsymbolized");
	buf_append(&common, "\"node\":\"", 8);
	buf_json_escape(&common, node);
	buf_append(&common, "\",\"kernel_release\":\"", 20);
	buf_json_escape(&common, kernel_release());
	buf_append(&common, "\"", 1);
	buf_append(&common, external.data, external.len);
	buf_append(&common, "", 1);
	profiler_init(common.data);

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	sampler = sampler_start(frequency, report_idle, !fp_only, profiler_on_sample, NULL,
							err, sizeof(err));
	if (sampler == NULL)
	{
		log_msg(LOG_ERROR, "%s", err);
		return 1;
	}
	if (!offline)
	{
		WriterConfig wc = {
			.dsn = dsn,
			.node = node,
			.profile_type = PROFILE_TYPE,
			.period = 1000000000 / frequency,
			.max_bytes = buffer_size,
		};

		writer_start(&wc);
	}

	start_ns = window_start_ns = last_summary_ns = now_monotonic_ns();
	stop_at_ns = duration_s > 0 ? start_ns + (uint64_t) (duration_s * 1e9) : UINT64_MAX;
	for (;;)
	{
		uint64_t	now;
		bool		last;

		sampler_poll(sampler, 200);
		now = now_monotonic_ns();
		last = stop_requested || now >= stop_at_ns;
		if (last || now - window_start_ns >= (uint64_t) (flush_s * 1e9))
			sampler_counters(sampler, &bpf_counters);
		if (last)
		{
			/* Stop sampling; the poll above took what the ring held. */
			sampler_stop(sampler);
			sampler = NULL;
		}
		if (last || now - window_start_ns >= (uint64_t) (flush_s * 1e9))
		{
			uint64_t	id = now_realtime_ns() / 1000;
			Batch	   *b;

			batch_id = id > batch_id ? id : batch_id + 1;
			/* Unwinding's files go before symbolization opens its own. */
			unwind_close_files();
			profiler_resolve();
			if (offline)
				agg_print_folded(stdout);
			b = agg_take(batch_id, now_realtime_ns(), now - window_start_ns);
			window_start_ns = now;
			if (b && offline)
				batch_free(b);
			else if (b)
				writer_submit(b);
			if (!offline)
			{
				Batch	   *done = writer_take_committed();

				while (done)
				{
					Batch	   *next = done->next;

					batch_mark_persisted(done);
					batch_free(done);
					done = next;
				}
			}
			ms_trim(MAX_LOCATIONS);
			symbols_close_sessions();
			symbols_trim(MAX_FILES);
			process_sweep();
			if (verbose || now - last_summary_ns >= 60 * 1000000000ull)
			{
				log_summary("so far");
				last_summary_ns = now;
			}
		}
		if (last)
			break;
	}
	if (stop_requested)
		log_msg(LOG_INFO, "stopping on signal %d", (int) stop_requested);
	if (!offline)
		left = writer_stop(5);
	log_summary("done");
	buf_free(&external);
	buf_free(&common);
	return left > 0 ? 1 : 0;
}
