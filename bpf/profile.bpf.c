/*
 * profile.bpf.c
 *		The agent's BPF programs: one sample per perf event (a software
 *		cpu-clock event per online CPU), and with --off-cpu one per system
 *		call a thread waited in (see "Off-CPU" below), sent to user space
 *		through a ring buffer.
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
#include <bpf/bpf_tracing.h>

#include "sample.h"

char		LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the agent before loading. */
const volatile bool report_idle = false;
const volatile bool copy_stack = true;	/* false: --frame-pointers-only */
const volatile __u64 off_cpu_min_ns = 1000000;	/* --off-cpu-min */

/*
 * Off-CPU: the probability, times 2^32, that a wait is timed; the agent
 * adjusts it as it runs (--off-cpu-rate), so it is a variable (.data).
 */
__u64		off_cpu_threshold = OFF_CPU_ALWAYS;

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

/* Go processes (see struct go_process), by pid; written by the agent. */
struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct go_process);
}			go_procs SEC(".maps");

/* CPython processes (see struct python_process), by pid; written by the agent. */
struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct python_process);
}			python_procs SEC(".maps");

/* PostgreSQL backends (see struct postgres_process), by pid; written by the agent. */
struct
{
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct postgres_process);
}			postgres_procs SEC(".maps");

struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
}			counters SEC(".maps");

/*
 * Off-CPU: a thread timed in the system call it blocked in (see "Off-CPU"
 * below), in the thread's own storage.
 */
struct off_cpu_wait
{
	__u64		start;			/* switched out at (ns), 0: running */
	__u64		waited;			/* ns off the CPU in this system call so far */
	__u64		threshold;		/* the probability it was timed with, x 2^32 */
	__u64		ip;				/* user registers when it blocked */
	__u64		sp;
	__u32		nkernel;		/* frames in kstack (0: not taken yet) */
	__u32		pad;
	__u64		kstack[SAMPLE_MAX_KERNEL_FRAMES];	/* where it waited, leaf first */
};

struct
{
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct off_cpu_wait);
}			off_cpu_waits SEC(".maps");

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

/* One per sample kind: an off-CPU sample never interrupts an on-CPU one, but keep them apart anyway. */
struct
{
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct sample_buf);
}			scratch SEC(".maps");

/*
 * Copy the user stack from sp up to top (at most SAMPLE_STACK_COPY bytes):
 * all of it if it is readable, else the longest readable prefix (the
 * stack's top may be nearer), found by reading halves, quarters, ... down
 * to 64 bytes.
 */
static __always_inline void
copy_user_stack(struct sample_buf *b, __u64 sp, __u64 top)
{
	__u32		want = SAMPLE_STACK_COPY;
	__u32		len = 0;

	if (top > sp && top - sp < SAMPLE_STACK_COPY)
		want = ((__u32) (top - sp) + 63) & ~63u;
	if (want > SAMPLE_STACK_COPY)
		want = SAMPLE_STACK_COPY;
	if (bpf_probe_read_user(b->stack, want, (void *) sp) == 0)
		len = want;
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

/*
 * Where the thread's stack ends, as far as unwinding goes: for a process's
 * main thread, the stack pointer it started with (mm->start_stack: _start
 * ends the walk below it, argv and the environment lie above); unknown
 * for other threads (0).
 */
static __always_inline __u64
stack_top(struct task_struct *task, __u32 pid, __u32 tid)
{
	return pid == tid ? BPF_CORE_READ(task, mm, start_stack) + 64 : 0;
}

/* ---- End of stack copy ---- */

static __always_inline void
count(__u32 which)
{
	__u64	   *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/* The process's identity: see struct parca_sample. */
static __always_inline void
read_identity(struct parca_sample *s, struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);
	struct file *exe = BPF_CORE_READ(task, mm, exe_file);

	s->start_time = BPF_CORE_READ(leader, start_time);
	BPF_CORE_READ_STR_INTO(&s->process_comm, leader, comm);
	s->exe_ino = exe ? BPF_CORE_READ(exe, f_inode, i_ino) : 0;
	s->exe_dev = exe ? BPF_CORE_READ(exe, f_inode, i_sb, s_dev) : 0;
	s->cgroup_id = bpf_get_current_cgroup_id();
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
		s->ufp[i] = fp;
		n = i + 1;
		low = fp + sizeof(frame);
		fp = frame[0];
	}
	s->nuser = n;
}

static __always_inline __u64
read_user_word(__u64 addr)
{
	__u64		v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *) addr) != 0)
		return 0;
	return v;
}

/*
 * Go on the scheduler's stack: if the thread runs its M's g0, find the
 * goroutine it works for, copy g0's stack up to where this switch began
 * (instead of the usual copy) and the goroutine's stack after it; true if
 * it did.  The goroutine is m.curg, set while g0 runs systemstack() or
 * morestack() for it; mcall() clears it soon (park, yield), but pushed the
 * goroutine's g at the top of g0's stack as its callee's argument.
 */
static __always_inline bool
copy_go_stacks(struct sample_buf *b, struct task_struct *task, __u32 pid, __u64 sp)
{
	struct parca_sample *s = &b->s;
	struct go_process *go = bpf_map_lookup_elem(&go_procs, &pid);
	__u64		g;
	__u64		m;
	__u64		g0;
	__u64		g0_sp;
	__u64		curg;
	__u64		lo;
	__u64		hi;
	__u32		want;

	if (go == NULL ||
		go->start_time != BPF_CORE_READ(task, group_leader, start_time))
		return false;
	g = read_user_word(BPF_CORE_READ(task, thread.fsbase) + go->tls_g);
	m = g ? read_user_word(g + GO_G_M) : 0;
	g0 = m ? read_user_word(m + GO_M_G0) : 0;
	if (g == 0 || g != g0)
		return false;
	g0_sp = read_user_word(g0 + GO_G_SCHED_SP);
	curg = read_user_word(m + (go->m_curg & 0xfff));
	if (curg == 0)
		curg = read_user_word(g0_sp - 8);
	if (curg == 0 || g0_sp <= sp)
		return false;
	s->go_sp = read_user_word(curg + GO_G_SCHED_SP);
	s->go_pc = read_user_word(curg + GO_G_SCHED_PC);
	lo = read_user_word(curg + GO_G_STACK_LO);
	hi = read_user_word(curg + GO_G_STACK_HI);
	if (s->go_sp <= lo || s->go_sp >= hi || hi - lo > (1u << 30))
		return false;
	s->go_g = curg;
	s->go_g0_sp = g0_sp;

	/* g0's stack, from sp to just past where this switch began */
	want = g0_sp + 16 - sp < GO_STACK_COPY ? (__u32) (g0_sp + 16 - sp) : GO_STACK_COPY;
	if (want > GO_STACK_COPY || bpf_probe_read_user(b->stack, want, (void *) sp) != 0)
		want = 0;
	s->stack_len = want;
	/* then the goroutine's, from its saved sp up */
	want = hi - s->go_sp < GO_STACK_COPY ? (__u32) (hi - s->go_sp) : GO_STACK_COPY;
	if (want > GO_STACK_COPY ||
		bpf_probe_read_user(b->stack + (s->stack_len & (GO_STACK_COPY * 2 - 1)) ,
							want, (void *) s->go_sp) != 0)
		want = 0;
	s->go_stack_len = want;
	return true;
}

/* Most thread states looked at for the sampled thread's. */
#define PY_MAX_THREADS 64

/*
 * The walk's state, for its bpf_loop() callbacks: loops the verifier
 * checks once, whatever the count (an open-coded loop of frames made it
 * explore every count of frames read, past its million instructions).
 */
struct py_walk
{
	struct parca_sample *s;
	struct python_process *py;
	__u64		self;			/* the thread's pthread_self() */
	__u64		at;				/* the thread state, then the frame, looked at */
	__u32		n;				/* frames recorded */
};

/* bpf_loop callback: stop at the thread state of the sampled thread. */
static long
py_find_thread(__u64 i, void *ctx)
{
	struct py_walk *w = ctx;

	if (read_user_word(w->at + w->py->thread_id) == w->self)
		return 1;
	w->at = read_user_word(w->at + w->py->thread_next);
	return w->at == 0;
}

/* bpf_loop callback: record one frame, move to its caller. */
static long
py_walk_frame(__u64 i, void *ctx)
{
	struct py_walk *w = ctx;
	struct parca_sample *s = w->s;
	struct python_process *py = w->py;
	__u64		code;
	__u64		tail[2];		/* prev_instr, then the word holding is_entry and owner */
	__u8		owner;

	if (w->at == 0)
	{
		s->py_end = PY_END_CLEAN;
		return 1;
	}
	if (w->n >= SAMPLE_MAX_PY_FRAMES)
		return 1;
	if (bpf_probe_read_user(&code, sizeof(code), (void *) (w->at + py->frame_code)) != 0 ||
		bpf_probe_read_user(tail, sizeof(tail), (void *) (w->at + py->frame_prev_instr)) != 0)
	{
		s->py_end = PY_END_BROKEN;
		return 1;
	}
	owner = (__u8) (tail[1] >> (((py->frame_owner - py->frame_prev_instr - 8) & 7) * 8));
	if (py->owner_cstack >= 0 && owner == (__u8) py->owner_cstack)
	{
		/* 3.12's entry shim: the frame before it was its call's first */
		if (w->n > 0)
			s->py_code[(w->n - 1) & (SAMPLE_MAX_PY_FRAMES - 1)] |= PY_FRAME_ENTRY;
	}
	else
	{
		if (py->frame_is_entry >= 0 &&
			((tail[1] >> (((py->frame_is_entry - py->frame_prev_instr - 8) & 7) * 8)) & 0xff) != 0)
			code |= PY_FRAME_ENTRY;
		s->py_code[w->n & (SAMPLE_MAX_PY_FRAMES - 1)] = code;
		/* code units of 2 bytes; (an arithmetic shift: BPF has no signed division) */
		s->py_lasti[w->n & (SAMPLE_MAX_PY_FRAMES - 1)] =
			(__s32) ((__s64) (tail[0] - (code & ~(__u64) PY_FRAME_ENTRY) - py->code_bytecode) >> 1);
		w->n++;
	}
	w->at = read_user_word(w->at + py->frame_previous);
	return 0;
}

/*
 * CPython: the sampled thread's Python frames (see struct python_process).
 * Its thread state is the one of the main interpreter's whose thread_id
 * is the thread's pthread_self(), the thread pointer (fs base) on x86-64,
 * which needs no pid namespace translation; its frames are the chain from
 * cframe->current_frame through previous (3.12's entry shims, which are
 * not Python frames, are given room: 8 more steps).
 */
static __always_inline void
read_python_stack(struct parca_sample *s, struct task_struct *task, __u32 pid)
{
	struct python_process *py = bpf_map_lookup_elem(&python_procs, &pid);
	struct py_walk w = {.s = s};
	__u64		interp;

	if (py == NULL ||
		py->start_time != BPF_CORE_READ(task, group_leader, start_time))
		return;
	w.py = py;
	s->py_end = PY_END_NO_THREAD;
	w.self = BPF_CORE_READ(task, thread.fsbase);
	interp = read_user_word(py->runtime + py->runtime_interpreters_head);
	w.at = interp ? read_user_word(interp + py->interpreter_threads_head) : 0;
	if (w.at == 0)
		return;
	bpf_loop(PY_MAX_THREADS, py_find_thread, &w, 0);
	if (w.at == 0 || read_user_word(w.at + py->thread_id) != w.self)
		return;
	w.at = read_user_word(w.at + py->thread_cframe);
	w.at = w.at ? read_user_word(w.at + py->cframe_current_frame) : 0;
	s->py_end = PY_END_DEPTH;
	bpf_loop(SAMPLE_MAX_PY_FRAMES + 8, py_walk_frame, &w, 0);
	s->py_nframes = w.n;
}

static __always_inline __u32
read_user_u32(__u64 addr)
{
	__u32		v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *) addr) != 0)
		return 0;
	return v;
}

/*
 * PostgreSQL: what the backend is doing, from its PgBackendStatus (see
 * struct postgres_process).  The entry is read without its changecount
 * protocol: each field is one aligned word the backend stores whole, and
 * a statement that starts or ends between two reads gives a sample the
 * id of one of them.  A parallel worker is a backend whose lock group
 * leader (set for the parallel query's lifetime) is another process's
 * PGPROC; its st_query_id is its leader's (ExecutorStart reports the
 * plan's query id in the worker).
 */
static __always_inline void
read_postgres(struct parca_sample *s, struct task_struct *task, __u32 pid, bool off_cpu)
{
	struct postgres_process *pg = bpf_map_lookup_elem(&postgres_procs, &pid);
	__u64		be;
	__u64		proc;
	__u64		leader;
	__u32		state;

	if (pg == NULL ||
		pg->start_time != BPF_CORE_READ(task, group_leader, start_time))
		return;
	be = read_user_word(pg->my_be_entry);
	if (be == 0)
	{
		s->pg_end = PG_END_NO_ENTRY;
		return;
	}
	if (read_user_u32(be + pg->st_procpid) != pg->ns_pid)
	{
		s->pg_end = PG_END_MISMATCH;
		return;
	}
	s->pg_end = PG_END_READ;
	s->pg_backend_type = read_user_u32(be + pg->st_backend_type);
	s->pg_database = read_user_u32(be + pg->st_databaseid);
	s->pg_user = read_user_u32(be + pg->st_userid);
	state = read_user_u32(be + pg->st_state);
	if (state == PG_STATE_RUNNING || state == PG_STATE_FASTPATH)
	{
		s->pg_flags |= PG_FLAG_ACTIVE;
		s->pg_query_id = read_user_word(be + pg->st_query_id);
	}
	proc = pg->my_proc ? read_user_word(pg->my_proc) : 0;
	leader = proc ? read_user_word(proc + pg->proc_lock_group_leader) : 0;
	if (leader != 0 && leader != proc)
		s->pg_flags |= PG_FLAG_PARALLEL_WORKER;
	if (off_cpu)
	{
		__u64		info = read_user_word(pg->my_wait_event_info);

		s->pg_wait_event = info ? read_user_u32(info) : 0;
	}
}

/*
 * Build and send a sample of the current thread: ctx is the program's
 * context (for the kernel stack, unless wait gives it), ip/sp/bp the user
 * registers when they are known, else (ip 0) those saved on kernel entry
 * are read; wait is the off-CPU wait it stands for, or NULL; python: walk
 * a CPython thread's frames (the program variants that call bpf_loop,
 * loaded where the kernel has it: Linux 5.17).
 */
static __always_inline int
send_sample(void *ctx, __u32 kind, __u64 ip, __u64 sp, __u64 bp,
			struct off_cpu_wait *wait, bool python)
{
	__u64		id = bpf_get_current_pid_tgid();
	__u32		pid = id >> 32;
	__u32		tid = (__u32) id;
	struct task_struct *task = bpf_get_current_task_btf();
	struct sample_buf *b;
	struct parca_sample *s;
	long		n;
	__u64		avail;
	__u64		size;
	bool		wake;

	b = bpf_map_lookup_elem(&scratch, &kind);
	if (b == NULL)
		return 0;
	s = &b->s;
	s->pid = pid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->kind = kind;
	s->off_cpu_ns = 0;
	s->off_cpu_threshold = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	read_identity(s, task);

	if (wait)
	{
		s->off_cpu_ns = wait->waited;
		s->off_cpu_threshold = wait->threshold;
		s->nkernel = wait->nkernel < SAMPLE_MAX_KERNEL_FRAMES ?
			wait->nkernel : SAMPLE_MAX_KERNEL_FRAMES;
		bpf_probe_read_kernel(s->kstack, sizeof(s->kstack), wait->kstack);
	}
	else
	{
		n = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
		s->nkernel = n > 0 ? n / sizeof(__u64) : 0;
	}

	s->nuser = 0;
	s->uip_after_syscall = 0;
	s->unwind_end = UNWIND_END_NONE;
	s->stack_len = 0;
	s->go_stack_len = 0;
	s->go_g = 0;
	s->py_end = PY_END_NONE;
	s->py_nframes = 0;
	s->pg_end = PG_END_NONE;
	s->pg_flags = 0;
	s->pg_query_id = 0;
	s->pg_database = 0;
	s->pg_user = 0;
	s->pg_backend_type = 0;
	s->pg_wait_event = 0;
	if (tid != 0 && BPF_CORE_READ(task, mm) != NULL)
	{
		if (ip == 0)
		{
			/*
			 * In the kernel: the user registers saved on kernel entry.  If
			 * they were saved by a system call, ip is past its instruction
			 * (0f 05); after an interrupt or a fault, ip is the instruction.
			 */
			struct pt_regs *regs = (struct pt_regs *) bpf_task_pt_regs(task);
			__u16		insn = 0;

			ip = BPF_CORE_READ(regs, ip);
			sp = BPF_CORE_READ(regs, sp);
			bp = BPF_CORE_READ(regs, bp);
			if (bpf_probe_read_user(&insn, sizeof(insn), (void *) (ip - 2)) == 0 &&
				insn == 0x050f)
				s->uip_after_syscall = 1;
		}
		s->uip = ip;
		s->usp = sp;
		s->ubp = bp;
		unwind_user(s, ip, sp, bp);
		if (python)
			read_python_stack(s, task, pid);
		read_postgres(s, task, pid, kind == SAMPLE_OFF_CPU);
		if (copy_stack && !copy_go_stacks(b, task, pid, sp))
			copy_user_stack(b, sp, stack_top(task, pid, tid));
	}

	avail = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA);
	size = sizeof(*s) + (s->stack_len & (2 * SAMPLE_STACK_COPY - 1)) +
		(s->go_stack_len & (2 * GO_STACK_COPY - 1));
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
	count(kind == SAMPLE_OFF_CPU ? COUNTER_OFF_CPU : COUNTER_SAMPLES);
	return 0;
}

static __always_inline int
sample_on_cpu(struct bpf_perf_event_data *ctx, bool python)
{
	__u32		tid = (__u32) bpf_get_current_pid_tgid();

	if (tid == 0 && !report_idle)
	{
		count(COUNTER_IDLE);
		return 0;
	}
	/* User addresses have the top bit clear (x86-64 canonical halves). */
	if ((__s64) ctx->regs.ip > 0)
		return send_sample(ctx, SAMPLE_ON_CPU, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp,
						   NULL, python);
	return send_sample(ctx, SAMPLE_ON_CPU, 0, 0, 0, NULL, python);
}

SEC("perf_event")
int
on_sample(struct bpf_perf_event_data *ctx)
{
	return sample_on_cpu(ctx, false);
}

SEC("perf_event")
int
on_sample_python(struct bpf_perf_event_data *ctx)
{
	return sample_on_cpu(ctx, true);
}

/*
 * ---- Off-CPU ----
 *
 * A thread that blocks in a system call is timed from its switch out to
 * its switch back in, and sampled as it returns from the call, in its own
 * context, with the stacks it waited in.  Three tracepoints, because that
 * is what every kernel with BTF offers (kprobes and BPF trampolines may be
 * configured out or locked):
 *	- sched_switch, the thread switching out blocked (not preempted): with
 *	  probability off_cpu_threshold / 2^32 per system call, note when, and
 *	  its user registers;
 *	- sched_switch, the thread switching in (as next): add the time off the
 *	  CPU; once the call has waited off_cpu_min_ns, take its kernel stack
 *	  (a thread that has not run since it blocked still has it);
 *	- sys_exit, the thread returning from the call: if its user registers
 *	  are those it blocked with (the wait was in this call, not a page
 *	  fault since), and it waited long enough, send the sample.
 * A call that blocks several times counts all its waits.
 */

/* The task's state, under its name before Linux 5.14 (state) or after (__state). */
struct task_struct___pre_5_14
{
	long		state;
}			__attribute__((preserve_access_index));

static __always_inline long
task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___pre_5_14 *) t, state);
}

SEC("tp_btf/sched_switch")
int
BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64		now = bpf_ktime_get_ns();
	struct off_cpu_wait *w;

	/* Switching in: the time it was off the CPU. */
	w = bpf_task_storage_get(&off_cpu_waits, next, 0, 0);
	if (w && w->start != 0)
	{
		w->waited += now - w->start;
		w->start = 0;
		if (w->waited >= off_cpu_min_ns && w->nkernel == 0)
		{
			long		n = bpf_get_task_stack(next, w->kstack, sizeof(w->kstack), 0);

			w->nkernel = n > 0 ? n / sizeof(__u64) : 0;
		}
	}

	/* Switching out blocked: start timing, or go on timing this call. */
	if (preempt || BPF_CORE_READ(prev, pid) == 0 || BPF_CORE_READ(prev, mm) == NULL ||
		task_state(prev) == 0)
		return 0;
	w = bpf_task_storage_get(&off_cpu_waits, prev, 0, 0);
	if (w == NULL || w->threshold == 0)
	{
		__u64		threshold = off_cpu_threshold;
		struct pt_regs *regs;

		if (threshold < OFF_CPU_ALWAYS && bpf_get_prandom_u32() >= threshold)
			return 0;
		w = bpf_task_storage_get(&off_cpu_waits, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (w == NULL)
			return 0;
		regs = (struct pt_regs *) bpf_task_pt_regs(prev);
		w->waited = 0;
		w->nkernel = 0;
		w->threshold = threshold;
		w->ip = BPF_CORE_READ(regs, ip);
		w->sp = BPF_CORE_READ(regs, sp);
	}
	w->start = now;
	return 0;
}

static __always_inline int
sample_sys_exit(void *ctx, bool python)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct off_cpu_wait *w = bpf_task_storage_get(&off_cpu_waits, task, 0, 0);
	struct pt_regs *user;
	int			rc = 0;

	if (w == NULL || w->threshold == 0)
		return 0;
	user = (struct pt_regs *) bpf_task_pt_regs(task);
	if (w->start == 0 && w->waited >= off_cpu_min_ns &&
		BPF_CORE_READ(user, ip) == w->ip && BPF_CORE_READ(user, sp) == w->sp)
	{
		count(COUNTER_OFF_CPU_WAITS);
		rc = send_sample(ctx, SAMPLE_OFF_CPU, 0, 0, 0, w, python);
	}
	w->threshold = 0;			/* (free for the next call) */
	return rc;
}

SEC("tp_btf/sys_exit")
int
BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	return sample_sys_exit(ctx, false);
}

SEC("tp_btf/sys_exit")
int
BPF_PROG(on_sys_exit_python, struct pt_regs *regs, long ret)
{
	return sample_sys_exit(ctx, true);
}
