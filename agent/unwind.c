/*
 * unwind.c
 *		CFI unwinding of user stacks on the copy the BPF program sends; see
 *		unwind.h.
 *
 * For each frame, the program counter's mapping gives the file and the
 * address in it (the ELF virtual address, through the file's PT_LOAD
 * segments); libdw finds the frame's rules in the file's .eh_frame
 * (dwarf_cfi_addrframe); this file evaluates them on the registers known
 * so far and on the stack copy: the canonical frame address (CFA, which on
 * x86-64 is also the caller's stack pointer), then the caller's registers,
 * the return address among them.  Rules are DWARF expressions; the subset
 * compilers, linkers (PLT entries) and glibc (signal trampolines) emit is
 * evaluated here.
 *
 * The walk ends:
 *	- complete, where the CFI says the return address is undefined (glibc's
 *	  _start and the thread start in clone/clone3 say so) or is zero;
 *	- truncated, after max frames, or when a rule reads above the end of
 *	  the stack copy (a stack deeper than the copy);
 *	- failed, when a pc lies in no mapping, a rule needs an unknown
 *	  register or reads below the copy, or the stack pointer does not grow
 *	  (outside signal frames, which may switch stacks).
 * The CFI is the file's .eh_frame, or its .debug_frame when it has none
 * (Go binaries).  Code without CFI (JIT code, hand-written assembly) is
 * stepped over by its frame pointer when the register is known; a zero
 * frame pointer ends the stack there.
 *
 * Files and their parsed CFI belong to the shared per-file cache
 * (objfile.h), so a file is opened and its CFI parsed once for all the
 * processes that run it.  [vdso] is the agent's own: the kernel maps the
 * same image into every process.
 */
#include "unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "util.h"

/* DWARF register numbers on x86-64. */
#define NREGS		17
#define REG_RBP		6
#define REG_RSP		7
#define REG_RIP		16			/* the return address column */

typedef struct Regs
{
	uint64_t	v[NREGS];
	uint32_t	known;			/* bit per register */
} Regs;

/* The stack copy: len bytes that were at start in the process. */
typedef struct Stack
{
	uint64_t	start;
	const uint8_t *data;
	uint64_t	len;
} Stack;

/* Results of reading, evaluating and stepping. */
typedef enum Status
{
	ST_OK,
	ST_END,						/* the stack's bottom */
	ST_BEYOND,					/* needs stack above the copy */
	ST_BAD						/* cannot go on */
} Status;

static Elf *vdso_elf;
static Dwarf_CFI *vdso_cfi;
static GElf_Phdr vdso_text;		/* its PT_LOAD segment */
static bool vdso_loaded;

const char *
unwind_outcome_name(UnwindOutcome outcome)
{
	switch (outcome)
	{
		case UNWIND_COMPLETE:
			return "complete";
		case UNWIND_TRUNCATED:
			return "truncated";
		case UNWIND_FAILED:
			break;
	}
	return "failed";
}

/* The agent's own vDSO, the same image as every process's. */
static Dwarf_CFI *
get_vdso(void)
{
	if (!vdso_loaded)
	{
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *) getauxval(AT_SYSINFO_EHDR);
		size_t		n;

		vdso_loaded = true;
		if (eh)
			vdso_elf = elf_memory((char *) eh, eh->e_shoff +
								  (size_t) eh->e_shnum * eh->e_shentsize);
		for (size_t i = 0; vdso_elf && elf_getphdrnum(vdso_elf, &n) == 0 && i < n; i++)
			if (gelf_getphdr(vdso_elf, (int) i, &vdso_text) && vdso_text.p_type == PT_LOAD)
			{
				vdso_cfi = dwarf_getcfi_elf(vdso_elf);
				break;
			}
	}
	return vdso_cfi;
}

/*
 * The CFI for pc: its file's, with pc's ELF virtual address in it and the
 * file itself (NULL for [vdso]); NULL if the file has none.  *mapped says
 * whether pc lies in a mapping at all.
 */
static Dwarf_CFI *
cfi_for(Process *p, uint64_t pc, uint64_t *vaddr, ObjFile **file, bool *mapped)
{
	const ExecMapping *m = process_find_mapping(p, pc);
	uint64_t	off;

	*file = NULL;
	*mapped = m != NULL;
	if (m == NULL)
		return NULL;
	off = pc - m->start + m->pgoff;
	if (strcmp(m->file, "[vdso]") == 0)
	{
		Dwarf_CFI  *cfi = get_vdso();

		if (cfi == NULL || off < vdso_text.p_offset ||
			off >= vdso_text.p_offset + vdso_text.p_filesz)
			return NULL;
		*vaddr = off - vdso_text.p_offset + vdso_text.p_vaddr;
		return cfi;
	}
	if ((*file = process_objfile(p, m)) == NULL || !objfile_vaddr(*file, off, vaddr))
		return NULL;
	return objfile_cfi(*file);
}

bool
unwind_is_bottom(const char *name)
{
	static const char *const bottoms[] = {
		"_start", "__libc_start_main", "__libc_start_call_main",
		"start_thread", "clone", "clone3", "__clone", "__clone3",
		"runtime.goexit", "runtime.goexit.abi0", "runtime.mstart", "runtime.rt0_go.abi0",
	};

	for (size_t i = 0; i < sizeof(bottoms) / sizeof(bottoms[0]); i++)
		if (strcmp(name, bottoms[i]) == 0)
			return true;
	return false;
}

/* Is the function at vaddr, by the file's symbol table, where stacks begin? */
static bool
is_bottom_symbol(ObjFile *f, uint64_t vaddr)
{
	const char *name = f ? objfile_symbol(f, vaddr) : NULL;

	return name && unwind_is_bottom(name);
}

/*
 * Go: is the function at vaddr one that switches to the scheduler's stack
 * (g0) and calls a function there?
 */
static bool
is_go_switch(ObjFile *f, uint64_t vaddr)
{
	const char *name = f ? objfile_symbol(f, vaddr) : NULL;

	return name && (strncmp(name, "runtime.systemstack", 19) == 0 ||
					strncmp(name, "runtime.mcall", 13) == 0 ||
					strncmp(name, "runtime.morestack", 17) == 0);
}

/* Is the function at pc in the process where stacks begin? */
static bool
is_bottom_pc(Process *p, uint64_t pc)
{
	const ExecMapping *m = process_find_mapping(p, pc);
	ObjFile    *f = m ? process_objfile(p, m) : NULL;
	uint64_t	vaddr;

	return f && objfile_vaddr(f, pc - m->start + m->pgoff, &vaddr) && is_bottom_symbol(f, vaddr);
}

static Status read_word(const Stack *st, uint64_t addr, uint64_t *out);

/*
 * Go, on g0: is the frame at r (pc in f at vaddr) the one where g0's stack
 * began for this switch, called by systemstack, morestack or mcall?  Its
 * stack pointer is g0.sched.sp there, or 8 below it after mcall, which
 * pushed the goroutine's g there (checked).
 */
static bool
at_go_switch(const struct parca_sample *s, const Regs *r, const Stack *st, ObjFile *f,
			 uint64_t vaddr)
{
	uint64_t	pushed_g;

	if (s->go_g == 0 || !(r->known & (1u << REG_RSP)))
		return false;
	if (r->v[REG_RSP] == s->go_g0_sp)
		return is_go_switch(f, vaddr);
	return r->v[REG_RSP] + 8 == s->go_g0_sp && is_go_switch(f, vaddr) &&
		read_word(st, r->v[REG_RSP], &pushed_g) == ST_OK && pushed_g == s->go_g;
}

/*
 * A stack deeper than the copy: go on along the BPF program's frame-pointer
 * walk, from the frame record at this frame's frame pointer (code built
 * with frame pointers keeps its own there), up to a function where stacks
 * begin (complete) or the walk's end (truncated).
 */
static UnwindOutcome
continue_by_frame_pointers(Process *p, const struct parca_sample *s, const Regs *r,
						   uint64_t *pcs, int max, int *n)
{
	int			nuser = s->nuser < SAMPLE_MAX_USER_FRAMES ? s->nuser : SAMPLE_MAX_USER_FRAMES;
	int			k = 1;

	if (!(r->known & (1u << REG_RBP)) || r->v[REG_RBP] == 0)
		return UNWIND_TRUNCATED;
	while (k < nuser && s->ufp[k] != r->v[REG_RBP])
		k++;
	for (; k < nuser && *n < max; k++)
	{
		/* A return address: the call is before it. */
		pcs[(*n)++] = s->ustack[k] - 1;
		if (is_bottom_pc(p, s->ustack[k] - 1))
			return UNWIND_COMPLETE;
	}
	return UNWIND_TRUNCATED;
}

static Status
read_word(const Stack *st, uint64_t addr, uint64_t *out)
{
	if (addr >= st->start && st->len >= 8 && addr - st->start <= st->len - 8)
	{
		memcpy(out, st->data + (addr - st->start), 8);
		return ST_OK;
	}
	return addr >= st->start + st->len && addr >= st->start ? ST_BEYOND : ST_BAD;
}

/*
 * Evaluate a DWARF expression.  *is_value says whether the result is the
 * value itself (DW_OP_stack_value, a register name) or its address.
 */
static Status
eval(const Dwarf_Op *ops, size_t nops, const Regs *r, uint64_t cfa,
	 const Stack *st, uint64_t *out, bool *is_value)
{
	uint64_t	stack[16];
	int			sp = 0;

	*is_value = false;
	for (size_t i = 0; i < nops; i++)
	{
		uint8_t		a = ops[i].atom;
		uint64_t	number = ops[i].number;
		int			reg = -1;
		uint64_t	x;
		Status		rc;

		if (sp >= 14)
			return ST_BAD;
		if (a >= DW_OP_lit0 && a <= DW_OP_lit31)
		{
			stack[sp++] = a - DW_OP_lit0;
			continue;
		}
		if ((a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx ||
			(a >= DW_OP_reg0 && a <= DW_OP_reg31) || a == DW_OP_regx)
		{
			bool		breg = (a >= DW_OP_breg0 && a <= DW_OP_breg31) || a == DW_OP_bregx;

			if (a == DW_OP_bregx || a == DW_OP_regx)
				reg = (int) number;
			else
				reg = a - (breg ? DW_OP_breg0 : DW_OP_reg0);
			if (reg < 0 || reg >= NREGS || !(r->known & (1u << reg)))
				return ST_BAD;
			if (breg)
				stack[sp++] = r->v[reg] + (a == DW_OP_bregx ? ops[i].number2 : number);
			else
			{
				stack[sp++] = r->v[reg];
				*is_value = true;
			}
			continue;
		}
		switch (a)
		{
			case DW_OP_const1u:
			case DW_OP_const1s:
			case DW_OP_const2u:
			case DW_OP_const2s:
			case DW_OP_const4u:
			case DW_OP_const4s:
			case DW_OP_const8u:
			case DW_OP_const8s:
			case DW_OP_constu:
			case DW_OP_consts:
				/* libdw sign-extends the signed forms into number. */
				stack[sp++] = number;
				break;
			case DW_OP_call_frame_cfa:
				stack[sp++] = cfa;
				break;
			case DW_OP_dup:
				if (sp < 1)
					return ST_BAD;
				stack[sp] = stack[sp - 1];
				sp++;
				break;
			case DW_OP_over:
				if (sp < 2)
					return ST_BAD;
				stack[sp] = stack[sp - 2];
				sp++;
				break;
			case DW_OP_drop:
				if (sp < 1)
					return ST_BAD;
				sp--;
				break;
			case DW_OP_swap:
				if (sp < 2)
					return ST_BAD;
				x = stack[sp - 1];
				stack[sp - 1] = stack[sp - 2];
				stack[sp - 2] = x;
				break;
			case DW_OP_deref:
				if (sp < 1)
					return ST_BAD;
				rc = read_word(st, stack[sp - 1], &stack[sp - 1]);
				if (rc != ST_OK)
					return rc;
				break;
			case DW_OP_plus_uconst:
				if (sp < 1)
					return ST_BAD;
				stack[sp - 1] += number;
				break;
			case DW_OP_neg:
			case DW_OP_not:
				if (sp < 1)
					return ST_BAD;
				stack[sp - 1] = a == DW_OP_neg ? -stack[sp - 1] : ~stack[sp - 1];
				break;
			case DW_OP_plus:
			case DW_OP_minus:
			case DW_OP_mul:
			case DW_OP_and:
			case DW_OP_or:
			case DW_OP_xor:
			case DW_OP_shl:
			case DW_OP_shr:
			case DW_OP_shra:
			case DW_OP_eq:
			case DW_OP_ne:
			case DW_OP_lt:
			case DW_OP_le:
			case DW_OP_gt:
			case DW_OP_ge:
				{
					uint64_t	b;
					int64_t		sa;
					int64_t		sb;

					if (sp < 2)
						return ST_BAD;
					b = stack[--sp];
					x = stack[sp - 1];
					sa = (int64_t) x;
					sb = (int64_t) b;
					switch (a)
					{
						case DW_OP_plus:
							x += b;
							break;
						case DW_OP_minus:
							x -= b;
							break;
						case DW_OP_mul:
							x *= b;
							break;
						case DW_OP_and:
							x &= b;
							break;
						case DW_OP_or:
							x |= b;
							break;
						case DW_OP_xor:
							x ^= b;
							break;
						case DW_OP_shl:
							x = b < 64 ? x << b : 0;
							break;
						case DW_OP_shr:
							x = b < 64 ? x >> b : 0;
							break;
						case DW_OP_shra:
							x = (uint64_t) (b < 64 ? sa >> b : (sa < 0 ? -1 : 0));
							break;
						case DW_OP_eq:
							x = sa == sb;
							break;
						case DW_OP_ne:
							x = sa != sb;
							break;
						case DW_OP_lt:
							x = sa < sb;
							break;
						case DW_OP_le:
							x = sa <= sb;
							break;
						case DW_OP_gt:
							x = sa > sb;
							break;
						default:
							x = sa >= sb;
							break;
					}
					stack[sp - 1] = x;
					break;
				}
			case DW_OP_stack_value:
				*is_value = true;
				break;
			case DW_OP_nop:
				break;
			default:
				return ST_BAD;
		}
	}
	if (sp < 1)
		return ST_BAD;
	*out = stack[sp - 1];
	return ST_OK;
}

/* Step from the frame in r to its caller's by the frame's CFI. */
static Status
step_cfi(Dwarf_Frame *frame, Regs *r, const Stack *st, bool *signal_frame)
{
	Regs		caller = {{0}, 0};
	Dwarf_Op   *ops;
	Dwarf_Op	mem[3];
	size_t		nops;
	uint64_t	cfa;
	bool		is_value;
	Status		rc;

	dwarf_frame_info(frame, NULL, NULL, signal_frame);
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0)
		return ST_BAD;
	rc = eval(ops, nops, r, 0, st, &cfa, &is_value);
	if (rc != ST_OK)
		return rc;
	for (int reg = 0; reg < NREGS; reg++)
	{
		uint64_t	v;

		if (dwarf_frame_register(frame, reg, mem, &ops, &nops) != 0)
			continue;
		if (nops == 0)
		{
			/* The caller's stack pointer is the CFA unless a rule says otherwise. */
			if (reg == REG_RSP)
			{
				caller.v[reg] = cfa;
				caller.known |= 1u << reg;
			}
			else if (ops == NULL && reg != REG_RIP && (r->known & (1u << reg)))
			{
				/* same value */
				caller.v[reg] = r->v[reg];
				caller.known |= 1u << reg;
			}
			else if (reg == REG_RIP && ops != NULL)
				return ST_END;	/* undefined return address: the bottom */
			continue;
		}
		rc = eval(ops, nops, r, cfa, st, &v, &is_value);
		if (rc == ST_OK && !is_value)
			rc = read_word(st, v, &v);
		if (rc == ST_OK)
		{
			caller.v[reg] = v;
			caller.known |= 1u << reg;
		}
		else if (reg == REG_RIP)
			return rc;
	}
	if (!(caller.known & (1u << REG_RIP)))
		return ST_BAD;
	if (!*signal_frame && caller.v[REG_RSP] <= r->v[REG_RSP])
		return ST_BAD;
	*r = caller;
	return ST_OK;
}

/* Step by the frame pointer, for code without CFI. */
static Status
step_fp(Regs *r, const Stack *st)
{
	uint64_t	fp = r->v[REG_RBP];
	uint64_t	saved_fp;
	uint64_t	ra;
	Status		rc;

	if (!(r->known & (1u << REG_RBP)))
		return ST_BAD;
	/* The outermost frame pointer is zero (_start, Go's goexit). */
	if (fp == 0)
		return ST_END;
	if ((fp & 7) != 0 || fp < r->v[REG_RSP])
		return ST_BAD;
	if ((rc = read_word(st, fp, &saved_fp)) != ST_OK ||
		(rc = read_word(st, fp + 8, &ra)) != ST_OK)
		return rc;
	r->v[REG_RBP] = saved_fp;
	r->v[REG_RSP] = fp + 16;
	r->v[REG_RIP] = ra;
	r->known = (1u << REG_RBP) | (1u << REG_RSP) | (1u << REG_RIP);
	return ST_OK;
}

UnwindOutcome
unwind_stack(Process *p, const struct parca_sample *s, uint64_t *pcs, int max,
			 int *npcs)
{
	Stack		st = {s->usp, (const uint8_t *) (s + 1), s->stack_len};
	Regs		r = {{0}, (1u << REG_RBP) | (1u << REG_RSP) | (1u << REG_RIP)};
	bool		return_address = false;
	int			n = 0;
	ObjFile    *prev_f = NULL;
	uint64_t	prev_vaddr = 0;
	bool		on_goroutine = false;

	r.v[REG_RIP] = s->uip;
	r.v[REG_RSP] = s->usp;
	r.v[REG_RBP] = s->ubp;
	for (;;)
	{
		uint64_t	pc = r.v[REG_RIP];
		uint64_t	vaddr = 0;
		ObjFile    *f;
		Dwarf_CFI  *cfi;
		bool		mapped;
		Dwarf_Frame *frame = NULL;
		bool		signal_frame = false;
		Status		rc;

		if (n == max)
		{
			*npcs = n;
			return UNWIND_TRUNCATED;
		}
		/*
		 * A return address: the call is before it; so is the system call
		 * the thread was in, for the first frame.
		 */
		if (return_address || (n == 0 && s->uip_after_syscall))
			pc--;
		pcs[n++] = pc;
		cfi = cfi_for(p, pc, &vaddr, &f, &mapped);
		/*
		 * Go: at the top of the scheduler's stack, the goroutine it works
		 * for goes on, from the pc and stack pointer it saved switching
		 * over (exact, not return addresses), on its own stack's copy.
		 */
		if (!on_goroutine && at_go_switch(s, &r, &st, f, vaddr))
		{
			st.start = s->go_sp;
			st.data = (const uint8_t *) (s + 1) + s->stack_len;
			st.len = s->go_stack_len;
			r.known = (1u << REG_RSP) | (1u << REG_RIP);
			r.v[REG_RIP] = s->go_pc;
			r.v[REG_RSP] = s->go_sp;
			on_goroutine = true;
			return_address = false;
			prev_f = f;
			prev_vaddr = vaddr;
			continue;
		}
		if (!mapped)
			rc = ST_BAD;
		else if (cfi && dwarf_cfi_addrframe(cfi, vaddr, &frame) == 0)
		{
			Dwarf_Addr	fde_start;

			if (f && dwarf_frame_info(frame, &fde_start, NULL, NULL) >= 0)
				objfile_cfi_used(f, fde_start);
			rc = step_cfi(frame, &r, &st, &signal_frame);
			free(frame);
		}
		else
			rc = step_fp(&r, &st);
		/* A signal trampoline is named by its own address (__restore_rt). */
		if (signal_frame && return_address)
			pcs[n - 1] = pc + 1;
		/*
		 * Go's stacks end in goexit, whose "caller" is not a real one: a
		 * walk that fails there or right above it is complete.
		 */
		if (rc == ST_BAD && is_bottom_symbol(f, vaddr))
			rc = ST_END;
		else if (rc == ST_BAD && is_bottom_symbol(prev_f, prev_vaddr))
		{
			n--;
			rc = ST_END;
		}
		if (rc == ST_OK && r.v[REG_RIP] == 0)
			rc = ST_END;
		if (rc != ST_OK)
		{
			if (rc != ST_END)
			{
				const ExecMapping *m = process_find_mapping(p, pc);

				log_msg(LOG_DEBUG, "unwind: pid %u: %s after %d frames, at %s+%#llx",
						s->pid, rc == ST_BEYOND ? "stack deeper than the copy" : "failed",
						n, m ? m->file : "(no mapping)",
						(unsigned long long) (m ? pc - m->start + m->pgoff : pc));
			}
			*npcs = n;
			if (rc == ST_BEYOND)
				return continue_by_frame_pointers(p, s, &r, pcs, max, npcs);
			return rc == ST_END ? UNWIND_COMPLETE : UNWIND_FAILED;
		}
		/* After a signal frame, the pc is where the signal struck. */
		return_address = !signal_frame;
		prev_f = f;
		prev_vaddr = vaddr;
	}
}
