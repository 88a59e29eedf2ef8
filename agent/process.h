/*
 * process.h
 *		What the agent knows about each sampled process: its executable
 *		mappings (with build ids) and its labels.
 *
 * Read from /proc when a process is first sampled, while it still runs,
 * and again at once when it exec'd another program (noticed by a thread
 * name that changed); the mappings are read again when a sample lands
 * outside them (a library loaded since), at most every 100 ms during the
 * first second after the process was read, every second afterwards.
 * Processes not sampled since the previous sweep are forgotten, as are
 * those whose pid was reused or that exec'd another program.
 */
#ifndef AGENT_PROCESS_H
#define AGENT_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ExecMapping
{
	uint64_t	start;
	uint64_t	end;
	uint64_t	pgoff;
	uint64_t	dev;
	uint64_t	ino;
	char	   *file;			/* as /proc/PID/maps names it */
	char	   *build_id;		/* hex or "" */
	uint64_t	mapping_id;		/* parca_mapping_id(build_id, file) */
	bool		is_file;		/* a file we can open (not [vdso], anonymous) */
} ExecMapping;

typedef struct Process
{
	uint32_t	pid;
	char	   *labels;			/* JSON members: "comm":"...","pid":"...",... */
	char	   *executable;		/* "" for kernel threads */
	char	   *comm;			/* name of the last sampled thread */
	uint64_t	start_time;		/* from /proc/PID/stat, to notice pid reuse */
	ExecMapping *maps;
	int			nmaps;
	uint64_t	maps_read_ns;
	uint64_t	read_ns;		/* when the process was first read */
	bool		seen;			/* sampled since the last sweep */
} Process;

/* The process, read from /proc on first sight; thread_comm is a fallback. */
extern Process *process_get(uint32_t pid, const char *thread_comm);

/* The executable mapping containing addr, or NULL. */
extern const ExecMapping *process_find_mapping(Process *p, uint64_t addr);

/* A path through which the agent can open the mapping's file. */
extern void process_open_path(const Process *p, const ExecMapping *m,
							  char *buf, size_t buflen);

/* Forget processes not sampled since the last sweep, exited or reused. */
extern void process_sweep(void);

#endif							/* AGENT_PROCESS_H */
