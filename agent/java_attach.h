/*
 * java_attach.h
 *		Asking a HotSpot JVM (JDK 17 and later) for its perf map and its
 *		flags through its own attach mechanism, as jcmd does: a file
 *		.attach_pid<PID> in its /tmp and SIGQUIT make it open the UNIX
 *		socket /tmp/.java_pid<PID>, on which a request names a diagnostic
 *		command (Compiler.perfmap: write /tmp/perf-<PID>.map; VM.flags).
 *
 * The requests are carried out by a thread of their own (a JVM may take
 * a second to open its socket, and writing its map takes what its code
 * cache takes), one at a time, in the JVM's file system (/proc/PID/root),
 * with PID its pid in its own namespace.  The attach file is given to the
 * JVM's effective user and group (the JVM ignores one of anyone else's);
 * the agent connects as root, which the JVM accepts as it accepts its own
 * user.  The socket is used only if it is one, owned by that user.
 * SIGQUIT is sent only to a process that catches it (the JVM's handler:
 * a JVM run with -Xrs would dump core), through a pidfd checked against
 * the process's start time, so that a reused pid gets nothing.
 */
#ifndef AGENT_JAVA_ATTACH_H
#define AGENT_JAVA_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct JavaAttachRequest
{
	uint32_t	pid;
	uint32_t	nspid;			/* its pid in its own namespace */
	uint64_t	start_ticks;	/* /proc/PID/stat's start time */
	uid_t		euid;
	gid_t		egid;
	bool		want_flags;		/* VM.flags too */
} JavaAttachRequest;

typedef struct JavaAttachResult
{
	uint32_t	pid;
	uint64_t	start_ticks;
	int			frame_pointers; /* -XX:+PreserveFramePointer: 1, 0, or -1 unknown */
	bool		perf_map;		/* Compiler.perfmap succeeded */
	char		error[160];		/* why not, "" if it did */
} JavaAttachResult;

/* The start time of a process (/proc/PID/stat), 0 if it is gone. */
extern uint64_t java_attach_start_ticks(uint32_t pid);

/* Queue a request (false if too many wait); starts the thread. */
extern bool java_attach_request(const JavaAttachRequest *req);

/* A result, if one is ready. */
extern bool java_attach_result(JavaAttachResult *out);

/* Stop the thread (at exit): the request under way is finished first. */
extern void java_attach_stop(void);

#endif							/* AGENT_JAVA_ATTACH_H */
