/*
 * profile.bpf.c
 *		The agent's BPF program: one sample per perf event (a software
 *		cpu-clock event per online CPU), sent to user space through a ring
 *		buffer.
 *
 * Each sample carries pid, tid, the thread's comm, the kernel stack
 * (bpf_get_stack) and the user stack walked here through frame pointers.
 * The walk is validated at every step: frame pointers must be 8-aligned,
 * strictly increasing and above the stack pointer, and readable; a walk
 * that fails one of these ends "broken" so the agent marks the stack
 * truncated instead of storing what follows.  With the registers, up to
 * SAMPLE_STACK_COPY bytes of the user stack follow the record, so that the
 * agent can unwind code built without frame pointers from its CFI (the
 * section "Stack copy" below).  Aggregation happens in user
 * space: at 19 Hz per CPU a ring buffer carries a few dozen records a
 * second, and streaming lets the agent read a new process's mappings
 * while it still runs: the first sample of a process wakes it at once
 * (see docs/agent.md).
 *
 * CO-RE: built against a vmlinux.h generated from the build machine's BTF,
 * relocated by libbpf on the machine it runs on.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "sample.h"

char		LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the agent before loading. */
const volatile bool report_idle = false;
const volatile bool copy_stack = true;	/* false: --frame-pointers-only */

/* Wake the agent only when this much data waits (it also polls). */
const volatile __u64 wakeup_bytes = 64 * 1024;

struct
{
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);	/* resized by the agent */
}			samples SEC(".maps");

/*
 * Processes sampled recently.  A sample of a process not in here wakes the
 * agent at once, so that it reads the process's mappings from /proc
 * before a short-lived process exits.
 */
struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
}			known_pids SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
}			counters SEC(".maps");

/* ---- Stack copy (for the agent's CFI unwinder, agent/unwind.c) ---- */

/*
 * The record is built here, then copied into the ring with the length of
 * stack actually read.  Room for 1.5 copies: the halving reads below
 * write at most SAMPLE_STACK_COPY / 2 bytes past an offset below
 * SAMPLE_STACK_COPY, which the verifier has to see.
 */
struct sample_buf
{
	struct parca_sample s;
	__u8		stack[SAMPLE_STACK_COPY + SAMPLE_STACK_COPY / 2];
};

struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_buf);
}			scratch SEC(".maps");

/*
 * Copy the user stack from sp up: all SAMPLE_STACK_COPY bytes if they are
 * readable, else the longest readable prefix (the stack's top may be
 * nearer), found by reading halves, quarters, ... down to 64 bytes.
 */
static __always_inline void
copy_user_stack(struct sample_buf *b, __u64 sp)
{
	__u32		len = 0;

	if (bpf_probe_read_user(b->stack, SAMPLE_STACK_COPY, (void *) sp) == 0)
		len = SAMPLE_STACK_COPY;
	else
	{
#pragma unroll
		for (int k = 1; k <= 8; k++)
		{
			__u32		off = len & (SAMPLE_STACK_COPY - 1);

			if (bpf_probe_read_user(b->stack + off, SAMPLE_STACK_COPY >> k,
									(void *) (sp + off)) == 0)
				len = off + (SAMPLE_STACK_COPY >> k);
		}
	}
	b->s.stack_len = len;
}

/* ---- End of stack copy ---- */

static __always_inline void
count(__u32 which)
{
	__u64	   *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/* Walk the user stack from (ip, sp, bp) through saved frame pointers. */
static __always_inline void
unwind_user(struct parca_sample *s, __u64 ip, __u64 sp, __u64 bp)
{
	__u64		fp = bp;
	__u64		low = sp;
	__u32		n = 1;

	s->ustack[0] = ip;
	s->unwind_end = UNWIND_END_DEPTH;
	for (int i = 1; i < SAMPLE_MAX_USER_FRAMES; i++)
	{
		__u64		frame[2];	/* saved frame pointer, return address */

		if (fp == 0)
		{
			s->unwind_end = UNWIND_END_CLEAN;
			break;
		}
		if ((fp & 7) != 0 || fp < low ||
			bpf_probe_read_user(frame, sizeof(frame), (void *) fp) != 0)
		{
			s->unwind_end = UNWIND_END_BROKEN;
			break;
		}
		if (frame[1] == 0)
		{
			s->unwind_end = UNWIND_END_CLEAN;
			break;
		}
		s->ustack[i] = frame[1];
		n = i + 1;
		low = fp + sizeof(frame);
		fp = frame[0];
	}
	s->nuser = n;
}

SEC("perf_event")
int
on_sample(struct bpf_perf_event_data *ctx)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		pid = id >> 32;
	__u32		tid = (__u32) id;
	__u32		zero = 0;
	struct task_struct *task;
	struct sample_buf *b;
	struct parca_sample *s;
	long		n;
	__u64		avail;
	__u64		size;
	bool		wake;

	if (tid == 0 && !report_idle)
	{
		count(COUNTER_IDLE);
		return 0;
	}
	b = bpf_map_lookup_elem(&scratch, &zero);
	if (b == NULL)
		return 0;
	s = &b->s;
	s->pid = pid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(s->comm, sizeof(s->comm));

	n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	s->nkernel = n > 0 ? n / sizeof(__u64) : 0;

	s->nuser = 0;
	s->unwind_end = UNWIND_END_NONE;
	s->stack_len = 0;
	task = bpf_get_current_task_btf();
	if (tid != 0 && BPF_CORE_READ(task, mm) != NULL)
	{
		/* User addresses have the top bit clear (x86-64 canonical halves). */
		if ((__s64) ctx->regs.ip > 0)
		{
			s->uip = ctx->regs.ip;
			s->usp = ctx->regs.sp;
			s->ubp = ctx->regs.bp;
		}
		else
		{
			/* In the kernel: the user registers saved on kernel entry. */
			struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);

			s->uip = BPF_CORE_READ(regs, ip);
			s->usp = BPF_CORE_READ(regs, sp);
			s->ubp = BPF_CORE_READ(regs, bp);
		}
		unwind_user(s, s->uip, s->usp, s->ubp);
		if (copy_stack)
			copy_user_stack(b, s->usp);
	}

	avail = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA);
	size = sizeof(*s) + (s->stack_len & (2 * SAMPLE_STACK_COPY - 1));
	if (size > sizeof(*b))
		size = sizeof(*b);
	wake = avail + size >= wakeup_bytes;
	if (bpf_map_lookup_elem(&known_pids, &pid) == NULL)
	{
		__u8		one = 1;

		bpf_map_update_elem(&known_pids, &pid, &one, BPF_ANY);
		wake = true;
	}
	if (bpf_ringbuf_output(&samples, b, size,
						   wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP) != 0)
	{
		count(COUNTER_LOST);
		return 0;
	}
	count(COUNTER_SAMPLES);
	return 0;
}
