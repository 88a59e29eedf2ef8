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
 * truncated instead of storing what follows.  Aggregation happens in user
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
	struct task_struct *task;
	struct parca_sample *s;
	long		n;
	__u64		avail;
	bool		wake;

	if (tid == 0 && !report_idle)
	{
		count(COUNTER_IDLE);
		return 0;
	}
	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (s == NULL)
	{
		count(COUNTER_LOST);
		return 0;
	}
	s->pid = pid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(s->comm, sizeof(s->comm));

	n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	s->nkernel = n > 0 ? n / sizeof(__u64) : 0;

	s->nuser = 0;
	s->unwind_end = UNWIND_END_NONE;
	task = bpf_get_current_task_btf();
	if (tid != 0 && BPF_CORE_READ(task, mm) != NULL)
	{
		/* User addresses have the top bit clear (x86-64 canonical halves). */
		if ((__s64) ctx->regs.ip > 0)
			unwind_user(s, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp);
		else
		{
			/* In the kernel: the user registers saved on kernel entry. */
			struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);

			unwind_user(s, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp),
						BPF_CORE_READ(regs, bp));
		}
	}

	count(COUNTER_SAMPLES);
	avail = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA);
	wake = avail + sizeof(*s) >= wakeup_bytes;
	if (bpf_map_lookup_elem(&known_pids, &pid) == NULL)
	{
		__u8		one = 1;

		bpf_map_update_elem(&known_pids, &pid, &one, BPF_ANY);
		wake = true;
	}
	bpf_ringbuf_submit(s, wake ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return 0;
}
