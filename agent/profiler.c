/*
 * profiler.c
 *		From a raw sample to a counted stack; see profiler.h.
 *
 * A stack is the kernel frames (leaf first) followed by the user frames
 * (leaf first).  User frames are checked once more here: every address
 * must lie in an executable mapping of the process, else the walk is cut
 * there.  A user stack counts as complete only when its last frame is a
 * known bottom of a stack (__libc_start_call_main, a thread's start, Go's
 * goexit): a walk that ends anywhere else, cleanly or not, went through
 * code without frame pointers (whose frame pointer register holds
 * anything, zero included) or was cut, and ends with the synthetic
 * location "[truncated]" so that flame graphs show it.
 */
#include "profiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "frame_names.h"
#include "jit.h"
#include "kernel.h"
#include "metastore_cache.h"
#include "postgres.h"
#include "process.h"
#include "python.h"
#include "relabel.h"
#include "ids/ids.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

#define MAX_FRAMES (SAMPLE_MAX_KERNEL_FRAMES + SAMPLE_MAX_USER_FRAMES + \
					SAMPLE_MAX_PY_FRAMES + 1)

/*
 * Symbolization reads DWARF where it lies in the mapped file and libdw
 * keeps what it parsed (units' abbreviations, line tables: megabytes for a
 * large unit) until the file's handle is closed.  When the agent's
 * resident memory has grown this much since the flush's symbolization
 * began, the file being read is released (its DWARF closed, its pages
 * dropped) and opened again for the next address.  Checked every
 * RESOLVE_CHECK_EVERY lookups.
 */
#define RESOLVE_SLACK (4 * 1024 * 1024)
#define RESOLVE_CHECK_EVERY 16
#define KERNEL_FILE "[kernel.kallsyms]"

/* A user location whose lines wait for the next flush. */
typedef struct Pending
{
	ObjFile    *file;
	uint64_t	address;		/* in the file */
	uint64_t	location_id;
} Pending;

static LabelSet common;
static bool keep_unwind_label;
static bool upload_debuginfo;
static U64Map debuginfo_offered;	/* hash(build id) -> (void *) 1 */
static ProfilerStats stats;
static Pending *pending;
static size_t npending;
static size_t pending_cap;

void
profiler_init(const LabelSet *common_labels, bool upload)
{
	common = *common_labels;
	keep_unwind_label = relabel_keeps_name("unwind");
	upload_debuginfo = upload;
}

/*
 * --upload-debuginfo: the debug information of a file met in symbolizing,
 * offered to the writer once per build id (the writer uploads it unless
 * the database has it).  A file without any is remembered too, so that it
 * is looked at once.
 */
static void
offer_debuginfo(ObjFile *f)
{
	const char *build_id = objfile_build_id(f);
	uint64_t	key;
	int			fd;

	if (!upload_debuginfo || build_id[0] == '\0')
		return;
	key = parca_hash64(build_id, strlen(build_id));
	if (u64map_get(&debuginfo_offered, key) != NULL)
		return;
	fd = objfile_open_debuginfo(f);
	/* a full queue: offered again at the next resolve */
	if (fd < 0 || writer_upload(build_id, fd))
		u64map_put(&debuginfo_offered, key, (void *) 1);
}

const ProfilerStats *
profiler_stats(void)
{
	return &stats;
}

static uint64_t
kernel_location(uint64_t addr)
{
	const char *build_id = kernel_build_id();
	MsLocation *loc = ms_find_address(ms_mapping(build_id, KERNEL_FILE), addr);

	if (loc == NULL)
	{
		const char *module = "";
		const char *name = kernel_symbol(addr, &module);
		char		file[160] = "";
		FrameLine	line = {name, name, file, 0, 0};

		/* A module's functions name it as their file: "[ext4]". */
		if (module[0] != '\0')
			snprintf(file, sizeof(file), "[%s]", module);

		loc = ms_location(build_id, KERNEL_FILE, addr, name ? 1 : 0, &line, true);
	}
	return loc->id;
}

/* The lines of a frame in mapping m at offset, looked up now. */
static int
lookup_now(const Process *p, const ExecMapping *m, uint64_t offset, FrameLine *lines)
{
	ObjFile    *f = process_objfile(p, m);

	return f ? symbolize(f, offset, lines) : 0;
}

/*
 * The location of a user frame.  In a file with a build id the location's
 * id is its address, so its lines can wait for the next flush, where each
 * file is opened once for all its new addresses (see profiler_resolve).
 * Other locations are identified by their lines too, so they are
 * symbolized at once.
 */
static MsLocation *
user_location(const Process *p, const ExecMapping *m, uint64_t offset)
{
	MsLocation *loc = ms_find_address(m->mapping_id, offset);
	FrameLine	lines[SYMBOLIZE_MAX_LINES];

	if (loc == NULL)
	{
		Pending    *e;

		if (!m->is_file || m->build_id[0] == '\0')
			return ms_location(m->build_id, m->file, offset,
							   lookup_now(p, m, offset, lines), lines, true);
		loc = ms_location(m->build_id, m->file, offset, 0, NULL, false);
		if (npending == pending_cap)
		{
			pending_cap = pending_cap ? pending_cap * 2 : 256;
			pending = xrealloc(pending, pending_cap * sizeof(Pending));
		}
		e = &pending[npending++];
		e->file = process_objfile(p, m);
		e->address = offset;
		e->location_id = loc->id;
	}
	return loc;
}

static uint64_t
truncated_location(void)
{
	static const FrameLine line = {"[truncated]", "[truncated]", "", 0, 0};

	return ms_location(NULL, NULL, 0, 1, &line, true)->id;
}

/* Is the location's outermost function where stacks begin? */
static bool
is_stack_bottom(uint64_t location_id)
{
	MsLocation *loc = ms_get_location(location_id);
	MsFunction *f;

	if (loc == NULL || loc->nlines == 0)
		return false;
	f = ms_get_function(loc->function_ids[loc->nlines - 1]);
	return f && unwind_is_bottom(f->system_name);
}

/*
 * The user frames of the pcs (leaf first): the location of each, until
 * one lies outside the process's mappings (then false).  When
 * return_addresses, the pcs after the first are return addresses and the
 * frame names the call before each.  In a CPython process, a frame in the
 * interpreter's evaluation function becomes the Python frames that call
 * of it ran (the sample's, in order; *py_next is the first not placed
 * yet), as long as there are.  A process's first frames in its executable
 * and in a libpython find out whether it is CPython (python_check).
 * Frames in JIT code are named by agent/jit.c; in a JVM that does not
 * keep frame pointers the walk ends after the first (false).
 */
static bool
add_user_frames(Sampler *sampler, Process *p, const struct parca_sample *s,
				const uint64_t *pcs, int npcs, bool return_addresses,
				uint64_t *frames, int *n, int *py_next)
{
	bool		unnamed_jit_before = false;

	for (int i = 0; i < npcs; i++)
	{
		const ExecMapping *m = process_find_mapping(p, pcs[i]);
		uint64_t	offset;
		JitFrameKind jit;

		if (m == NULL)
			return false;
		python_check(sampler, p, m);
		postgres_check(sampler, p, m);
		offset = pcs[i] - m->start + m->pgoff;
		if (i > 0 && return_addresses)
			offset--;
		if (*py_next < (int) s->py_nframes && python_is_eval_frame(p, m, offset))
			python_add_frames(p, s, py_next, false, frames, n);
		else if ((jit = jit_location(p, m, pcs[i] - (i > 0 && return_addresses),
									 &frames[*n])) != JIT_NOT_JIT)
		{
			/* a run of unnamed JIT frames is one frame */
			if (jit == JIT_NAMED || !unnamed_jit_before)
				(*n)++;
			unnamed_jit_before = jit == JIT_UNNAMED;
			/* a JVM without frame pointers: what follows is garbage */
			if (jit_cut_after_jit_frame(p))
				return false;
			continue;
		}
		else
			frames[(*n)++] = user_location(p, m, offset)->id;
		unnamed_jit_before = false;
	}
	return true;
}

/*
 * User frames unwound by CFI on the sample's stack copy (agent/unwind.c);
 * returns the outcome's name, the sample's "unwind" label.
 */
static const char *
user_frames_cfi(Sampler *sampler, Process *p, const struct parca_sample *s,
				uint64_t *frames, int *n)
{
	uint64_t	pcs[SAMPLE_MAX_USER_FRAMES];
	int			npcs;
	int			py_next = 0;
	UnwindOutcome outcome = unwind_stack(p, s, pcs, SAMPLE_MAX_USER_FRAMES, &npcs);

	if (!add_user_frames(sampler, p, s, pcs, npcs, false, frames, n, &py_next))
		outcome = UNWIND_FAILED;
	if (outcome == UNWIND_COMPLETE)
		stats.complete++;
	else
	{
		/*
		 * The Python frames whose evaluation calls the walk did not reach
		 * go at its root end (a complete walk's have no place: left out).
		 */
		python_add_frames(p, s, &py_next, true, frames, n);
		frames[(*n)++] = truncated_location();
		if (outcome == UNWIND_TRUNCATED)
			stats.truncated++;
		else
			stats.failed++;
	}
	return unwind_outcome_name(outcome);
}

/*
 * User frames walked by frame pointers in BPF (no stack copy).  Complete
 * or truncated is known now if the last frame has its lines, else decided
 * at the flush (profiler_decide).
 */
static void
user_frames_fp(Sampler *sampler, Process *p, const struct parca_sample *s,
			   uint64_t *frames, int *n)
{
	int			nuser = s->nuser < SAMPLE_MAX_USER_FRAMES ? s->nuser : SAMPLE_MAX_USER_FRAMES;
	int			first_user = *n;
	int			py_next = 0;
	bool		ok = add_user_frames(sampler, p, s, (const uint64_t *) s->ustack, nuser, true,
								   frames, n, &py_next);

	if (ok && s->unwind_end != UNWIND_END_DEPTH && *n > first_user &&
		!ms_get_location(frames[*n - 1])->symbolized)
		frames[(*n)++] = AGG_UNDECIDED;
	else if (ok && s->unwind_end != UNWIND_END_DEPTH && *n > first_user &&
			 is_stack_bottom(frames[*n - 1]))
		stats.complete++;
	else
	{
		python_add_frames(p, s, &py_next, true, frames, n);	/* (as above) */
		frames[(*n)++] = truncated_location();
		stats.truncated++;
	}
}

/* v in decimal into buf (12 bytes), returned. */
static const char *
decimal(uint32_t v, char *buf)
{
	char	   *p = buf + 11;

	*p = '\0';
	do
		*--p = (char) ('0' + v % 10);
	while ((v /= 10) != 0);
	return p;
}

/*
 * The sample's labels but "unwind" (see docs/agent.md, "Labels"); the
 * strings of numbers are written into buffers of the caller's.
 */
static void
sample_labels(LabelSet *set, const Process *p, const struct parca_sample *s,
			  const char *thread_name, char *pid, char *tid, char *cpu, PgLabelText *pg)
{
	*set = common;
	pid = (char *) decimal(s->pid, pid);
	tid = (char *) decimal(s->tid, tid);
	cpu = (char *) decimal(s->cpu, cpu);
	labelset_add(set, "comm", p->comm);
	labelset_add(set, "pid", pid);
	labelset_add(set, "executable", p->executable);
	labelset_add(set, "cgroup", p->cgroup);
	labelset_add(set, "systemd_unit", p->systemd_unit);
	labelset_add(set, "container_id", p->container_id);
	labelset_add(set, "thread_name", thread_name);
	labelset_add(set, "thread_id", tid);
	labelset_add(set, "cpu", cpu);
	postgres_labels(set, s, pg);
}

/*
 * What a sample counts for: one tick on the CPU, or the time its thread
 * waited divided by the probability with which the wait was timed (an
 * unbiased estimate of the time waited there in all).
 */
static int64_t
sample_value(const struct parca_sample *s)
{
	if (s->kind != SAMPLE_OFF_CPU)
		return 1;
	if (s->off_cpu_threshold == 0 || s->off_cpu_threshold >= OFF_CPU_ALWAYS)
		return (int64_t) s->off_cpu_ns;
	return (int64_t) (((unsigned __int128) s->off_cpu_ns * OFF_CPU_ALWAYS) /
					  s->off_cpu_threshold);
}

/*
 * At a process's first sight: if it is a Go program, tell the BPF program
 * how to find the goroutine its scheduler's stack works for.
 */
static void
check_go(Sampler *sampler, Process *p)
{
	ObjFile    *exe;
	int64_t		tls_g;
	uint64_t	m_curg;

	p->go_checked = true;
	if ((exe = process_executable(p)) != NULL && objfile_go_runtime(exe, &tls_g, &m_curg))
		sampler_add_go_process(sampler, p->pid, p->start_time, tls_g, m_curg);
}

void
profiler_on_sample(Sampler *sampler, const struct parca_sample *s, void *arg)
{
	uint64_t	frames[MAX_FRAMES];
	int			n = 0;
	int			nkernel = s->nkernel < SAMPLE_MAX_KERNEL_FRAMES ? s->nkernel : SAMPLE_MAX_KERNEL_FRAMES;
	char		comm[sizeof(s->comm) + 1];
	char		pid[12];
	char		tid[12];
	char		cpu[12];
	PgLabelText pg;
	Process    *p;
	LabelSet	set;
	Buf			json = {0};
	char		title[64];
	const char *outcome = NULL;

	memcpy(comm, s->comm, sizeof(s->comm));
	comm[sizeof(s->comm)] = '\0';
	p = process_get(s);
	if (!p->go_checked)
		check_go(sampler, p);
	stats.samples++;
	if (s->kind == SAMPLE_OFF_CPU)
		stats.off_cpu++;
	sample_labels(&set, p, s, comm, pid, tid, cpu, &pg);
	/* Before unwinding: what the rules drop costs no more. */
	if (!relabel_apply(&set))
	{
		stats.dropped++;
		return;
	}

	for (int i = 0; i < nkernel; i++)
		frames[n++] = kernel_location(s->kstack[i]);

	if (s->unwind_end == UNWIND_END_NONE)
		stats.kernel_only++;
	else if (s->stack_len > 0)
		outcome = user_frames_cfi(sampler, p, s, frames, &n);
	else
		user_frames_fp(sampler, p, s, frames, &n);
	if (s->py_nframes > 0)
		stats.python++;

	if (outcome && keep_unwind_label)
		labelset_add(&set, "unwind", outcome);
	if (jit_java_frame_pointers_label(p) != NULL)
		labelset_add(&set, "java_frame_pointers", jit_java_frame_pointers_label(p));
	labelset_json(&set, &json);
	snprintf(title, sizeof(title), "%s (%u)", comm, s->pid);
	agg_add(s->kind, json.data, title, frames, n, sample_value(s));
	buf_free(&json);
	process_done(p);
}

/* agg_settle's callback: a stack ends at a known bottom or is truncated. */
static uint64_t
profiler_decide(const uint64_t *frames, int nframes, int64_t samples)
{
	if (is_stack_bottom(frames[nframes - 1]))
	{
		stats.complete += samples;
		return 0;
	}
	stats.truncated += samples;
	return truncated_location();
}

static int
pending_cmp(const void *a, const void *b)
{
	const Pending *x = a;
	const Pending *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

void
profiler_resolve(void)
{
	/*
	 * One file at a time, each released before the next is read, and in
	 * address order (the lookups of a compilation unit together).
	 */
	uint64_t	base = resident_memory(false);

	qsort(pending, npending, sizeof(Pending), pending_cmp);
	for (size_t i = 0; i < npending; i++)
	{
		Pending    *e = &pending[i];
		MsLocation *loc = ms_get_location(e->location_id);
		FrameLine	lines[SYMBOLIZE_MAX_LINES];

		if (e->file && (i == 0 || e[-1].file != e->file))
			offer_debuginfo(e->file);
		if (loc != NULL && !loc->symbolized)
			ms_set_lines(loc, e->file ? symbolize(e->file, loc->address, lines) : 0,
						 lines);
		if (e->file && (i + 1 == npending || e[1].file != e->file ||
						(i % RESOLVE_CHECK_EVERY == RESOLVE_CHECK_EVERY - 1 &&
						 resident_memory(false) > base + RESOLVE_SLACK)))
			objfile_release(e->file);
	}
	npending = 0;
	agg_settle(profiler_decide);
	if (pending_cap > 4096)
	{
		free(pending);
		pending = NULL;
		pending_cap = 0;
	}
}
