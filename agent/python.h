/*
 * python.h
 *		CPython's frames: which processes run a CPython interpreter the
 *		agent can read (3.11 and 3.12), registering them with the BPF
 *		program, and naming the Python frames their samples carry
 *		(module.function, file and line, read from the code objects in the
 *		process's memory).  See docs/agent.md, "Python".
 */
#ifndef AGENT_PYTHON_H
#define AGENT_PYTHON_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process.h"
#include "sample.h"
#include "sampler.h"

/*
 * A frame of the process's is in mapping m: if m is its executable or a
 * libpython not looked at yet, find out whether it is a CPython
 * interpreter; if so, register the process with the BPF program when its
 * version is one the agent reads, and log either way.
 */
extern void python_check(Sampler *sampler, Process *p, const ExecMapping *m);

/*
 * Is the frame at offset in mapping m (a pc, or a return address minus
 * one) in the interpreter's evaluation function (_PyEval_EvalFrameDefault),
 * which runs the Python frames of one call of it?
 */
extern bool python_is_eval_frame(const Process *p, const ExecMapping *m, uint64_t offset);

/*
 * Append to frames (at *n) the locations of the sample's Python frames
 * from *next on: those one evaluation call ran (up to its entry frame),
 * or with all, every one left.  *next moves past them.
 */
extern void python_add_frames(Process *p, const struct parca_sample *s, int *next, bool all,
							  uint64_t *frames, int *n);

/* At a flush: bound the cache of code objects read to max_bytes. */
extern void python_trim(size_t max_bytes);

/* Bytes that cache holds now. */
extern size_t python_cache_bytes(void);

#endif							/* AGENT_PYTHON_H */
