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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "aggregate.h"
#include "frame_names.h"
#include "jit.h"
#include "kernel.h"
#include "metastore_cache.h"
#include "process.h"
#include "objfile.h"
#include "profiler.h"
#include "postgres.h"
#include "python.h"
#include "relabel.h"
#include "sampler.h"
#include "util.h"
#include "writer.h"

#define AGENT_VERSION "0.1"
#define PROFILE_TYPE "parca_agent:samples:count:cpu:nanoseconds:delta"
/* Nanoseconds waited off the CPU; see docs/agent.md, "Off-CPU". */
#define OFF_CPU_PROFILE_TYPE "parca_agent:off_cpu:nanoseconds:off_cpu:nanoseconds:delta"

/* The options' defaults, which --help shows (and docs/agent.md lists). */
#define DEFAULT_FREQUENCY 19
#define DEFAULT_FLUSH_SECONDS 10
#define DEFAULT_BUFFER_BYTES (16 * 1024 * 1024)
#define DEFAULT_CACHE_BYTES (16 * 1024 * 1024)
#define DEFAULT_OFF_CPU_MIN_NS 1000000
#define DEFAULT_OFF_CPU_RATE 19

/* The highest --frequency. */
#define MAX_FREQUENCY 1000

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

/* How often the counters are logged without --verbose. */
#define SUMMARY_INTERVAL_NS (60 * 1000000000ull)

/*
 * How long the writer may take by default to write the backlog at exit:
 * below systemd's 90 s stop timeout, and long enough for a backlog written
 * while PostgreSQL was away to reach it again on a busy machine.
 */
#define DEFAULT_STOP_SECONDS 30

/*
 * The caches' bound (--cache-size) is shared (see docs/agent.md,
 * "Caches"): the files (symbols, CFI), the metastore copy, the labels
 * shared by processes (executable paths, cgroups) and the Python code
 * objects read.
 */
#define FILES_SHARE 0.75
#define METASTORE_SHARE 0.1875
#define LABELS_SHARE 0.03125
#define PYTHON_SHARE 0.03125

/*
 * Unwinding reads the CFI of the programs it walks through where it lies,
 * in their mapped files; a large program (node, a browser) leaves
 * megabytes of its pages in the agent's resident memory within a second.
 * When the agent's file-backed pages have grown this much since they
 * were last dropped, they are dropped again (objfile_drop_pages).
 */
#define FILE_PAGES_SLACK (4 * 1024 * 1024)

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
			"  --frequency=HZ         samples per second per CPU (default %d)\n"
			"  --flush-interval=SECS  write interval in seconds (default %d)\n"
			"  --label=NAME=VALUE     add a label to every series (repeatable)\n"
			"  --label-drop=NAMES     leave these labels (comma-separated) out of the\n"
			"                         series, e.g. pid,thread_id,cpu (fewer series)\n"
			"  --relabel=RULE         keep:NAME=~REGEX, drop:NAME=~REGEX, labeldrop:REGEX\n"
			"                         or labelkeep:REGEX (repeatable, applied in order)\n"
			"  --node=NAME            the node label (default: the host name)\n"
			"  --duration=SECS        run this long, flush and exit (default: until signalled)\n"
			"  --stop-timeout=SECS    at exit, how long to keep trying to write the\n"
			"                         backlog (default %d); exit status 1 if some is left\n"
			"  --buffer-size=BYTES    bound of the unwritten backlog; k, M, G suffixes\n"
			"                         (default %dM); beyond it the oldest data is dropped\n"
			"  --cache-size=BYTES     bound of the caches (files, symbols, labels);\n"
			"                         k, M, G suffixes (default %dM)\n"
			"  --idle                 also report the idle task's samples\n"
			"  --off-cpu              also sample where threads wait: the time each\n"
			"                         blocked thread spent off the CPU, with its stacks\n"
			"  --off-cpu-min=TIME     shortest wait sampled (default %gms; ns, us, ms, s)\n"
			"  --off-cpu-rate=N       at most about N off-CPU samples a second per CPU\n"
			"                         (default %d); beyond it, waits are sampled\n"
			"  --frame-pointers-only  walk user stacks by frame pointers only: no stack\n"
			"                         copies, no CFI unwinding (cheaper; wrong for code\n"
			"                         built without frame pointers)\n"
			"  --no-java-perfmap      do not ask JVMs for their perf maps through their\n"
			"                         attach mechanism (jcmd Compiler.perfmap)\n"
			"  --no-postgres          do not read PostgreSQL backends' status: no\n"
			"                         pg_query_id, pg_database, ... labels\n"
			"  --offline              do not connect; print each interval's stacks to\n"
			"                         standard output in folded form, most frequent first\n"
			"  --verbose              log every flush, and libbpf's messages\n"
			"  --upload-debuginfo     upload the symbols and DWARF of the files met\n"
			"                         (their separate debug file, else the file) once\n"
			"                         per build id the database has none for; the\n"
			"                         role needs parca_debuginfo\n"
			"  --symbolize FILE OFFSET...\n"
			"                         print the names the agent gives these offsets of\n"
			"                         FILE (innermost first), and exit; no eBPF\n"
			"  --help                 show this help and exit\n"
			"  --version              show the version and exit\n"
			"\n"
			"Profile types: " PROFILE_TYPE ",\n"
			"  with --off-cpu also " OFF_CPU_PROFILE_TYPE "\n"
			"Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_RESOURCE and CAP_SYS_PTRACE)\n"
			"and a kernel with BTF.\n",
			DEFAULT_FREQUENCY, DEFAULT_FLUSH_SECONDS, DEFAULT_STOP_SECONDS, DEFAULT_BUFFER_BYTES >> 20,
			DEFAULT_CACHE_BYTES >> 20, DEFAULT_OFF_CPU_MIN_NS / 1e6, DEFAULT_OFF_CPU_RATE);
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
parse_size(const char *text, const char *option)
{
	char	   *end;
	double		v = strtod(text, &end);
	double		unit = 1;

	if (end == text || v <= 0)
		die("invalid value for %s", option);
	if (*end == 'k' || *end == 'K')
		unit = 1024, end++;
	else if (*end == 'M')
		unit = 1024 * 1024, end++;
	else if (*end == 'G')
		unit = 1024.0 * 1024 * 1024, end++;
	if (*end == 'B')
		end++;
	if (*end != '\0')
		die("invalid value for %s", option);
	return (size_t) (v * unit);
}

/* A duration: a number and a unit (ns, us, ms, s; ms if none), in ns. */
static uint64_t
parse_duration_ns(const char *text, const char *option)
{
	char	   *end;
	double		v = strtod(text, &end);
	double		unit = 1e6;

	if (end == text || v < 0)
		die("invalid value for %s", option);
	if (strcmp(end, "ns") == 0)
		unit = 1;
	else if (strcmp(end, "us") == 0)
		unit = 1e3;
	else if (strcmp(end, "s") == 0)
		unit = 1e9;
	else if (*end != '\0' && strcmp(end, "ms") != 0)
		die("invalid value for %s", option);
	return (uint64_t) (v * unit);
}

/* --label NAME=VALUE; label names follow Prometheus: [a-zA-Z_][a-zA-Z0-9_]*. */
static void
add_external_label(LabelSet *labels, const char *arg)
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
	if (labels->n == LABELSET_MAX - 16)
		die("too many --label options at '%s'", arg);
	labelset_add(labels, strndup(arg, eq - arg), eq + 1);
}

static void
add_relabel_rule(const char *err, const char *arg)
{
	if (err != NULL)
	{
		fprintf(stderr, "parca-agent: invalid rule '%s': %s\n", arg, err);
		fprintf(stderr, "Try 'parca-agent --help' for more information.\n");
		exit(2);
	}
}

/* The agent's peak resident memory, from /proc/self/status. */
static uint64_t
peak_resident_bytes(void)
{
	char	   *text = read_file("/proc/self/status", NULL);
	const char *field = text ? strstr(text, "\nVmHWM:") : NULL;
	uint64_t	kb = field ? strtoull(field + 7, NULL, 10) : 0;

	free(text);
	return kb * 1024;
}

/* Drop the mapped files' pages when they have grown by FILE_PAGES_SLACK. */
static void
bound_file_pages(uint64_t *base)
{
	if (resident_memory(true) > *base + FILE_PAGES_SLACK)
	{
		objfile_drop_pages();
		*base = resident_memory(true);
	}
}

/*
 * --symbolize: the names the agent gives offsets of a file, one line each:
 * "OFFSET name;name;..." (innermost first, "?" if none), each name followed
 * by " file:line" when the file is known.
 */
static int
print_names(const char *path, int n, char **offsets)
{
	char		real[4096];
	struct stat st;
	ObjFile    *f;

	if (realpath(path, real) == NULL || stat(real, &st) != 0)
		die("--symbolize: cannot read %s", path);
	f = objfile_get(((uint64_t) major(st.st_dev) << 32) | minor(st.st_dev), st.st_ino,
					(uint32_t) getpid(), real, 0, 0);
	if (!objfile_is_open(f))
		die("--symbolize: %s is not an ELF file the agent can read", path);
	for (int i = 0; i < n; i++)
	{
		FrameLine	lines[SYMBOLIZE_MAX_LINES];
		char	   *end;
		uint64_t	offset = strtoull(offsets[i], &end, 0);
		int			nlines;

		if (end == offsets[i] || *end != '\0')
			die("--symbolize: invalid offset '%s'", offsets[i]);
		nlines = symbolize(f, offset, lines);
		printf("%s ", offsets[i]);
		for (int j = 0; j < nlines; j++)
		{
			printf("%s%s", j ? ";" : "", lines[j].name);
			if (lines[j].filename[0] != '\0')
				printf(" %s:%lld", lines[j].filename, (long long) lines[j].line);
		}
		printf("%s\n", nlines ? "" : "?");
	}
	return 0;
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
			" with Python frames, %" PRIu64 " lost in a full ring buffer, %" PRIu64 " idle skipped, %" PRIu64
			" dropped by rules); written %" PRIu64
			" in %" PRIu64 " batches; dropped %" PRIu64 " in %" PRIu64
			" batches; backlog %d batches",
			when, ps->samples, ps->complete, ps->truncated, ps->failed, ps->kernel_only,
			ps->python, bpf_counters.lost, bpf_counters.idle, ps->dropped, ws.values_written, ws.batches_written,
			ws.values_dropped, ws.batches_dropped, ws.backlog_batches);
	if (bpf_counters.off_cpu_waits > 0 || bpf_counters.off_cpu_probability > 0)
		log_msg(LOG_INFO, "%s: off-CPU: %" PRIu64 " waits of %" PRIu64 " sampled (%" PRIu64
				" sent); a wait is timed with probability %.4g now", when, ps->off_cpu,
				bpf_counters.off_cpu_waits, bpf_counters.off_cpu,
				bpf_counters.off_cpu_probability);
	if (ws.uploads > 0)
		log_msg(LOG_INFO, "%s: debug information uploaded for %" PRIu64 " build ids", when,
				ws.uploads);
	log_msg(LOG_INFO, "%s: memory: resident %.1f MB (peak %.1f MB); caches: files %.1f MB, "
			"metastore %.1f MB, Python code %.1f MB, JIT maps %.1f MB, processes %zu", when,
			resident_memory(false) / 1048576.0, peak_resident_bytes() / 1048576.0,
			objfile_cache_bytes() / 1048576.0, ms_bytes() / 1048576.0,
			python_cache_bytes() / 1048576.0, jit_bytes() / 1048576.0, process_count());
}

/* What the command line asks for. */
typedef struct AgentOptions
{
	const char *dsn;
	SamplerConfig sampler;
	double		flush_s;
	double		duration_s;		/* 0: until signalled */
	int			stop_s;			/* --stop-timeout */
	size_t		buffer_size;
	size_t		cache_size;
	bool		offline;
	bool		verbose;
	bool		upload_debuginfo;	/* --upload-debuginfo */
	bool		no_java_perfmap;	/* --no-java-perfmap */
	bool		no_postgres;	/* --no-postgres */
	const char *symbolize_file; /* --symbolize: the offsets follow */
	char		node[256];		/* "" until the host name is taken */
	LabelSet	external;		/* --label */
} AgentOptions;

/*
 * Reads the options into *o.  Returns -1 to go on; otherwise the status to
 * exit with (--help, --version, an unknown option).  Arguments left over
 * start at argv[optind].
 */
static int
parse_options(int argc, char **argv, AgentOptions *o)
{
	enum
	{
		OPT_DSN = 1000, OPT_FREQUENCY, OPT_FLUSH, OPT_LABEL, OPT_LABEL_DROP,
		OPT_RELABEL, OPT_NODE, OPT_DURATION, OPT_STOP_TIMEOUT, OPT_BUFFER, OPT_CACHE, OPT_IDLE,
		OPT_OFF_CPU, OPT_OFF_CPU_MIN, OPT_OFF_CPU_RATE, OPT_FP_ONLY, OPT_NO_JAVA_PERFMAP, OPT_NO_POSTGRES, OPT_OFFLINE,
		OPT_VERBOSE, OPT_UPLOAD_DEBUGINFO, OPT_SYMBOLIZE, OPT_HELP, OPT_VERSION
	};
	static const struct option options[] = {
		{"dsn", required_argument, NULL, OPT_DSN},
		{"frequency", required_argument, NULL, OPT_FREQUENCY},
		{"flush-interval", required_argument, NULL, OPT_FLUSH},
		{"label", required_argument, NULL, OPT_LABEL},
		{"label-drop", required_argument, NULL, OPT_LABEL_DROP},
		{"relabel", required_argument, NULL, OPT_RELABEL},
		{"node", required_argument, NULL, OPT_NODE},
		{"duration", required_argument, NULL, OPT_DURATION},
		{"stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT},
		{"buffer-size", required_argument, NULL, OPT_BUFFER},
		{"cache-size", required_argument, NULL, OPT_CACHE},
		{"idle", no_argument, NULL, OPT_IDLE},
		{"off-cpu", no_argument, NULL, OPT_OFF_CPU},
		{"off-cpu-min", required_argument, NULL, OPT_OFF_CPU_MIN},
		{"off-cpu-rate", required_argument, NULL, OPT_OFF_CPU_RATE},
		{"frame-pointers-only", no_argument, NULL, OPT_FP_ONLY},
		{"no-java-perfmap", no_argument, NULL, OPT_NO_JAVA_PERFMAP},
		{"no-postgres", no_argument, NULL, OPT_NO_POSTGRES},
		{"offline", no_argument, NULL, OPT_OFFLINE},
		{"verbose", no_argument, NULL, OPT_VERBOSE},
		{"upload-debuginfo", no_argument, NULL, OPT_UPLOAD_DEBUGINFO},
		{"symbolize", required_argument, NULL, OPT_SYMBOLIZE},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0}
	};
	int			opt;

	memset(o, 0, sizeof(*o));
	o->sampler.frequency = DEFAULT_FREQUENCY;
	o->sampler.copy_stack = true;
	o->sampler.off_cpu_min_ns = DEFAULT_OFF_CPU_MIN_NS;
	o->sampler.off_cpu_rate = DEFAULT_OFF_CPU_RATE;
	o->flush_s = DEFAULT_FLUSH_SECONDS;
	o->stop_s = DEFAULT_STOP_SECONDS;
	o->buffer_size = DEFAULT_BUFFER_BYTES;
	o->cache_size = DEFAULT_CACHE_BYTES;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1)
	{
		switch (opt)
		{
			case OPT_DSN:
				o->dsn = optarg;
				break;
			case OPT_FREQUENCY:
				o->sampler.frequency = (int) parse_number(optarg, "--frequency", 1);
				if (o->sampler.frequency > MAX_FREQUENCY)
					die("--frequency must be at most " STRINGIFY(MAX_FREQUENCY) ", got %s", optarg);
				break;
			case OPT_FLUSH:
				o->flush_s = parse_number(optarg, "--flush-interval", 0.1);
				break;
			case OPT_LABEL:
				add_external_label(&o->external, optarg);
				break;
			case OPT_LABEL_DROP:
				add_relabel_rule(relabel_add_drop_list(optarg), optarg);
				break;
			case OPT_RELABEL:
				add_relabel_rule(relabel_add_rule(optarg), optarg);
				break;
			case OPT_NODE:
				snprintf(o->node, sizeof(o->node), "%s", optarg);
				break;
			case OPT_DURATION:
				o->duration_s = parse_number(optarg, "--duration", 0);
				break;
			case OPT_STOP_TIMEOUT:
				if (parse_number(optarg, "--stop-timeout", 0) > 3600)
					die("--stop-timeout must be at most 3600 seconds, got %s", optarg);
				o->stop_s = (int) parse_number(optarg, "--stop-timeout", 0);
				break;
			case OPT_BUFFER:
				o->buffer_size = parse_size(optarg, "--buffer-size");
				break;
			case OPT_CACHE:
				o->cache_size = parse_size(optarg, "--cache-size");
				break;
			case OPT_IDLE:
				o->sampler.report_idle = true;
				break;
			case OPT_NO_JAVA_PERFMAP:
				o->no_java_perfmap = true;
				break;
			case OPT_NO_POSTGRES:
				o->no_postgres = true;
				break;
			case OPT_OFF_CPU:
				o->sampler.off_cpu = true;
				break;
			case OPT_OFF_CPU_MIN:
				o->sampler.off_cpu_min_ns = parse_duration_ns(optarg, "--off-cpu-min");
				break;
			case OPT_OFF_CPU_RATE:
				o->sampler.off_cpu_rate = parse_number(optarg, "--off-cpu-rate", 0.001);
				break;
			case OPT_FP_ONLY:
				o->sampler.copy_stack = false;
				break;
			case OPT_OFFLINE:
				o->offline = true;
				break;
			case OPT_VERBOSE:
				o->verbose = true;
				break;
			case OPT_UPLOAD_DEBUGINFO:
				o->upload_debuginfo = true;
				break;
			case OPT_SYMBOLIZE:
				o->symbolize_file = optarg;
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
	return -1;
}

/*
 * What the profiler needs before the first sample: the kernel's symbols,
 * the labels of every series (node, kernel release, --label), the
 * processes' state, and the signals that stop the agent.
 */
static void
prepare_profiling(AgentOptions *o)
{
	LabelSet	common = {0};
	struct sigaction sa = {0};

	log_set_level(o->verbose ? LOG_DEBUG : LOG_INFO);
	if (o->node[0] == '\0' && gethostname(o->node, sizeof(o->node) - 1) != 0)
		snprintf(o->node, sizeof(o->node), "unknown");

	/* Never wait on the network for debug information. */
	unsetenv("DEBUGINFOD_URLS");

	if (kernel_load_symbols() == 0)
		log_msg(LOG_WARN, "no kernel symbols in /proc/kallsyms (kptr_restrict?): "
				"kernel frames stay unsymbolized");
	labelset_add(&common, "node", o->node);
	labelset_add(&common, "kernel_release", kernel_release());
	for (int i = 0; i < o->external.n; i++)
		labelset_add(&common, o->external.labels[i].name, o->external.labels[i].value);
	profiler_init(&common, o->upload_debuginfo && !o->offline);
	process_init();
	jit_init(!o->no_java_perfmap);
	if (!o->no_postgres)
		postgres_init(o->dsn, o->offline);

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void
start_writer(const AgentOptions *o)
{
	WriterConfig wc = {
		.dsn = o->dsn,
		.node = o->node,
		.profile_type = {PROFILE_TYPE, OFF_CPU_PROFILE_TYPE},
		/* ns of CPU time a sample stands for; one ns waited per unit */
		.period = {1000000000 / o->sampler.frequency, 1},
		.max_bytes = o->buffer_size,
	};

	writer_start(&wc);
}

/* Frees the batches the writer has committed, after marking what they wrote. */
static void
retire_committed_batches(void)
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

/*
 * Batches the writer gave back after a collection of the metastore: their
 * rows are chosen again under the new generation, and they are queued
 * again, oldest first.
 */
static void
resubmit_returned_batches(void)
{
	int64_t		generation;
	Batch	   *b = writer_take_returned(&generation);
	int64_t		dropped = 0;

	if (b == NULL)
		return;
	batch_note_generation(generation);
	while (b)
	{
		Batch	   *next = b->next;

		dropped += batch_rebuild(b);
		if (b->nsamples > 0)
			writer_submit(b);
		else
			batch_free(b);
		b = next;
	}
	if (dropped > 0)
		log_msg(LOG_WARN, "%" PRId64 " samples dropped: their frames were forgotten "
				"before the metastore's collection was noticed", dropped);
}

/*
 * The end of a flush interval: the window's counts become a batch for the
 * writer (or standard output), and the caches are trimmed to their shares.
 */
static void
flush_window(const AgentOptions *o, uint64_t window_ns)
{
	static uint64_t batch_id = 0;
	uint64_t	id = now_realtime_ns() / 1000;
	Batch	   *b;

	batch_id = id > batch_id ? id : batch_id + 1;
	profiler_resolve();
	if (o->offline)
		agg_print_folded(stdout);
	/* what the server has, as the writer last saw it, before rows are chosen */
	if (!o->offline)
	{
		retire_committed_batches();
		resubmit_returned_batches();
	}
	b = agg_take(batch_id, now_realtime_ns(), window_ns);
	if (b && o->offline)
		batch_free(b);
	else if (b)
		writer_submit(b);
	ms_trim((size_t) (o->cache_size * METASTORE_SHARE));
	objfile_end_flush((size_t) (o->cache_size * FILES_SHARE));
	process_sweep((size_t) (o->cache_size * LABELS_SHARE));
	python_trim((size_t) (o->cache_size * PYTHON_SHARE));
}

/* Samples until signalled or --duration has passed, flushing every interval. */
static void
sample_until_stopped(Sampler *sampler, const AgentOptions *o)
{
	uint64_t	start_ns = now_monotonic_ns();
	uint64_t	window_start_ns = start_ns;
	uint64_t	last_summary_ns = start_ns;
	uint64_t	stop_at_ns = o->duration_s > 0 ?
		start_ns + (uint64_t) (o->duration_s * 1e9) : UINT64_MAX;
	uint64_t	flush_ns = (uint64_t) (o->flush_s * 1e9);
	uint64_t	file_pages_base = 0;

	for (;;)
	{
		uint64_t	now;
		bool		last;

		sampler_poll(sampler, 200);
		bound_file_pages(&file_pages_base);
		now = now_monotonic_ns();
		last = stop_requested || now >= stop_at_ns;
		if (last || now - window_start_ns >= flush_ns)
			sampler_counters(sampler, &bpf_counters);
		if (last)
		{
			/* Stop sampling; the poll above took what the ring held. */
			sampler_stop(sampler);
			sampler = NULL;
		}
		if (last || now - window_start_ns >= flush_ns)
		{
			flush_window(o, now - window_start_ns);
			window_start_ns = now;
			/* (objfile_end_flush dropped the files' pages) */
			file_pages_base = resident_memory(true);
			if (o->verbose || now - last_summary_ns >= SUMMARY_INTERVAL_NS)
			{
				log_summary("so far");
				last_summary_ns = now;
			}
		}
		if (last)
			break;
	}
}

int
main(int argc, char **argv)
{
	AgentOptions o;
	char		err[512];
	Sampler    *sampler;
	int			status = parse_options(argc, argv, &o);
	int			left = 0;

	if (status >= 0)
		return status;
	if (o.symbolize_file)
		return print_names(o.symbolize_file, argc - optind, argv + optind);
	if (optind < argc)
		die("unexpected argument '%s'", argv[optind]);

	prepare_profiling(&o);
	sampler = sampler_start(&o.sampler, profiler_on_sample, NULL, err, sizeof(err));
	if (sampler == NULL)
	{
		log_msg(LOG_ERROR, "%s", err);
		return 1;
	}
	if (!o.offline)
		start_writer(&o);
	sample_until_stopped(sampler, &o);
	if (stop_requested)
		log_msg(LOG_INFO, "stopping on signal %d", (int) stop_requested);
	jit_stop();
	if (!o.offline)
		left = writer_stop(o.stop_s);
	log_summary("done");
	return left > 0 ? 1 : 0;
}
