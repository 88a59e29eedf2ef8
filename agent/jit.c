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
 * metastore small and lets stacks merge.  The ids are src/ids/'s content
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

#include "jit_file.h"
#include "metastore_cache.h"
#include "perf_map.h"
#include "util.h"

#define JIT_RELOAD_NS 1000000000ull
/* Most bytes of map read at once: a huge map is read over several reloads. */
#define JIT_READ_MAX (1024 * 1024)
#define MAX_NAME 4096

/* Runtimes with JIT compilers, by their executables' names. */
typedef struct JitRuntime
{
	const char *exe;			/* basename, or its prefix with '*' */
	const char *frame;			/* what their unnamed JIT code is */
} JitRuntime;

static const JitRuntime runtimes[] = {
	{"node", "[node JIT]"},
	{"nodejs", "[node JIT]"},
	{"java", "[java JIT]"},
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
	bool		map_seen;		/* a map was read (logged once) */
	uint64_t	read_ns;		/* last read of the map, 0: never */
	PerfMapReader reader;
	JitTable	table;
} ProcessJit;

static size_t total_bytes;

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
	total_bytes -= jit_table_bytes(&j->table);
	jit_table_reset(&j->table);
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

/*
 * Its pid inside its pid namespace (the last NSpid) and its real and
 * effective user, from /proc/PID/status; false if it is gone.
 */
static bool
read_status(uint32_t pid, uint32_t *nspid, JitOwner *owner)
{
	char		path[64];
	char	   *text;
	const char *c;
	unsigned long uid;
	unsigned long euid;
	bool		ok = false;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return false;
	*nspid = pid;
	if ((c = strstr(text, "\nNSpid:")) != NULL)
	{
		const char *end = strchr(c + 1, '\n');
		const char *last = end ? end : c + strlen(c);

		while (last > c && (last[-1] == ' ' || last[-1] == '\t'))
			last--;
		while (last > c && last[-1] >= '0' && last[-1] <= '9')
			last--;
		*nspid = (uint32_t) strtoul(last, NULL, 10);
	}
	if ((c = strstr(text, "\nUid:")) != NULL &&
		sscanf(c + 5, "%lu %lu", &uid, &euid) == 2)
	{
		owner->uid = (uid_t) uid;
		owner->euid = (uid_t) euid;
		ok = *nspid != 0;
	}
	free(text);
	return ok;
}

/* Read what the process's perf map gained since the last read. */
static void
read_map(Process *p, ProcessJit *j)
{
	char		name[64];
	int			dir;
	int			fd;
	size_t		before = jit_table_bytes(&j->table);

	j->read_ns = now_monotonic_ns();
	if (!j->status_read)
	{
		j->status_read = true;
		if (!read_status(p->pid, &j->nspid, &j->owner))
			j->nspid = 0;
	}
	if (j->nspid == 0)
		return;
	snprintf(name, sizeof(name), "perf-%u.map", j->nspid);
	dir = jit_open_dir(p->pid, "tmp");
	fd = jit_open_file(dir, name, &j->owner);
	if (dir >= 0)
		close(dir);
	if (fd < 0)
		return;
	perf_map_read(&j->reader, fd, &j->table, JIT_READ_MAX);
	close(fd);
	total_bytes += jit_table_bytes(&j->table) - before;
	if (!j->map_seen)
	{
		j->map_seen = true;
		log_msg(LOG_INFO, "pid %u (%s): JIT code named by its perf map (/tmp/%s)",
				p->pid, p->comm, name);
	}
}

/*
 * The function's name in a name as the runtime wrote it: V8's
 * "JS:*fib" (older "LazyCompile:*fib", "Function:~fib", "Script:~app")
 * without its kind and tier marker ("(anonymous)" if nothing is left),
 * any other name as it is.
 */
static const char *
function_name(const char *raw, char *buf)
{
	static const char *const v8_kinds[] = {"JS:", "LazyCompile:", "Function:", "Script:"};
	size_t		len;

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

JitFrameKind
jit_location(Process *p, const ExecMapping *m, uint64_t pc, uint64_t *location_id)
{
	ProcessJit *j = p->jit;
	JitFrame	f;
	char		name[MAX_NAME];
	bool		found;

	if (m->is_file || strcmp(m->file, "[vdso]") == 0 || strcmp(m->file, "[vsyscall]") == 0)
		return JIT_NOT_JIT;
	if (j == NULL)
	{
		j = p->jit = xcalloc(1, sizeof(ProcessJit));
		j->runtime = runtime_of(p);
		j->table.max_bytes = JIT_TABLE_MAX_BYTES;
	}
	found = jit_table_lookup(&j->table, pc, &f);
	if (!found && (j->read_ns == 0 || now_monotonic_ns() - j->read_ns >= JIT_RELOAD_NS))
	{
		read_map(p, j);
		found = jit_table_lookup(&j->table, pc, &f);
	}
	if (found)
	{
		FrameLine	line = {function_name(f.name, name), f.name, f.file, f.start_line, f.line};

		*location_id = ms_location(NULL, NULL, 0, 1, &line, true)->id;
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
