/*
 * jitdump.h
 *		Reading a jitdump file (jit-PID.dump), the binary log of JIT code
 *		that perf's jitdump.h specifies and V8 (--perf-prof) and JVM agents
 *		write: JIT_CODE_LOAD records (the code's address, size and name),
 *		JIT_CODE_DEBUG_INFO (source lines of the code loaded next),
 *		JIT_CODE_MOVE (code moved).  A process that writes one maps it, so
 *		that perf finds it in its mappings; the agent finds it there too.
 *
 * Read incrementally, as the file grows, in the byte order of this
 * machine (a file in the other order, or whose header or records do not
 * hold together, is given up).
 */
#ifndef AGENT_JITDUMP_H
#define AGENT_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jit_table.h"

typedef struct JitdumpReader
{
	uint64_t	offset;			/* of the next record; 0: the header */
	bool		broken;			/* not read further */
	/* the last JIT_CODE_DEBUG_INFO, for the load of its code */
	uint64_t	debug_addr;
	uint32_t	ndebug;
	JitLine    *debug;
	char	   *debug_file;
} JitdumpReader;

/*
 * Read into t the records of the dump open at fd beyond what r has read,
 * at most max_read bytes of it now.  Returns whether t changed.
 */
extern bool jitdump_read(JitdumpReader *r, int fd, JitTable *t, size_t max_read);

/* Free what r holds. */
extern void jitdump_reader_free(JitdumpReader *r);

#endif							/* AGENT_JITDUMP_H */
