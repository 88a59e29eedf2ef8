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

/* What a sample is. */
#define SAMPLE_ON_CPU	0		/* a tick of the cpu-clock event */
#define SAMPLE_OFF_CPU	1		/* a thread that waited, back on a CPU */

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

/* Deepest Python stack kept (interpreter frames of a CPython thread). */
#define SAMPLE_MAX_PY_FRAMES 64

/* How the walk of a Python thread's frames ended (py_end). */
#define PY_END_NONE		0		/* not a Python process the agent registered */
#define PY_END_CLEAN	1		/* reached the thread's first frame */
#define PY_END_NO_THREAD 2		/* no thread state for this thread (not running Python) */
#define PY_END_DEPTH	3		/* SAMPLE_MAX_PY_FRAMES reached */
#define PY_END_BROKEN	4		/* a frame could not be read */

/*
 * Low bit of py_code[i]: the frame is the first that its
 * _PyEval_EvalFrameDefault call ran (code objects are 8-aligned), so the
 * frames after it belong to the next evaluation call up the native stack.
 */
#define PY_FRAME_ENTRY	1

struct parca_sample
{
	__u32		pid;			/* process (tgid) */
	__u32		tid;			/* thread */
	__u32		cpu;
	__u32		unwind_end;		/* UNWIND_END_* */
	__u32		nkernel;		/* frames in kstack */
	__u32		nuser;			/* frames in ustack */
	char		comm[16];		/* the thread's name */

	/*
	 * The process's identity, so that the agent needs no /proc read to
	 * tell a process it knows from a new one with the same pid (reused, or
	 * exec'd into another program): the main thread's start time (ns after
	 * boot) and name, its executable (device in the kernel's encoding,
	 * inode; 0 for kernel threads) and its cgroup (the unified
	 * hierarchy's id).
	 */
	__u64		start_time;
	__u64		exe_ino;
	__u32		exe_dev;
	__u32		pad0;
	__u64		cgroup_id;
	char		process_comm[16];

	__u32		kind;			/* SAMPLE_ON_CPU or SAMPLE_OFF_CPU */

	/*
	 * 1 if uip is where a system call returns to (the thread was in one):
	 * the instruction sampled is the one before, whose function's CFI the
	 * unwinder must use (a system call can end its function, as in
	 * __restore_rt, so uip may lie outside it).
	 */
	__u32		uip_after_syscall;
	/*
	 * Off-CPU: how long the thread was off the CPU (from switching out
	 * blocked to switching in again), and the probability, times 2^32,
	 * with which the wait was timed (see OFF_CPU_ALWAYS).
	 */
	__u64		off_cpu_ns;
	__u64		off_cpu_threshold;
	__u64		kstack[SAMPLE_MAX_KERNEL_FRAMES];	/* leaf first */
	__u64		ustack[SAMPLE_MAX_USER_FRAMES]; /* leaf first: pc, then return addresses */
	/*
	 * The frame-pointer walk's frame records: ustack[i] was read at
	 * ufp[i] + 8 (i >= 1).  A CFI walk that needs the stack beyond the
	 * copy goes on from the record at the frame pointer it has there.
	 */
	__u64		ufp[SAMPLE_MAX_USER_FRAMES];
	/* The user registers and the copy of the stack that follows the record. */
	__u64		uip;
	__u64		usp;
	__u64		ubp;
	__u32		stack_len;		/* bytes copied from usp up (0: none) */

	/*
	 * Go, on the scheduler's stack (g0): the goroutine whose work it does
	 * (its g, and the pc and sp it saved switching over), where g0's stack
	 * began for this switch (g0.sched.sp), and how many bytes of the
	 * goroutine's stack follow the first copy (go_g 0: none of this).
	 */
	__u32		go_stack_len;
	__u64		go_g;
	__u64		go_pc;
	__u64		go_sp;
	__u64		go_g0_sp;

	/*
	 * CPython (see struct python_process): the sampled thread's Python
	 * frames, innermost first: each frame's code object (| PY_FRAME_ENTRY)
	 * and its last instruction's index in the code's bytecode (code units;
	 * -1 before the first).
	 */
	__u32		py_end;			/* PY_END_* */
	__u32		py_nframes;
	__u64		py_code[SAMPLE_MAX_PY_FRAMES];
	__s32		py_lasti[SAMPLE_MAX_PY_FRAMES];

	/*
	 * PostgreSQL (see struct postgres_process): the backend's status as
	 * its PgBackendStatus says at the sample; pg_query_id only while it
	 * runs a statement (st_state running or fastpath), pg_wait_event only
	 * for off-CPU samples (0: none).
	 */
	__u32		pg_end;			/* PG_END_* */
	__u32		pg_flags;		/* PG_FLAG_* */
	__u64		pg_query_id;
	__u32		pg_database;
	__u32		pg_user;
	__u32		pg_backend_type;
	__u32		pg_wait_event;
	/* __u8 stack[stack_len], then __u8 go_stack[go_stack_len] follow */
};

/*
 * A Go process, as the agent tells the BPF program (map go_procs, by pid):
 * where its g is in thread-local storage (from the thread pointer, fs) and
 * where m.curg is in its runtime's m (both read from the runtime's code);
 * and the process's start time, so that a reused pid is not taken for it.
 */
struct go_process
{
	__s64		tls_g;
	__u64		m_curg;
	__u64		start_time;
};

/*
 * A CPython process, as the agent tells the BPF program (map
 * python_procs, by pid): where _PyRuntime is, and the offsets of the
 * fields the walk reads, for the interpreter's version (agent/python.c):
 * _PyRuntime.interpreters.head, then the interpreter's threads.head, each
 * thread state's next, thread_id (pthread_self(), the thread pointer on
 * x86-64) and cframe; cframe's current_frame; each frame's f_code,
 * previous, prev_instr, is_entry (3.11; -1 if none) and owner; the code
 * object's bytecode (co_code_adaptive).  A frame whose owner is
 * owner_cstack (3.12's entry shim; -1 if none) is not a Python frame but
 * marks the frame before it as an entry.
 */
struct python_process
{
	__u64		start_time;
	__u64		runtime;
	__u32		runtime_interpreters_head;
	__u32		interpreter_threads_head;
	__u32		thread_next;
	__u32		thread_id;
	__u32		thread_cframe;
	__u32		cframe_current_frame;
	__u32		frame_code;
	__u32		frame_previous;
	__u32		frame_prev_instr;
	__s32		frame_is_entry;
	__u32		frame_owner;
	__s32		owner_cstack;
	__u32		code_bytecode;
	__u32		pad;
};

/* How the read of a PostgreSQL backend's status went (pg_end). */
#define PG_END_NONE		0		/* not a backend the agent registered */
#define PG_END_READ		1		/* read: the pg_* fields hold its status */
#define PG_END_NO_ENTRY	2		/* no PgBackendStatus (yet, or any more) */
#define PG_END_MISMATCH	3		/* st_procpid is not the process's pid */

#define PG_FLAG_ACTIVE	1		/* running a statement: pg_query_id is its */
#define PG_FLAG_PARALLEL_WORKER 2	/* a parallel worker: its leader's statement */

/* BackendState's values (utils/backend_status.h) that run a statement. */
#define PG_STATE_RUNNING	2
#define PG_STATE_FASTPATH	4

/*
 * A PostgreSQL backend, as the agent tells the BPF program (map
 * postgres_procs, by pid), once it has checked the layout on the process
 * (agent/postgres.c): the addresses of the server's exported MyBEEntry
 * (PgBackendStatus *), my_wait_event_info (uint32 *) and MyProc (PGPROC *)
 * in the process, the offsets of the fields read, the pid the backend
 * knows itself by (its pid namespace's), which st_procpid must equal at
 * every sample, and the process's start time, so that a reused pid is not
 * taken for it.
 */
struct postgres_process
{
	__u64		start_time;
	__u64		my_be_entry;
	__u64		my_wait_event_info;
	__u64		my_proc;
	__u32		ns_pid;
	__u32		st_procpid;
	__u32		st_backend_type;
	__u32		st_databaseid;
	__u32		st_userid;
	__u32		st_state;
	__u32		st_query_id;
	__u32		proc_lock_group_leader;
};

/*
 * Offsets in the Go runtime's g that its linker and cgo depend on, the
 * same in every release: g.stack (lo, hi), g.m, g.sched (gobuf: sp, pc).
 */
#define GO_G_STACK_LO	0
#define GO_G_STACK_HI	8
#define GO_G_M			48
#define GO_G_SCHED_SP	56
#define GO_G_SCHED_PC	64
#define GO_M_G0			0

/* Most bytes copied of each of g0's stack and the goroutine's. */
#define GO_STACK_COPY	(SAMPLE_STACK_COPY / 2)

/* An off-CPU threshold that times every wait: probability 1. */
#define OFF_CPU_ALWAYS		(1ull << 32)

/* Indexes of the BPF program's per-CPU counters. */
#define COUNTER_SAMPLES		0	/* on-CPU samples sent */
#define COUNTER_LOST		1	/* samples lost: ring buffer full */
#define COUNTER_IDLE		2	/* idle samples skipped */
#define COUNTER_OFF_CPU_WAITS 3	/* timed waits at least off_cpu_min_ns long */
#define COUNTER_OFF_CPU		4	/* off-CPU samples sent */
#define NCOUNTERS			5

#endif							/* PARCA_BPF_SAMPLE_H */
