/*
 * process.h
 *		What the agent knows about each sampled process: its labels and the
 *		executable mappings its samples have needed so far.
 *
 * A process is known by its pid and the identity each sample carries
 * (start time and executable, from the BPF program): a sample of the same
 * pid with another identity is another process (the pid was reused, or
 * the process exec'd), so nothing has to be read from /proc to notice.
 * Its labels come from the sample (the process's name), from caches
 * shared by the processes of the same executable (its path) or cgroup,
 * and from /proc only on a cache miss.  Mappings are looked up one at a
 * time, when a sample needs the one holding an address (PROCMAP_QUERY on
 * /proc/PID/maps, Linux 6.11; older kernels read the whole maps file).
 * Processes not sampled since the previous sweep are forgotten.
 */
#ifndef AGENT_PROCESS_H
#define AGENT_PROCESS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objfile.h"
#include "sample.h"

typedef struct ExecMapping
{
	uint64_t	start;
	uint64_t	end;
	uint64_t	pgoff;
	uint64_t	dev;			/* major << 32 | minor */
	uint64_t	ino;
	char	   *file;			/* as the kernel names it */
	bool		is_file;		/* a file we can open (not [vdso], anonymous) */
	char	   *build_id;		/* hex or "", NULL until process_find_mapping */
	uint64_t	mapping_id;		/* parca_mapping_id(build_id, file): likewise */
} ExecMapping;

typedef struct Process
{
	uint32_t	pid;
	uint64_t	start_time;		/* identity, from the samples */
	uint64_t	exe_ino;
	uint32_t	exe_dev;
	char	   *comm;			/* the process's name */
	char	   *executable;		/* "" for kernel threads */
	char	   *cgroup;			/* the cgroup's path, "" if unknown */
	char	   *systemd_unit;
	char	   *container_id;
	ExecMapping *maps;			/* sorted by start */
	int			nmaps;
	int			maps_cap;
	int			maps_fd;		/* /proc/PID/maps while a sample is handled */
	bool		gone;			/* its /proc entry could not be opened */
	uint64_t	maps_read_ns;	/* the last full read or listing, 0: none */
	uint64_t	read_ns;		/* when the process was first seen */
	bool		seen;			/* sampled since the last sweep */
	bool		go_checked;		/* whether it is a Go program was asked */
	struct ProcessPython *python;	/* agent/python.c's, NULL until a frame is looked at */
	struct ProcessJit *jit;		/* agent/jit.c's, NULL until a JIT frame is met */
	struct ProcessPostgres *postgres;	/* agent/postgres.c's, NULL until looked at */
} Process;

/* Find out whether this kernel has PROCMAP_QUERY and a unified cgroup tree. */
extern void process_init(void);

/* The sample's process, created on first sight. */
extern Process *process_get(const struct parca_sample *s);

/*
 * The executable mapping containing addr (looked up now if not known
 * yet), with its build id, or NULL.
 */
extern const ExecMapping *process_find_mapping(Process *p, uint64_t addr);

/* The process's executable file, or NULL for a kernel thread. */
extern ObjFile *process_executable(const Process *p);

/* The mapping's file, or NULL if it is not a file. */
extern ObjFile *process_objfile(const Process *p, const ExecMapping *m);

/* The sample is handled: let go of what was opened for it. */
extern void process_done(Process *p);

/* How many processes are known now. */
extern size_t process_count(void);

/*
 * Forget the processes not sampled since the last sweep, and trim the
 * shared label caches to max_bytes.
 */
extern void process_sweep(size_t max_bytes);

#endif							/* AGENT_PROCESS_H */
