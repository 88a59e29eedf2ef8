/*
 * jit.h
 *		Naming the frames of JIT-compiled code: code in a process's
 *		anonymous executable memory is looked up in the perf map the
 *		runtime writes (/tmp/perf-PID.map in the process's own root, read
 *		incrementally, bounded per process) or in the jitdump file it maps
 *		(jitdump.h); code neither names, in a
 *		known runtime (Node.js, Java, .NET, Erlang, CPython), is one frame
 *		per process and kind ("[node JIT]"), not a location per address.
 *		JVMs (libjvm.so mapped) are asked for their perf map through their
 *		attach mechanism (java_attach.h), and whether they keep frame
 *		pointers in compiled code (-XX:+PreserveFramePointer): without,
 *		their stacks are cut below the first JIT frame and labelled.
 *		See docs/agent.md, "JIT-compiled code".
 */
#ifndef AGENT_JIT_H
#define AGENT_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process.h"

/* Most bytes one process's map may take in the agent's memory. */
#define JIT_TABLE_MAX_BYTES (2 * 1024 * 1024)

/* At start: whether JVMs are asked for their perf maps. */
extern void jit_init(bool java_perfmap);

/* At exit: stop asking JVMs (the request under way is finished). */
extern void jit_stop(void);

/* What jit_location found. */
typedef enum JitFrameKind
{
	JIT_NOT_JIT,				/* not JIT code the agent names: the usual location */
	JIT_NAMED,					/* code its map names */
	JIT_UNNAMED					/* a known runtime's code no map names: "[node JIT]" */
} JitFrameKind;

/*
 * The location of the frame at pc (a pc, or a return address minus one)
 * in mapping m, in *location_id unless m is not JIT code.  Consecutive
 * JIT_UNNAMED frames are one frame for the caller to keep (a runtime's
 * unnamed code, however deep its recursion, costs one frame).
 */
extern JitFrameKind jit_location(Process *p, const ExecMapping *m, uint64_t pc,
								 uint64_t *location_id);

/*
 * Is the process a JVM whose compiled code is not known to keep frame
 * pointers?  Then nothing below its JIT frames is right: its stack ends
 * after the first.
 */
extern bool jit_cut_after_jit_frame(const Process *p);

/*
 * The value of the label java_frame_pointers for the process's samples:
 * "false" for a JVM known to run without -XX:+PreserveFramePointer, NULL
 * (no label) otherwise.
 */
extern const char *jit_java_frame_pointers_label(const Process *p);

/* What a process's JIT state holds (p->jit may be NULL). */
extern void jit_free(struct ProcessJit *j);

/* Bytes all processes' JIT tables hold now. */
extern size_t jit_bytes(void);

#endif							/* AGENT_JIT_H */
