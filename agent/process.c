/*
 * process.c
 *		Per-process labels and mappings; see process.h.
 */
#include "process.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "jit.h"
#include "postgres.h"
#include "ids/ids.h"
#include "util.h"

/*
 * PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): the mapping that
 * covers an address, without formatting the whole maps file.  Declared
 * here because the build machine's headers may predate it.
 */
struct procmap_query
{
	__u64		size;
	__u64		query_flags;
	__u64		query_addr;
	__u64		vma_start;
	__u64		vma_end;
	__u64		vma_flags;
	__u64		vma_page_size;
	__u64		vma_offset;
	__u64		inode;
	__u32		dev_major;
	__u32		dev_minor;
	__u32		vma_name_size;
	__u32		build_id_size;
	__u64		vma_name_addr;
	__u64		build_id_addr;
};

#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define CGROUP2_SUPER_MAGIC 0x63677270

/*
 * Without PROCMAP_QUERY, how soon the whole maps file may be read again:
 * often during a program's first second, while its libraries appear one by
 * one (a short-lived program must be caught then), rarely afterwards, when
 * a pc outside them is more likely garbage from a failed unwind than a new
 * library.
 */
#define MAPS_REREAD_YOUNG_NS 100000000ull
#define MAPS_REREAD_NS 1000000000ull

/*
 * With PROCMAP_QUERY, how many executable mappings a process's first
 * listing takes (a few dozen in most programs; past these, one is asked
 * for when an address needs it), so that a process that made tens of
 * thousands of them costs no more than this at first sight.
 */
#define MAPS_LISTED_MAX 1024

static U64Map processes;		/* pid -> Process */
static bool have_procmap_query;
static bool unified_cgroups;	/* cgroup v2 only: the sample's cgroup id names it */
static StrCache exe_paths;		/* hash(exe dev, ino) -> path */
static StrCache cgroups;		/* cgroup id -> "path\0unit\0container id" */

void
process_init(void)
{
	struct statfs fs;

	unified_cgroups = statfs("/sys/fs/cgroup", &fs) == 0 &&
		(unsigned long) fs.f_type == CGROUP2_SUPER_MAGIC;
	/* Asked of our own maps: a kernel without it says ENOTTY. */
	{
		int			fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE,
			.query_addr = (uintptr_t) process_init,
		};

		have_procmap_query = fd >= 0 && ioctl(fd, PROCMAP_QUERY, &q) == 0;
		if (fd >= 0)
			close(fd);
	}
}

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
	p->nmaps = p->maps_cap = 0;
}

static void
free_process(Process *p)
{
	free_maps(p);
	if (p->maps_fd >= 0)
		close(p->maps_fd);
	free(p->comm);
	free(p->executable);
	free(p->cgroup);
	free(p->systemd_unit);
	free(p->container_id);
	free(p->python);
	jit_free(p->jit);
	postgres_free(p->postgres);
	free(p);
}

/* The path of the process's executable, shared by its other processes. */
static char *
executable_path(const struct parca_sample *s)
{
	uint64_t	k[2] = {s->exe_dev, s->exe_ino};
	uint64_t	key = parca_hash64(k, sizeof(k));
	const char *path;
	char		link[64];
	char		target[4096];
	ssize_t		n;

	if (s->exe_ino == 0)
		return xstrdup("");
	if ((path = strcache_get(&exe_paths, key)) != NULL)
		return xstrdup(path);
	snprintf(link, sizeof(link), "/proc/%u/exe", s->pid);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return xstrdup("");
	return xstrdup(strcache_put(&exe_paths, key, target, (size_t) n));
}

/*
 * The cgroup path that names the process best: the unified hierarchy's
 * when it is not the root, else the named systemd hierarchy's, else the
 * first non-root one ("" for the root); NULL if the process is gone.
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
		return NULL;
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
set_cgroup_labels(Process *p, const char *cgroup, const char *unit, const char *container)
{
	p->cgroup = xstrdup(cgroup);
	p->systemd_unit = xstrdup(unit);
	p->container_id = xstrdup(container);
}

/*
 * The cgroup labels: with a unified cgroup tree only, the sample's cgroup
 * id names the cgroup, so processes in the same one share a read of
 * /proc/PID/cgroup; with v1 hierarchies, each process is read.
 */
static void
read_cgroup_labels(Process *p, const struct parca_sample *s)
{
	const char *cached = unified_cgroups ? strcache_get(&cgroups, s->cgroup_id) : NULL;
	char	   *cgroup;
	char		unit[256];
	char		container[72];

	/* (kernel threads are in the root cgroup) */
	if (s->exe_ino == 0 || (cached == NULL && (cgroup = read_cgroup(s->pid)) == NULL))
	{
		set_cgroup_labels(p, "", "", "");
		return;
	}
	if (cached)
	{
		const char *u = cached + strlen(cached) + 1;

		set_cgroup_labels(p, cached, u, u + strlen(u) + 1);
		return;
	}
	systemd_unit(cgroup, unit, sizeof(unit));
	container_id(cgroup, container, sizeof(container));
	set_cgroup_labels(p, cgroup, unit, container);
	if (unified_cgroups)
	{
		Buf			b = {0};

		buf_append(&b, cgroup, strlen(cgroup) + 1);
		buf_append(&b, unit, strlen(unit) + 1);
		buf_append(&b, container, strlen(container));
		strcache_put(&cgroups, s->cgroup_id, b.data, b.len);
		buf_free(&b);
	}
	free(cgroup);
}

/* The process's name in the sample, as a C string in comm. */
static void
sample_process_comm(const struct parca_sample *s, char comm[sizeof(s->process_comm) + 1])
{
	memcpy(comm, s->process_comm, sizeof(s->process_comm));
	comm[sizeof(s->process_comm)] = '\0';
}

static Process *
new_process(const struct parca_sample *s)
{
	Process    *p = xcalloc(1, sizeof(Process));
	char		comm[sizeof(s->process_comm) + 1];

	sample_process_comm(s, comm);
	p->pid = s->pid;
	p->start_time = s->start_time;
	p->exe_ino = s->exe_ino;
	p->exe_dev = s->exe_dev;
	p->maps_fd = -1;
	p->read_ns = now_monotonic_ns();
	p->comm = xstrdup(comm);
	p->executable = executable_path(s);
	read_cgroup_labels(p, s);
	return p;
}

Process *
process_get(const struct parca_sample *s)
{
	Process    *p = u64map_get(&processes, s->pid);

	if (p != NULL && (p->start_time != s->start_time || p->exe_ino != s->exe_ino ||
					  p->exe_dev != s->exe_dev))
	{
		free_process(u64map_remove(&processes, s->pid));
		p = NULL;
	}
	if (p == NULL)
	{
		p = new_process(s);
		u64map_put(&processes, s->pid, p);
	}
	else if (strncmp(p->comm, s->process_comm, sizeof(s->process_comm)) != 0)
	{
		/*
		 * Renamed (PR_SET_NAME), or seen first within its exec, after the
		 * new executable was mapped and before the kernel gave it its name
		 * (perf's child, "perf-exec", labelled a whole run that way): the
		 * label is the name it has now.
		 */
		char		comm[sizeof(s->process_comm) + 1];

		sample_process_comm(s, comm);
		free(p->comm);
		p->comm = xstrdup(comm);
	}
	p->seen = true;
	return p;
}

/* Insert a mapping (file as the kernel names it), keeping maps sorted. */
static void
add_mapping(Process *p, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t dev,
			uint64_t ino, const char *file)
{
	int			i = p->nmaps;
	ExecMapping *m;

	if (p->nmaps == p->maps_cap)
	{
		p->maps_cap = p->maps_cap ? p->maps_cap * 2 : 8;
		p->maps = xrealloc(p->maps, p->maps_cap * sizeof(ExecMapping));
	}
	while (i > 0 && p->maps[i - 1].start > start)
	{
		p->maps[i] = p->maps[i - 1];
		i--;
	}
	m = &p->maps[i];
	p->nmaps++;
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->dev = dev;
	m->ino = ino;
	m->is_file = file[0] == '/' && ino != 0;
	m->file = xstrdup(file[0] ? file : "[anon]");
	m->build_id = NULL;
	m->mapping_id = 0;
}

static bool
open_maps(Process *p)
{
	char		path[64];

	if (p->maps_fd < 0 && !p->gone)
	{
		snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
		p->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
		p->gone = p->maps_fd < 0;
	}
	return p->maps_fd >= 0;
}

/*
 * Ask the kernel for the executable mapping covering addr or, if or_next,
 * the first one above it when none does; its end, 0 if there is none.
 */
static uint64_t
query_mapping(Process *p, uint64_t addr, bool or_next)
{
	char		name[4096];
	struct procmap_query q = {
		.size = sizeof(q),
		.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE |
		(or_next ? PROCMAP_QUERY_COVERING_OR_NEXT_VMA : 0),
		.query_addr = addr,
		.vma_name_addr = (uintptr_t) name,
		.vma_name_size = sizeof(name),
	};

	if (!open_maps(p) || ioctl(p->maps_fd, PROCMAP_QUERY, &q) != 0)
		return 0;
	if (q.vma_name_size == 0)
		name[0] = '\0';
	add_mapping(p, q.vma_start, q.vma_end, q.vma_offset,
				((uint64_t) q.dev_major << 32) | q.dev_minor, q.inode, name);
	return q.vma_end;
}

/*
 * The process's executable mappings as they are now, up to
 * MAPS_LISTED_MAX of them: a sample handled after the process exited
 * (one in its last 200 ms, see sampler_poll) finds them even in a file
 * none of its earlier samples ran through.
 */
static void
list_mappings(Process *p)
{
	uint64_t	addr = 0;

	p->maps_read_ns = now_monotonic_ns();
	for (int i = 0; i < MAPS_LISTED_MAX; i++)
	{
		uint64_t	end = query_mapping(p, addr, true);

		if (end <= addr)
			break;
		addr = end;
	}
}

static const char *
parse_hex(const char *s, uint64_t *v)
{
	*v = 0;
	for (; isxdigit((unsigned char) *s); s++)
		*v = (*v << 4) | (uint64_t) (isdigit((unsigned char) *s) ? *s - '0' :
									 (tolower((unsigned char) *s) - 'a' + 10));
	return s;
}

/*
 * Without PROCMAP_QUERY: read the executable mappings from the maps file,
 * lines like "7f..-7f.. r-xp 00001000 08:01 1234   /usr/lib/x.so".
 */
static void
read_maps(Process *p)
{
	char	   *text;
	char		path[64];

	free_maps(p);
	p->maps_read_ns = now_monotonic_ns();
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	if ((text = read_file(path, NULL)) == NULL)
	{
		p->gone = true;
		return;
	}
	for (char *line = text, *next; *line; line = next)
	{
		uint64_t	start, end, pgoff, major, minor, ino;
		const char *c;
		const char *perms;

		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		if (next > line && next[-1] == '\n')
			next[-1] = '\0';
		c = parse_hex(line, &start);
		if (*c++ != '-')
			continue;
		c = parse_hex(c, &end);
		if (*c++ != ' ')
			continue;
		perms = c;
		if (strlen(perms) < 5 || perms[2] != 'x')
			continue;
		c = parse_hex(perms + 5, &pgoff);
		c = parse_hex(c + 1, &major);
		c = parse_hex(c + 1, &minor);
		ino = strtoull(c, (char **) &c, 10);
		while (*c == ' ')
			c++;
		add_mapping(p, start, end, pgoff, (major << 32) | minor, ino, c);
	}
	free(text);
}

static ExecMapping *
find_in(Process *p, uint64_t addr)
{
	int			lo = 0;
	int			hi = p->nmaps;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && addr < p->maps[lo - 1].end ? &p->maps[lo - 1] : NULL;
}

const ExecMapping *
process_find_mapping(Process *p, uint64_t addr)
{
	ExecMapping *m = find_in(p, addr);

	if (m == NULL && p->exe_ino != 0 && !p->gone)
	{
		uint64_t	now = now_monotonic_ns();

		if (have_procmap_query)
		{
			if (p->maps_read_ns == 0)
				list_mappings(p);
			/* mapped since, or past the listing's first MAPS_LISTED_MAX */
			if (find_in(p, addr) == NULL)
				query_mapping(p, addr, false);
		}
		else if (p->maps_read_ns == 0 ||
				 now - p->maps_read_ns >= (now - p->read_ns < 1000000000ull ?
										   MAPS_REREAD_YOUNG_NS : MAPS_REREAD_NS))
			read_maps(p);
		m = find_in(p, addr);
	}
	if (m != NULL && m->build_id == NULL)
	{
		ObjFile    *f = process_objfile(p, m);

		m->build_id = xstrdup(f ? objfile_build_id(f) : "");
		m->mapping_id = parca_mapping_id(m->build_id, m->file);
	}
	return m;
}

ObjFile *
process_executable(const Process *p)
{
	/* The kernel's dev_t (major << 20 | minor) as the maps file shows it. */
	uint64_t	dev = ((uint64_t) (p->exe_dev >> 20) << 32) | (p->exe_dev & 0xfffff);

	if (p->exe_ino == 0 || p->executable[0] != '/')
		return NULL;
	return objfile_get(dev, p->exe_ino, p->pid, p->executable, 0, 0);
}

ObjFile *
process_objfile(const Process *p, const ExecMapping *m)
{
	if (!m->is_file)
		return NULL;
	return objfile_get(m->dev, m->ino, p->pid, m->file, m->start, m->end);
}

void
process_done(Process *p)
{
	if (p->maps_fd >= 0)
	{
		close(p->maps_fd);
		p->maps_fd = -1;
	}
}

size_t
process_count(void)
{
	return processes.count;
}

/* Not sampled since the last sweep (and marked for the next one). */
static bool
process_unseen(void *v, void *arg)
{
	Process    *p = v;
	bool		unseen = !p->seen;

	p->seen = false;
	return unseen;
}

static void
process_free_value(void *v, void *arg)
{
	free_process(v);
}

void
process_sweep(size_t max_bytes)
{
	/*
	 * A process not sampled since the last sweep is forgotten; one that
	 * exited is kept one more interval this way, for its last samples may
	 * still be in the ring.
	 */
	u64map_remove_if(&processes, process_unseen, process_free_value, NULL);
	strcache_trim(&exe_paths, max_bytes / 2);
	strcache_trim(&cgroups, max_bytes / 2);
}
