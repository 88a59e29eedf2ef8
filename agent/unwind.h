/*
 * unwind.h
 *		Unwinding a user stack from the call frame information (.eh_frame)
 *		of the code it runs through, on the copy of the stack and the
 *		registers the BPF program sends with each sample.
 *
 * This is what makes stacks of code built without frame pointers (most of
 * a Linux distribution) correct; see docs/agent.md, "Unwinding".
 */
#ifndef AGENT_UNWIND_H
#define AGENT_UNWIND_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "process.h"
#include "sample.h"

typedef enum UnwindOutcome
{
	UNWIND_COMPLETE,			/* reached the stack's bottom (its CFI says so) */
	UNWIND_TRUNCATED,			/* cut at the depth limit or the copy's end */
	UNWIND_FAILED				/* could not go on: no CFI, bad value, ... */
} UnwindOutcome;

/* Is this (symbol table) name a function where stacks begin? */
extern bool unwind_is_bottom(const char *name);

/* The label value naming an outcome: "complete", "truncated", "failed". */
extern const char *unwind_outcome_name(UnwindOutcome outcome);

/*
 * Unwind the sample's user stack (its registers and the stack_len bytes of
 * stack that follow it) through the process's mappings.  Stores at most
 * max code addresses in pcs, leaf first: the sampled pc, then the calls
 * (return addresses minus one; a signal trampoline's own address and the
 * exact pc where the signal struck), their number in *npcs, and says how
 * the walk ended.
 */
extern UnwindOutcome unwind_stack(Process *p, const struct parca_sample *s,
								  uint64_t *pcs, int max, int *npcs);

#endif							/* AGENT_UNWIND_H */
