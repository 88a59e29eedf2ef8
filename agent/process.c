/*
 * process.c
 *		Per-process mappings and labels from /proc; see process.h.
 */
#include "process.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ids.h"
#include "symbols.h"
#include "util.h"

static U64Map processes;		/* pid -> Process */

/*
 * How soon the mappings may be read again: often during a program's first
 * second, while its libraries appear one by one (a short-lived program
 * must be caught then), rarely afterwards, when a pc outside them is more
 * likely garbage from a failed unwind than a new library.
 */
#define MAPS_REREAD_YOUNG_NS 100000000ull
#define MAPS_REREAD_NS 1000000000ull

static void
free_maps(Process *p)
{
	for (int i = 0; i < p->nmaps; i++)
	{
		free(p->maps[i].file);
		free(p->maps[i].build_id);
	}
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

static void
free_process(Process *p)
{
	free_maps(p);
	free(p->labels);
	free(p->executable);
	free(p->comm);
	free(p);
}

/* Field 22 of /proc/PID/stat: start time in clock ticks after boot. */
static uint64_t
read_start_time(uint32_t pid)
{
	char		path[64];
	char	   *text;
	char	   *p;
	uint64_t	t = 0;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	text = read_file(path, NULL);
	if (text == NULL)
		return 0;
	/* comm may hold spaces and parentheses: fields restart after the last ')'. */
	p = strrchr(text, ')');
	if (p)
	{
		int			field = 2;

		for (; *p && field < 22; p++)
			if (*p == ' ')
				field++;
		t = strtoull(p, NULL, 10);
	}
	free(text);
	return t;
}

static char *
read_exe(uint32_t pid)
{
	char		path[64];
	char		target[4096];
	ssize_t		n;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return xstrdup("");
	target[n] = '\0';
	return xstrdup(target);
}

static void
read_maps(Process *p)
{
	char		path[64];
	FILE	   *f;
	char		line[4096 + 128];
	int			cap = 0;

	free_maps(p);
	p->maps_read_ns = now_monotonic_ns();
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f))
	{
		unsigned long long start, end, pgoff, ino;
		unsigned int major, minor;
		char		perms[8];
		int			consumed = 0;
		char	   *file;
		ExecMapping *m;
		char		open_path[4200];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms,
				   &pgoff, &major, &minor, &ino, &consumed) < 7)
			continue;
		if (perms[2] != 'x')
			continue;
		file = line + consumed;
		file[strcspn(file, "\n")] = '\0';
		if (p->nmaps == cap)
		{
			cap = cap ? cap * 2 : 16;
			p->maps = xrealloc(p->maps, cap * sizeof(ExecMapping));
		}
		m = &p->maps[p->nmaps++];
		m->start = start;
		m->end = end;
		m->pgoff = pgoff;
		m->dev = ((uint64_t) major << 32) | minor;
		m->ino = ino;
		m->is_file = file[0] == '/' && ino != 0;
		m->file = xstrdup(file[0] ? file : "[anon]");
		if (m->is_file)
		{
			process_open_path(p, m, open_path, sizeof(open_path));
			m->build_id = xstrdup(symbols_build_id(open_path, m->dev, m->ino));
		}
		else
			m->build_id = xstrdup("");
		m->mapping_id = parca_mapping_id(m->build_id, m->file);
	}
	fclose(f);
}

/*
 * The cgroup path that names the process best: the unified hierarchy's
 * when it is not the root, else the named systemd hierarchy's, else the
 * first non-root one.
 */
static char *
read_cgroup(uint32_t pid)
{
	char		path[64];
	char	   *text;
	char	   *best = NULL;
	int			best_rank = 0;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	text = read_file(path, NULL);
	if (text == NULL)
		return xstrdup("");
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
	{
		char	   *controllers = strchr(line, ':');
		char	   *cg = controllers ? strchr(controllers + 1, ':') : NULL;
		int			rank;

		if (cg == NULL || strcmp(cg + 1, "/") == 0)
			continue;
		if (strncmp(line, "0::", 3) == 0)
			rank = 3;
		else if (strncmp(controllers, ":name=systemd:", 14) == 0)
			rank = 2;
		else
			rank = 1;
		if (rank > best_rank)
		{
			best = cg + 1;
			best_rank = rank;
		}
	}
	best = xstrdup(best ? best : "");
	free(text);
	return best;
}

/* The last path component that is a .service (or else a .scope) unit. */
static void
systemd_unit(const char *cgroup, char *out, size_t outlen)
{
	const char *p = cgroup;

	out[0] = '\0';
	while (*p)
	{
		const char *end = strchr(p + 1, '/');
		size_t		len = end ? (size_t) (end - p) : strlen(p);
		const char *name = *p == '/' ? p + 1 : p;
		size_t		nlen = len - (size_t) (name - p);

		if (nlen > 8 && strncmp(name + nlen - 8, ".service", 8) == 0)
			snprintf(out, outlen, "%.*s", (int) nlen, name);
		else if (nlen > 6 && strncmp(name + nlen - 6, ".scope", 6) == 0 &&
				 (out[0] == '\0' || strstr(out, ".scope")))
			snprintf(out, outlen, "%.*s", (int) nlen, name);
		p += len;
	}
}

/* A run of 64 hex digits in the cgroup path (docker, containerd, podman). */
static void
container_id(const char *cgroup, char *out, size_t outlen)
{
	int			run = 0;

	out[0] = '\0';
	for (const char *p = cgroup;; p++)
	{
		if (*p && isxdigit((unsigned char) *p))
		{
			run++;
			continue;
		}
		if (run == 64)
		{
			snprintf(out, outlen, "%.*s", 64, p - 64);
			return;
		}
		run = 0;
		if (*p == '\0')
			return;
	}
}

static void
add_label(Buf *b, const char *name, const char *value)
{
	if (value == NULL || value[0] == '\0')
		return;
	if (b->len > 0)
		buf_append(b, ",", 1);
	buf_printf(b, "\"%s\":\"", name);
	buf_json_escape(b, value);
	buf_append(b, "\"", 1);
}

static Process *
read_process(uint32_t pid, const char *thread_comm)
{
	Process    *p = xcalloc(1, sizeof(Process));
	char		path[64];
	char	   *comm;
	char	   *cgroup;
	char		pidtext[16];
	char		unit[256];
	char		container[72];
	Buf			labels = {0};

	p->pid = pid;
	p->read_ns = now_monotonic_ns();
	p->comm = xstrdup(thread_comm);
	p->start_time = read_start_time(pid);
	p->executable = read_exe(pid);
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	comm = read_file(path, NULL);
	if (comm)
		comm[strcspn(comm, "\n")] = '\0';
	cgroup = read_cgroup(pid);
	systemd_unit(cgroup, unit, sizeof(unit));
	container_id(cgroup, container, sizeof(container));
	snprintf(pidtext, sizeof(pidtext), "%u", pid);

	add_label(&labels, "comm", comm ? comm : thread_comm);
	add_label(&labels, "pid", pidtext);
	add_label(&labels, "executable", p->executable);
	add_label(&labels, "cgroup", cgroup);
	add_label(&labels, "systemd_unit", unit);
	add_label(&labels, "container_id", container);
	buf_append(&labels, "", 1);
	p->labels = labels.data;
	free(comm);
	free(cgroup);

	if (p->executable[0] != '\0')
		read_maps(p);
	return p;
}

Process *
process_get(uint32_t pid, const char *thread_comm)
{
	Process    *p = u64map_get(&processes, pid);

	/*
	 * A thread named otherwise than when the process was read may belong
	 * to a new program the process exec'd: read it again now, or the
	 * samples of a short-lived program would meet the old mappings.
	 */
	if (p != NULL && strcmp(thread_comm, p->comm) != 0)
	{
		char	   *exe = read_exe(pid);

		if (strcmp(exe, p->executable) != 0)
		{
			free_process(u64map_remove(&processes, pid));
			p = NULL;
		}
		else
		{
			free(p->comm);
			p->comm = xstrdup(thread_comm);
		}
		free(exe);
	}
	if (p == NULL)
	{
		p = read_process(pid, thread_comm);
		u64map_put(&processes, pid, p);
	}
	p->seen = true;
	return p;
}

static const ExecMapping *
find_in(const Process *p, uint64_t addr)
{
	for (int i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

const ExecMapping *
process_find_mapping(Process *p, uint64_t addr)
{
	const ExecMapping *m = find_in(p, addr);

	if (m == NULL && p->executable[0] != '\0' &&
		now_monotonic_ns() - p->maps_read_ns >=
		(now_monotonic_ns() - p->read_ns < 1000000000ull ?
		 MAPS_REREAD_YOUNG_NS : MAPS_REREAD_NS))
	{
		read_maps(p);
		m = find_in(p, addr);
	}
	return m;
}

void
process_open_path(const Process *p, const ExecMapping *m, char *buf, size_t buflen)
{
	/* Through the process's root, so files in containers open too. */
	snprintf(buf, buflen, "/proc/%u/root%s", p->pid, m->file);
	if (access(buf, R_OK) != 0)
		snprintf(buf, buflen, "/proc/%u/map_files/%llx-%llx", p->pid,
				 (unsigned long long) m->start, (unsigned long long) m->end);
}

void
process_sweep(void)
{
	size_t		pos = 0;
	uint64_t	pid;
	void	   *v;
	uint32_t   *gone = xcalloc(processes.count, sizeof(uint32_t));
	size_t		ngone = 0;

	while (u64map_next(&processes, &pos, &pid, &v))
	{
		Process    *p = v;
		bool		keep = p->seen;
		uint64_t	start_time = keep ? read_start_time(p->pid) : 0;

		/*
		 * A process that exited is kept one more interval: its last samples
		 * may still be in the ring.  Another start time is another process.
		 */
		if (start_time != 0 && start_time != p->start_time)
			keep = false;
		if (keep && start_time != 0)
		{
			char	   *exe = read_exe(p->pid);

			keep = strcmp(exe, p->executable) == 0;
			free(exe);
		}
		p->seen = false;
		if (!keep)
			gone[ngone++] = p->pid;
	}
	for (size_t i = 0; i < ngone; i++)
		free_process(u64map_remove(&processes, gone[i]));
	free(gone);
}
