/*
 * jit.c
 *		Names for the frames of JIT-compiled code; see jit.h.
 *
 * A JIT frame's location is identified by its name, file and line (a
 * location in no mapping, as Python frames are), not by its address: JIT
 * code has no build id and its addresses differ in every process and
 * every run, so an address-keyed location would be new in each process
 * and never repeat, while (function, file, line) repeats across the
 * processes of a program and its restarts, which is what keeps the
 * metastore small and lets stacks merge.  The ids are common/ids/'s content
 * hashes of those lines, as for any location the metastore cache makes.
 *
 * The map is read when a JIT address is not in what was read so far (new
 * code), at most once a second per process: code compiled since is
 * "[node JIT]" until the next read.
 */
#include "jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "java_attach.h"
#include "jit_file.h"
#include "jitdump.h"
#include "metastore_cache.h"
#include "perf_map.h"
#include "util.h"

#define JIT_RELOAD_NS 1000000000ull
/*
 * A process with neither a perf map nor a jitdump file (Node.js without
 * --perf-basic-prof) is looked at again after a second, then twice as
 * long each time, up to the jitdump search's period: its JIT frames would
 * otherwise cost two opens a second for ever.
 */
#define JIT_RELOAD_MAX_NS (10 * 1000000000ull)
/* Most bytes of map read at once: a huge map is read over several reloads. */
#define JIT_READ_MAX (1024 * 1024)
#define MAX_NAME 4096
/* How often a process's mappings are searched for a jitdump file. */
#define JITDUMP_SEARCH_NS (10 * 1000000000ull)
/*
 * A JVM is asked for its map again (Compiler.perfmap rewrites it whole)
 * when its code was missing from the map, a second after it was last
 * asked.  An ask whose map still lacks the code that missed (code the map
 * never names, or freed since) makes the next wait twice as long, up to a
 * minute; one whose map names it (the JVM compiled it since: at any time,
 * not only in its first seconds) brings the wait back to a second.
 */
#define JAVA_ASK_FIRST_NS 1000000000ull
#define JAVA_ASK_MAX_NS (60 * 1000000000ull)

/*
 * Each process remembers the location of the last JIT pcs it named, in a
 * table of this many slots (24 bytes each) indexed by the pc: a named
 * frame met again costs neither a lookup in its map nor hashing its name
 * into a location id (every JIT frame of every sample of a Node.js process
 * with a map did both).
 */
#define JIT_MEMO_SLOTS 128

typedef struct JitMemo
{
	uint64_t	pc;
	uint64_t	location_id;
	uint32_t	reads;			/* the process's map reads when it was named */
} JitMemo;

/* Runtimes with JIT compilers, by their executables' names. */
typedef struct JitRuntime
{
	const char *exe;			/* basename, or its prefix with '*' */
	const char *frame;			/* what their unnamed JIT code is */
} JitRuntime;

static const JitRuntime runtimes[] = {
	{"node", "[node JIT]"},
	{"nodejs", "[node JIT]"},
	{"java", "[java JIT]"},		/* (any process with libjvm.so mapped) */
	{"dotnet", "[dotnet JIT]"},
	{"beam.smp", "[erlang JIT]"},
	{"python3*", "[python JIT]"},
};

typedef struct ProcessJit
{
	const JitRuntime *runtime;	/* NULL: not a known runtime */
	bool		status_read;
	uint32_t	nspid;			/* its pid in its own namespace: the map's name */
	JitOwner	owner;
	gid_t		egid;
	bool		map_seen;		/* a map was read (logged once) */
	bool		full_logged;	/* a table reached its bound (logged once) */
	uint64_t	read_ns;		/* last read of the map, 0: never */
	uint64_t	read_wait_ns;	/* from then to the next read */
	uint32_t	reads;			/* reads of its map and jitdump file so far */
	JitMemo		memo[JIT_MEMO_SLOTS];	/* named pcs, valid for the same reads */
	PerfMapReader reader;
	JitTable	table;
	/* its jitdump file, found in its mappings */
	uint64_t	dump_searched_ns;	/* 0: never */
	uint64_t	dump_start;		/* the mapping, 0 until found */
	uint64_t	dump_end;
	JitdumpReader dump_reader;
	JitTable	dump_table;
	/* JVMs only */
	uint32_t	pid;
	bool		jvm;
	uint64_t	start_ticks;	/* identity for the attach thread's answers */
	int			frame_pointers; /* -XX:+PreserveFramePointer: 1, 0, -1 unknown */
	bool		asking;			/* a request is with the attach thread */
	bool		answered;		/* an answer was logged */
	bool		missed;			/* code not in the map since it was asked */
	uint64_t	missed_pc;		/* the last pc the map lacked */
	uint64_t	asked_pc;		/* missed_pc when last asked */
	bool		judge_answer;	/* the map written on request is to be read */
	uint64_t	asked_ns;		/* 0: never */
	uint64_t	ask_wait_ns;	/* until it may be asked again after a miss */
} ProcessJit;

static size_t total_bytes;
static bool java_perfmap;
static U64Map jvms;				/* pid -> ProcessJit of a JVM */

void
jit_init(bool ask_jvms)
{
	java_perfmap = ask_jvms;
}

void
jit_stop(void)
{
	java_attach_stop();
}

size_t
jit_bytes(void)
{
	return total_bytes;
}

void
jit_free(ProcessJit *j)
{
	if (j == NULL)
		return;
	total_bytes -= jit_table_bytes(&j->table) + jit_table_bytes(&j->dump_table);
	jit_table_reset(&j->table);
	jit_table_reset(&j->dump_table);
	jitdump_reader_free(&j->dump_reader);
	if (j->jvm && u64map_get(&jvms, j->pid) == j)
		u64map_remove(&jvms, j->pid);
	free(j);
}

static const JitRuntime *
runtime_of(const Process *p)
{
	const char *slash = strrchr(p->executable, '/');
	const char *base = slash ? slash + 1 : p->executable;

	if (base[0] == '\0')
		base = p->comm;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
	{
		const char *star = strchr(runtimes[i].exe, '*');

		if (star ? strncmp(base, runtimes[i].exe, star - runtimes[i].exe) == 0
			: strcmp(base, runtimes[i].exe) == 0)
			return &runtimes[i];
	}
	return NULL;
}

static const JitRuntime *
runtime_named(const char *exe)
{
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		if (strcmp(runtimes[i].exe, exe) == 0)
			return &runtimes[i];
	return NULL;
}

/* Does the process map libjvm.so (HotSpot, whatever its launcher)? */
static bool
maps_libjvm(uint32_t pid)
{
	char		path[64];
	char	   *text;
	bool		found;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return false;
	found = strstr(text, "/libjvm.so\n") != NULL;
	free(text);
	return found;
}

/*
 * -XX:+PreserveFramePointer or -XX:-PreserveFramePointer on the JVM's
 * command line, the last one: 1 or 0; -1 if neither.
 */
static int
frame_pointers_on_command_line(uint32_t pid)
{
	char		path[64];
	char	   *text;
	size_t		len;
	int			fp = -1;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	if ((text = read_file(path, &len)) == NULL)
		return -1;
	for (size_t i = 0; i < len; i += strlen(text + i) + 1)
		if (strncmp(text + i, "-XX:", 4) == 0 && (text[i + 4] == '+' || text[i + 4] == '-') &&
			strcmp(text + i + 5, "PreserveFramePointer") == 0)
			fp = text[i + 4] == '+';
	free(text);
	return fp;
}

/*
 * Its pid inside its pid namespace (the last NSpid) and its real and
 * effective user, from /proc/PID/status; false if it is gone.
 */
static bool
read_status(uint32_t pid, uint32_t *nspid, JitOwner *owner, gid_t *egid)
{
	char		path[64];
	char	   *text;
	const char *c;
	unsigned long uid;
	unsigned long euid;
	unsigned long gid;
	unsigned long egid_read;
	bool		ok = false;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return false;
	/* (a kernel without NSpid: no pid namespaces) */
	*nspid = strstr(text, "\nNSpid:") ? status_namespace_pid(text) : pid;
	if ((c = strstr(text, "\nUid:")) != NULL &&
		sscanf(c + 5, "%lu %lu", &uid, &euid) == 2)
	{
		owner->uid = (uid_t) uid;
		owner->euid = (uid_t) euid;
		ok = *nspid != 0;
	}
	if ((c = strstr(text, "\nGid:")) != NULL &&
		sscanf(c + 5, "%lu %lu", &gid, &egid_read) == 2)
		*egid = (gid_t) egid_read;
	else
		ok = false;
	free(text);
	return ok;
}

/* Read /proc/PID/status once; false if the process is gone. */
static bool
status_known(const Process *p, ProcessJit *j)
{
	if (!j->status_read)
	{
		j->status_read = true;
		if (!read_status(p->pid, &j->nspid, &j->owner, &j->egid))
			j->nspid = 0;
	}
	return j->nspid != 0;
}

/*
 * The mapping of the process's jitdump file: a file named jit-N.dump (perf
 * looks for the same); false if there is none.
 */
static bool
find_jitdump(uint32_t pid, uint64_t *start, uint64_t *end)
{
	char		path[64];
	char	   *text;
	bool		found = false;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return false;
	for (char *line = text, *next; *line && !found; line = next)
	{
		char	   *slash;
		unsigned long long s;
		unsigned long long e;
		unsigned	n;
		char		rest[8];

		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		if (next[-1] == '\n')
			next[-1] = '\0';
		if ((slash = strrchr(line, '/')) != NULL &&
			sscanf(slash, "/jit-%u.dump%7s", &n, rest) == 1 &&
			sscanf(line, "%llx-%llx", &s, &e) == 2)
		{
			*start = s;
			*end = e;
			found = true;
		}
	}
	free(text);
	return found;
}

/* Read what the process's jitdump file gained since the last read. */
static void
read_jitdump(Process *p, ProcessJit *j)
{
	uint64_t	now = now_monotonic_ns();
	int			fd;

	if (j->dump_start == 0 &&
		(j->dump_searched_ns == 0 || now - j->dump_searched_ns >= JITDUMP_SEARCH_NS))
	{
		j->dump_searched_ns = now;
		if (find_jitdump(p->pid, &j->dump_start, &j->dump_end))
			log_msg(LOG_INFO, "pid %u (%s): JIT code named by its jitdump file", p->pid, p->comm);
	}
	if (j->dump_start == 0 ||
		(fd = jit_open_mapped(p->pid, j->dump_start, j->dump_end, &j->owner)) < 0)
		return;
	jitdump_read(&j->dump_reader, fd, &j->dump_table, JIT_READ_MAX);
	close(fd);
}

/* The wait before asking a JVM again, after an ask that named nothing new. */
static void
lengthen_ask_wait(ProcessJit *j)
{
	j->ask_wait_ns = j->ask_wait_ns * 2 < JAVA_ASK_MAX_NS ? j->ask_wait_ns * 2 : JAVA_ASK_MAX_NS;
}

/* The map a JVM wrote on request is read: did it name the code that missed? */
static void
judge_answer(ProcessJit *j)
{
	JitFrame	f;

	j->judge_answer = false;
	if (jit_table_lookup(&j->table, j->asked_pc, &f))
		j->ask_wait_ns = JAVA_ASK_FIRST_NS;
	else
		lengthen_ask_wait(j);
}

/* Read what the process's perf map and jitdump file gained. */
static void
read_map(Process *p, ProcessJit *j)
{
	char		name[64];
	int			dir;
	int			fd;
	size_t		before = jit_table_bytes(&j->table) + jit_table_bytes(&j->dump_table);

	j->read_ns = now_monotonic_ns();
	/* what was read may name a pc otherwise: the memo starts over */
	j->reads++;
	if (!status_known(p, j))
		return;
	read_jitdump(p, j);
	snprintf(name, sizeof(name), "perf-%u.map", j->nspid);
	dir = jit_open_dir(p->pid, "tmp");
	fd = jit_open_file(dir, name, &j->owner);
	if (dir >= 0)
		close(dir);
	if (fd >= 0)
	{
		perf_map_read(&j->reader, fd, &j->table, JIT_READ_MAX);
		close(fd);
		if (j->judge_answer)
			judge_answer(j);
		if (!j->map_seen)
		{
			j->map_seen = true;
			log_msg(LOG_INFO, "pid %u (%s): JIT code named by its perf map (/tmp/%s)",
					p->pid, p->comm, name);
		}
	}
	total_bytes += jit_table_bytes(&j->table) + jit_table_bytes(&j->dump_table) - before;
	if (fd >= 0 || j->dump_start != 0)
		j->read_wait_ns = JIT_RELOAD_NS;
	else if (j->read_wait_ns < JIT_RELOAD_MAX_NS)
		j->read_wait_ns = j->read_wait_ns * 2 < JIT_RELOAD_MAX_NS ?
			j->read_wait_ns * 2 : JIT_RELOAD_MAX_NS;
	if ((j->table.full || j->dump_table.full) && !j->full_logged)
	{
		j->full_logged = true;
		log_msg(LOG_INFO, "pid %u (%s): its JIT code's names reached the bound of %d MB: "
				"what follows in its %s is not read", p->pid, p->comm,
				JIT_TABLE_MAX_BYTES >> 20, j->table.full ? "perf map" : "jitdump file");
	}
}

/*
 * The function's name in a name as the runtime wrote it: V8's
 * "JS:*fib" (older "LazyCompile:*fib", "Function:~fib", "Script:~app")
 * without its kind and tier marker ("(anonymous)" if nothing is left); a
 * JVM's "long Chain.hotLoop(long)" without its return and parameter
 * types; any other name as it is.
 */
static const char *
function_name(const char *raw, bool jvm, char *buf)
{
	static const char *const v8_kinds[] = {"JS:", "LazyCompile:", "Function:", "Script:"};
	size_t		len;

	if (jvm)
	{
		const char *paren = strchr(raw, '(');
		const char *start = raw;

		if (paren == NULL)
			return raw;
		for (const char *c = raw; c < paren; c++)
			if (*c == ' ')
				start = c + 1;
		len = (size_t) (paren - start);
		if (len == 0 || len >= MAX_NAME)
			return raw;
		memcpy(buf, start, len);
		buf[len] = '\0';
		return buf;
	}
	for (size_t i = 0; i < sizeof(v8_kinds) / sizeof(v8_kinds[0]); i++)
	{
		size_t		klen = strlen(v8_kinds[i]);

		if (strncmp(raw, v8_kinds[i], klen) != 0)
			continue;
		raw += klen;
		if (*raw == '*' || *raw == '~' || *raw == '^' || *raw == '+')
			raw++;
		len = strnlen(raw, MAX_NAME - 1);
		while (len > 0 && raw[len - 1] == ' ')
			len--;
		if (len == 0)
			return "(anonymous)";
		memcpy(buf, raw, len);
		buf[len] = '\0';
		return buf;
	}
	return raw;
}

/* A new process's JIT state: which runtime, and for a JVM what is known. */
static ProcessJit *
new_jit(const Process *p)
{
	ProcessJit *j = xcalloc(1, sizeof(ProcessJit));

	j->pid = p->pid;
	j->runtime = runtime_of(p);
	j->read_wait_ns = JIT_RELOAD_NS;
	j->ask_wait_ns = JAVA_ASK_FIRST_NS;
	j->table.max_bytes = JIT_TABLE_MAX_BYTES;
	j->dump_table.max_bytes = JIT_TABLE_MAX_BYTES;
	j->frame_pointers = -1;
	if ((j->runtime == NULL || strcmp(j->runtime->exe, "java") == 0) && maps_libjvm(p->pid))
	{
		j->jvm = true;
		j->runtime = runtime_named("java");
		j->start_ticks = java_attach_start_ticks(p->pid);
		j->frame_pointers = frame_pointers_on_command_line(p->pid);
		/* not asked through attach: not on the command line is the default */
		if (!java_perfmap && j->frame_pointers < 0)
			j->frame_pointers = 0;
		u64map_put(&jvms, p->pid, j);
	}
	return j;
}

/* Take in what the attach thread found out. */
static void
take_java_answers(void)
{
	JavaAttachResult res;

	while (java_attach_result(&res))
	{
		ProcessJit *j = u64map_get(&jvms, res.pid);

		if (j == NULL || j->start_ticks != res.start_ticks)
			continue;
		j->asking = false;
		if (res.frame_pointers >= 0)
			j->frame_pointers = res.frame_pointers;
		if (res.perf_map)
		{
			j->read_ns = 0;		/* read it at the next miss */
			j->missed = false;
			j->judge_answer = true;
		}
		else
			lengthen_ask_wait(j);
		if (!j->answered || !res.perf_map)
			log_msg(LOG_INFO, "pid %u: JVM: %s%s%s", res.pid,
					res.perf_map ? "perf map written on request (Compiler.perfmap)" :
					"no perf map through its attach mechanism: ",
					res.error, j->frame_pointers == 1 ? ", -XX:+PreserveFramePointer" :
					j->frame_pointers == 0 ? ", without -XX:+PreserveFramePointer: "
					"its stacks end at their first JIT frame" : "");
		j->answered = true;
	}
}

/* Ask the JVM for its map: at first, then when code was missing, bounded (ask_wait_ns). */
static void
ask_jvm(const Process *p, ProcessJit *j)
{
	JavaAttachRequest req;
	uint64_t	now = now_monotonic_ns();

	if (!java_perfmap || j->asking || !status_known(p, j) ||
		(j->asked_ns != 0 && (!j->missed || now - j->asked_ns < j->ask_wait_ns)))
		return;
	req.pid = p->pid;
	req.nspid = j->nspid;
	req.start_ticks = j->start_ticks;
	req.euid = j->owner.euid;
	req.egid = j->egid;
	req.want_flags = j->frame_pointers < 0;
	if (java_attach_request(&req))
	{
		j->asking = true;
		j->asked_ns = now;
		j->asked_pc = j->missed_pc;
		j->missed = false;
	}
}

JitFrameKind
jit_location(Process *p, const ExecMapping *m, uint64_t pc, uint64_t *location_id)
{
	ProcessJit *j = p->jit;
	JitFrame	f;
	char		name[MAX_NAME];
	bool		found;
	JitMemo    *memo;

	if (m->is_file || strcmp(m->file, "[vdso]") == 0 || strcmp(m->file, "[vsyscall]") == 0)
		return JIT_NOT_JIT;
	if (j == NULL)
		j = p->jit = new_jit(p);
	if (jvms.count > 0)
		take_java_answers();
	memo = &j->memo[(pc ^ (pc >> 12)) % JIT_MEMO_SLOTS];
	if (memo->pc == pc && memo->reads == j->reads && ms_use_location(memo->location_id) != NULL)
	{
		if (j->jvm)
			ask_jvm(p, j);
		*location_id = memo->location_id;
		return JIT_NAMED;
	}
	found = jit_table_lookup(&j->dump_table, pc, &f) || jit_table_lookup(&j->table, pc, &f);
	if (!found && (j->read_ns == 0 || now_monotonic_ns() - j->read_ns >= j->read_wait_ns))
	{
		read_map(p, j);
		found = jit_table_lookup(&j->dump_table, pc, &f) ||
			jit_table_lookup(&j->table, pc, &f);
	}
	if (j->jvm)
	{
		if (!found)
		{
			j->missed = true;
			j->missed_pc = pc;
		}
		ask_jvm(p, j);
	}
	if (found)
	{
		FrameLine	line = {function_name(f.name, j->jvm, name), f.name, f.file, f.start_line, f.line};

		*location_id = ms_location(NULL, NULL, 0, 1, &line, true)->id;
		memo->pc = pc;
		memo->location_id = *location_id;
		memo->reads = j->reads;
		return JIT_NAMED;
	}
	if (j->runtime != NULL)
	{
		FrameLine	line = {j->runtime->frame, j->runtime->frame, "", 0, 0};

		*location_id = ms_location(NULL, NULL, 0, 1, &line, true)->id;
		return JIT_UNNAMED;
	}
	return JIT_NOT_JIT;
}

bool
jit_cut_after_jit_frame(const Process *p)
{
	return p->jit != NULL && p->jit->jvm && p->jit->frame_pointers != 1;
}

const char *
jit_java_frame_pointers_label(const Process *p)
{
	return p->jit != NULL && p->jit->jvm && p->jit->frame_pointers == 0 ? "false" : NULL;
}
