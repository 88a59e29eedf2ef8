/*
 * sample.h
 *		The record the BPF program sends to the agent for each sample.
 *
 * Shared by bpf/profile.bpf.c and the agent, so it uses only fixed-width
 * types that both vmlinux.h and <stdint.h> provide under these names.
 */
#ifndef PARCA_BPF_SAMPLE_H
#define PARCA_BPF_SAMPLE_H

/* Deepest kernel stack kept (the kernel's perf_event_max_stack default). */
#define SAMPLE_MAX_KERNEL_FRAMES 127
/* Deepest user stack kept; a deeper one is marked truncated. */
#define SAMPLE_MAX_USER_FRAMES 127

/* How the frame-pointer walk of the user stack ended. */
#define UNWIND_END_CLEAN	0	/* reached a zero frame pointer or return address */
#define UNWIND_END_BROKEN	1	/* frame pointer out of order, misaligned or unreadable */
#define UNWIND_END_DEPTH	2	/* SAMPLE_MAX_USER_FRAMES reached */
#define UNWIND_END_NONE		3	/* no user stack: kernel thread or idle */

/*
 * Most bytes of the user stack copied with a sample, from the stack
 * pointer up, for the agent's CFI unwinder (agent/unwind.c).  A power of 2.
 */
#define SAMPLE_STACK_COPY	16384

struct parca_sample
{
	__u32		pid;			/* process (tgid) */
	__u32		tid;			/* thread */
	__u32		cpu;
	__u32		unwind_end;		/* UNWIND_END_* */
	__u32		nkernel;		/* frames in kstack */
	__u32		nuser;			/* frames in ustack */
	char		comm[16];		/* the thread's name */
	__u64		kstack[SAMPLE_MAX_KERNEL_FRAMES];	/* leaf first */
	__u64		ustack[SAMPLE_MAX_USER_FRAMES]; /* leaf first: pc, then return addresses */
	/* The user registers and the copy of the stack that follows the record. */
	__u64		uip;
	__u64		usp;
	__u64		ubp;
	__u32		stack_len;		/* bytes copied from usp up (0: none) */
	__u32		pad;
	/* __u8 stack[stack_len] follows */
};

/* Indexes of the BPF program's per-CPU counters. */
#define COUNTER_SAMPLES		0	/* samples sent */
#define COUNTER_LOST		1	/* samples lost: ring buffer full */
#define COUNTER_IDLE		2	/* idle samples skipped */
#define NCOUNTERS			3

#endif							/* PARCA_BPF_SAMPLE_H */
