/*
 * objfile_symbols.c
 *		A file's symbols (objfile.h): its function symbols and PLT stubs,
 *		read once, sorted and kept by the per-file cache; its dynamic
 *		symbols by name; what Go's runtime and pclntab tell of it.
 */
#include "objfile_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_lines.h"
#include "ids/ids.h"

/* The first section of this type with entries, or NULL. */
Elf_Scn *
objfile_find_symtab(Elf *elf, GElf_Word type, GElf_Shdr *shdr)
{
	Elf_Scn    *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn)) != NULL)
		if (gelf_getshdr(scn, shdr) != NULL && shdr->sh_type == type &&
			shdr->sh_entsize > 0 && shdr->sh_size / shdr->sh_entsize > 1)
			return scn;
	return NULL;
}

/*
 * While sorting, a symbol's binding preference (global, weak, local: lower
 * is better) rides in the top two bits of its size.
 */
#define RANK_SHIFT 30
#define SIZE_MASK ((1u << RANK_SHIFT) - 1)

/* Bits of an address sorted per pass of sort_by_address. */
#define RADIX_BITS 11
#define RADIX_MASK ((1u << RADIX_BITS) - 1)

/*
 * Sort symbols by address, stably: a least significant digit radix sort
 * on the address's distance from the lowest, a pass per 11 bits of the
 * span (two or three for a program's text).  qsort's merge sort through a
 * comparison function took 8 to 13 % of the agent's time on a loaded
 * machine, sorting the symbol tables of the programs it met (node's
 * 78,000 function symbols, libjvm's 44,000); this takes a few passes over
 * the table and a copy of it for the time of the sort.
 */
static void
sort_by_address(Symbol *syms, size_t n)
{
	size_t		count[1 << RADIX_BITS];
	uint64_t	low = UINT64_MAX;
	uint64_t	span = 0;
	Symbol	   *tmp;
	Symbol	   *from = syms;
	Symbol	   *to;

	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		low = syms[i].addr < low ? syms[i].addr : low;
	for (size_t i = 0; i < n; i++)
		span |= syms[i].addr - low;
	to = tmp = xmalloc(n * sizeof(Symbol));
	for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += RADIX_BITS)
	{
		size_t		at = 0;
		Symbol	   *swap;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[((from[i].addr - low) >> shift) & RADIX_MASK]++;
		for (size_t d = 0; d <= RADIX_MASK; d++)
		{
			size_t		c = count[d];

			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[((from[i].addr - low) >> shift) & RADIX_MASK]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != syms)
		memcpy(syms, from, n * sizeof(Symbol));
	free(tmp);
}

/*
 * The function symbols of the file's .symtab, else its debug file's, else
 * its .dynsym, sorted, one per address (the preferred binding).  The table
 * is read once, so its pages are given back at once (a large program's is
 * megabytes).
 */
static void
load_function_symbols(ObjFile *f)
{
	GElf_Shdr	shdr;
	Elf_Scn    *scn = objfile_find_symtab(f->elf, SHT_SYMTAB, &shdr);
	Elf		   *elf = f->elf;
	Elf_Data   *data;
	size_t		n;
	int			kept = 0;

	if (scn == NULL && (scn = objfile_find_symtab(objfile_debug_elf(f), SHT_SYMTAB, &shdr)) != NULL)
		elf = f->debug_elf;
	if (scn == NULL)
		scn = objfile_find_symtab(f->elf, SHT_DYNSYM, &shdr);
	if (scn == NULL || (data = elf_getdata(scn, NULL)) == NULL)
		return;
	f->sym_elf = elf;
	f->sym_strndx = shdr.sh_link;
	n = shdr.sh_size / shdr.sh_entsize;
	f->syms = xcalloc(n, sizeof(Symbol));
	for (size_t i = 1; i < n; i++)
	{
		GElf_Sym	sym;
		int			type;
		int			bind;

		if (gelf_getsym(data, (int) i, &sym) == NULL)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (sym.st_name == 0 || sym.st_value == 0 || sym.st_shndx == SHN_UNDEF ||
			(type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		f->syms[kept].addr = sym.st_value;
		f->syms[kept].size = (sym.st_size > SIZE_MASK ? SIZE_MASK : (uint32_t) sym.st_size) |
			((uint32_t) (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2) << RANK_SHIFT);
		f->syms[kept].name = sym.st_name;
		kept++;
		if (i % PAGES_READ_AT_ONCE == PAGES_READ_AT_ONCE - 1)
			objfile_drop_range((const char *) data->d_buf + (i + 1 - PAGES_READ_AT_ONCE) * shdr.sh_entsize,
					   PAGES_READ_AT_ONCE * shdr.sh_entsize);
	}
	objfile_release_section(elf, &shdr);
	sort_by_address(f->syms, kept);
	/* one per address: the best binding, the first in the table among equals */
	for (int i = 0; i < kept; i++)
	{
		Symbol	   *last = f->nsyms ? &f->syms[f->nsyms - 1] : NULL;

		if (last == NULL || last->addr != f->syms[i].addr)
			f->syms[f->nsyms++] = f->syms[i];
		else if ((f->syms[i].size >> RANK_SHIFT) < (last->size >> RANK_SHIFT))
			*last = f->syms[i];
	}
	for (int i = 0; i < f->nsyms; i++)
		f->syms[i].size &= SIZE_MASK;
	f->syms = xrealloc(f->syms, (f->nsyms ? f->nsyms : 1) * sizeof(Symbol));
	objfile_charge(f, (f->nsyms ? f->nsyms : 1) * sizeof(Symbol));
}

/*
 * The GOT slots that the dynamic linker fills with a symbol's address
 * (JUMP_SLOT and GLOB_DAT relocations), and the .rela.plt relocations in
 * order (a lazy PLT entry pushes its index): slot or index -> symbol.
 */
typedef struct PltRelocs
{
	U64Map		by_slot;		/* hash(GOT address) -> symbol index + 1 */
	uint32_t   *by_index;		/* .rela.plt's symbol indexes */
	size_t		nindex;
	Elf_Data   *dynsym;
	size_t		dynstr;			/* string section of dynsym */
} PltRelocs;

static void
read_plt_relocs(Elf *elf, PltRelocs *r)
{
	size_t		shstrndx;
	Elf_Scn    *scn = NULL;
	GElf_Shdr	plt_got;
	bool		want_dyn = parca_elf_section(elf, ".plt.got", &plt_got) != NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	while ((scn = elf_nextscn(elf, scn)) != NULL)
	{
		GElf_Shdr	shdr;
		GElf_Shdr	symshdr;
		Elf_Scn    *symscn;
		Elf_Data   *data;
		const char *name;
		bool		is_plt;

		if (gelf_getshdr(scn, &shdr) == NULL || shdr.sh_type != SHT_RELA ||
			shdr.sh_entsize == 0 ||
			(name = elf_strptr(elf, shstrndx, shdr.sh_name)) == NULL)
			continue;
		is_plt = strcmp(name, ".rela.plt") == 0;

		/*
		 * .rela.dyn holds the GLOB_DAT slots that .plt.got jumps through,
		 * among every other dynamic relocation (tens of megabytes of them
		 * in a large PIE such as a browser): read only when there is a
		 * .plt.got, and its pages given back as it is read.
		 */
		if ((!is_plt && !want_dyn) || (data = elf_getdata(scn, NULL)) == NULL ||
			(symscn = elf_getscn(elf, shdr.sh_link)) == NULL ||
			gelf_getshdr(symscn, &symshdr) == NULL || symshdr.sh_type != SHT_DYNSYM)
			continue;
		r->dynsym = elf_getdata(symscn, NULL);
		r->dynstr = symshdr.sh_link;
		if (is_plt)
		{
			r->nindex = shdr.sh_size / shdr.sh_entsize;
			r->by_index = xcalloc(r->nindex ? r->nindex : 1, sizeof(uint32_t));
		}
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++)
		{
			GElf_Rela	rela;
			uint32_t	type;
			uint32_t	sym;

			if (gelf_getrela(data, (int) i, &rela) == NULL)
				continue;
			type = GELF_R_TYPE(rela.r_info);
			sym = GELF_R_SYM(rela.r_info);
			if (is_plt)
				r->by_index[i] = sym;
			if (sym != 0 && (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT))
				u64map_put(&r->by_slot, parca_hash64(&rela.r_offset, sizeof(rela.r_offset)),
						   (void *) (uintptr_t) (sym + 1));
			if (i % PAGES_READ_AT_ONCE == PAGES_READ_AT_ONCE - 1)
				objfile_drop_range((const char *) data->d_buf + (i + 1 - PAGES_READ_AT_ONCE) * shdr.sh_entsize,
						   PAGES_READ_AT_ONCE * shdr.sh_entsize);
		}
		objfile_release_section(elf, &shdr);
	}
}

/*
 * The symbol a PLT entry jumps to.  An entry jumps through its GOT slot
 * (jmp *slot(%rip), ff 25 disp32, after an endbr64 and a bnd prefix in
 * IBT builds); a lazy entry of an IBT build (.plt beside .plt.sec) only
 * pushes its relocation's index (68 imm32) and jumps to PLT0.
 */
static uint32_t
plt_entry_symbol(const unsigned char *code, size_t len, uint64_t vaddr, const PltRelocs *r)
{
	for (size_t i = 0; i + 6 <= len; i++)
	{
		int32_t		disp;
		uint64_t	slot;
		void	   *v;

		if (code[i] == 0xff && code[i + 1] == 0x25)
		{
			memcpy(&disp, code + i + 2, 4);
			slot = vaddr + i + 6 + (int64_t) disp;
			v = u64map_get(&r->by_slot, parca_hash64(&slot, sizeof(slot)));
			return v ? (uint32_t) ((uintptr_t) v - 1) : 0;
		}
	}
	for (size_t i = 0; i + 5 <= len && i <= 4; i += 4)
	{
		uint32_t	index;

		if (code[i] != 0x68)
			continue;
		memcpy(&index, code + i + 1, 4);
		return index < r->nindex ? r->by_index[index] : 0;
	}
	return 0;
}

static const char *const plt_sections[] = {".plt", ".plt.sec", ".plt.got"};

/* Where the PLT sections lie, so that their stubs are read only when needed. */
static void
find_plt(ObjFile *f)
{
	for (size_t s = 0; s < sizeof(plt_sections) / sizeof(plt_sections[0]); s++)
	{
		GElf_Shdr	shdr;

		if (parca_elf_section(f->elf, plt_sections[s], &shdr) == NULL || shdr.sh_size == 0)
			continue;
		if (f->plt_high == 0 || shdr.sh_addr < f->plt_low)
			f->plt_low = shdr.sh_addr;
		if (shdr.sh_addr + shdr.sh_size > f->plt_high)
			f->plt_high = shdr.sh_addr + shdr.sh_size;
	}
}

/*
 * The PLT stubs of .plt, .plt.sec and .plt.got, each named target@plt.
 * Read at the first address in them: naming a stub reads the PLT
 * relocations, and with .plt.got all of .rela.dyn (libjvm's 100,000, 2.4
 * MB, for its one .plt.got stub: a tenth of the agent's time in
 * bench/jit.sh, for stubs no sample was in).
 */
static void
load_plt(ObjFile *f)
{
	PltRelocs	r = {{0}};
	Buf			names = {0};
	int			cap = 0;

	read_plt_relocs(f->elf, &r);
	for (size_t s = 0; s < sizeof(plt_sections) / sizeof(plt_sections[0]) && r.dynsym; s++)
	{
		GElf_Shdr	shdr;
		Elf_Scn    *scn = parca_elf_section(f->elf, plt_sections[s], &shdr);
		Elf_Data   *data = scn ? elf_getdata(scn, NULL) : NULL;
		size_t		entsize = shdr.sh_entsize >= 8 ? shdr.sh_entsize : 16;

		if (data == NULL || data->d_buf == NULL)
			continue;
		for (size_t off = 0; off + entsize <= data->d_size; off += entsize)
		{
			uint32_t	sym = plt_entry_symbol((const unsigned char *) data->d_buf + off,
											   entsize, shdr.sh_addr + off, &r);
			GElf_Sym	gsym;
			const char *name;

			if (sym == 0 || gelf_getsym(r.dynsym, (int) sym, &gsym) == NULL ||
				(name = elf_strptr(f->elf, r.dynstr, gsym.st_name)) == NULL ||
				name[0] == '\0')
				continue;
			if (f->nplt == cap)
			{
				cap = cap ? cap * 2 : 64;
				f->plt = xrealloc(f->plt, cap * sizeof(Symbol));
			}
			f->plt[f->nplt].addr = shdr.sh_addr + off;
			f->plt[f->nplt].size = (uint32_t) entsize;
			f->plt[f->nplt].name = (uint32_t) names.len;
			buf_printf(&names, "%s@plt", name);
			buf_append(&names, "", 1);
			f->nplt++;
		}
	}
	sort_by_address(f->plt, f->nplt);
	f->plt_names = names.data;
	objfile_charge(f, cap * sizeof(Symbol) + names.cap);
	u64map_free(&r.by_slot);
	free(r.by_index);
}

/* The last symbol at or below addr, or NULL. */
static const Symbol *
last_at_or_below(const Symbol *syms, int n, uint64_t addr)
{
	int			lo = 0;
	int			hi = n;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? &syms[lo - 1] : NULL;
}

const char *
objfile_symbol(ObjFile *f, uint64_t vaddr)
{
	const Symbol *s;

	if (f->elf == NULL)
		return NULL;
	if (!f->syms_loaded)
	{
		f->syms_loaded = true;
		load_function_symbols(f);
		find_plt(f);
	}
	if (!f->plt_loaded && vaddr >= f->plt_low && vaddr < f->plt_high)
	{
		f->plt_loaded = true;
		load_plt(f);
	}
	s = last_at_or_below(f->plt, f->nplt, vaddr);
	if (s && vaddr < s->addr + s->size)
		return f->plt_names + s->name;
	s = last_at_or_below(f->syms, f->nsyms, vaddr);
	if (s == NULL)
		return NULL;
	/* Sized symbols must contain vaddr; unsized ones reach the next symbol. */
	if (s->size != 0 && vaddr >= s->addr + s->size)
		return NULL;
	return elf_strptr(f->sym_elf, f->sym_strndx, s->name);
}

/* The address and size of the function symbol called name, by a scan. */
static bool
find_function(ObjFile *f, const char *name, uint64_t *addr, uint64_t *size)
{
	if (!f->syms_loaded)
		objfile_symbol(f, 0);
	for (int i = 0; i < f->nsyms; i++)
	{
		const char *s = elf_strptr(f->sym_elf, f->sym_strndx, f->syms[i].name);

		if (s && strcmp(s, name) == 0)
		{
			*addr = f->syms[i].addr;
			*size = f->syms[i].size;
			return true;
		}
	}
	return false;
}

/*
 * The defined dynamic symbol called name, found as the dynamic linker finds
 * it, through .gnu.hash: the few symbols of the name's hash chain rather
 * than every symbol (node exports 75,000; every PostgreSQL backend and
 * every Python process the agent meets is asked for its symbols).  1:
 * found, 0: not there, -1: the file has no usable table.
 */
static int
gnu_hash_lookup(Elf *elf, const char *name, GElf_Sym *sym)
{
	GElf_Shdr	shdr;
	GElf_Shdr	symshdr;
	Elf_Scn    *scn = parca_elf_section(elf, ".gnu.hash", &shdr);
	Elf_Data   *data = scn && shdr.sh_type == SHT_GNU_HASH ? elf_getdata(scn, NULL) : NULL;
	Elf_Scn    *symscn = data ? elf_getscn(elf, shdr.sh_link) : NULL;
	Elf_Data   *syms = symscn && gelf_getshdr(symscn, &symshdr) ?
		elf_getdata(symscn, NULL) : NULL;
	const uint32_t *w;
	size_t		nwords;
	size_t		buckets;
	size_t		chain;
	uint32_t	hash = 5381;

	if (syms == NULL || data->d_size < 4 * sizeof(uint32_t))
		return -1;
	w = data->d_buf;
	nwords = data->d_size / sizeof(uint32_t);
	/* nbuckets, symoffset, bloom words (64 or 32 bits), shift; bloom; buckets; chains */
	buckets = 4 + (size_t) w[2] * (gelf_getclass(elf) == ELFCLASS64 ? 2 : 1);
	chain = buckets + w[0];
	if (w[0] == 0 || chain > nwords)
		return -1;
	for (const unsigned char *c = (const unsigned char *) name; *c; c++)
		hash = hash * 33 + *c;
	for (uint64_t i = w[buckets + hash % w[0]]; i >= w[1] && chain + (i - w[1]) < nwords; i++)
	{
		uint32_t	entry = w[chain + (i - w[1])];
		const char *s;

		if ((entry | 1) == (hash | 1) && gelf_getsym(syms, (int) i, sym) != NULL &&
			sym->st_shndx != SHN_UNDEF &&
			(s = elf_strptr(elf, symshdr.sh_link, sym->st_name)) != NULL &&
			strcmp(s, name) == 0)
			return 1;
		if (entry & 1)
			break;
	}
	return 0;
}

bool
objfile_dynamic_symbol(ObjFile *f, const char *name, uint64_t *addr, uint64_t *size)
{
	GElf_Shdr	shdr;
	GElf_Sym	found;
	int			hashed = f->elf ? gnu_hash_lookup(f->elf, name, &found) : -1;
	Elf_Scn    *scn = hashed < 0 && f->elf ? objfile_find_symtab(f->elf, SHT_DYNSYM, &shdr) : NULL;
	Elf_Data   *data = scn ? elf_getdata(scn, NULL) : NULL;

	if (hashed > 0)
	{
		*addr = found.st_value;
		*size = found.st_size;
	}
	if (hashed >= 0)
		return hashed > 0;
	for (size_t i = 1; data && i < shdr.sh_size / shdr.sh_entsize; i++)
	{
		GElf_Sym	sym;
		const char *s;

		if (gelf_getsym(data, (int) i, &sym) != NULL && sym.st_shndx != SHN_UNDEF &&
			(s = elf_strptr(f->elf, shdr.sh_link, sym.st_name)) != NULL &&
			strcmp(s, name) == 0)
		{
			*addr = sym.st_value;
			*size = sym.st_size;
			return true;
		}
	}
	return false;
}

/*
 * runtime.systemstack (asm_amd64.s) begins, in every release since 1.17:
 *	mov %fs:TLS_G, %rax			64 48 8b 04 25 <disp32>
 *	mov 0x30(%rax), %rbx		48 8b 58 30			(g.m)
 *	...
 *	call *%rdi					ff d7				(the function, on g0)
 *	mov %fs:TLS_G, %rax
 *	mov 0x30(%rax), %rbx
 *	mov M_CURG(%rbx), %rax		48 8b 83 <disp32> or 48 8b 43 <disp8>
 * A binary whose code differs (cgo's dynamic TLS, another architecture) is
 * not taken for Go.
 */
static void
read_go_runtime(ObjFile *f)
{
	uint64_t	addr;
	uint64_t	size;
	const unsigned char *c;
	size_t		i;
	size_t		call = 0;
	int32_t		disp;
	GElf_Shdr	shdr;

	f->go_state = 0;
	if (parca_elf_section(f->elf, ".go.buildinfo", &shdr) == NULL ||
		(!find_function(f, "runtime.systemstack.abi0", &addr, &size) &&
		 !find_function(f, "runtime.systemstack", &addr, &size)) ||
		size < 32 || size > 4096 || (c = objfile_bytes(f, addr, size)) == NULL)
		return;
	if (memcmp(c + 5, "\x64\x48\x8b\x04\x25", 5) != 0 ||
		memcmp(c + 14, "\x48\x8b\x58\x30", 4) != 0)
		return;
	memcpy(&disp, c + 10, 4);
	for (i = 14; i + 2 <= size && call == 0; i++)
		if (c[i] == 0xff && c[i + 1] == 0xd7)
			call = i + 2;
	for (i = call; call && i + 7 <= size && i < call + 32; i++)
	{
		if (c[i] == 0x48 && c[i + 1] == 0x8b && (c[i + 2] == 0x83 || c[i + 2] == 0x43))
		{
			int32_t		off = 0;

			if (c[i + 2] == 0x83)
				memcpy(&off, c + i + 3, 4);
			else
				off = (int8_t) c[i + 3];
			if (off <= 0 || off >= 4096)
				return;
			f->go_tls_g = disp;
			f->go_m_curg = (uint64_t) off;
			f->go_state = 1;
			return;
		}
	}
}

bool
objfile_go_runtime(ObjFile *f, int64_t *tls_g, uint64_t *m_curg)
{
	if (f->elf == NULL)
		return false;
	if (f->go_state < 0)
		read_go_runtime(f);
	*tls_g = f->go_tls_g;
	*m_curg = f->go_m_curg;
	return f->go_state == 1;
}

const GoPclntab *
objfile_gopclntab(ObjFile *f)
{
	if (f->elf == NULL)
		return NULL;
	if (f->gopclntab_state < 0)
		f->gopclntab_state = gopclntab_open(f->elf, &f->gopclntab);
	return f->gopclntab_state == 1 ? &f->gopclntab : NULL;
}
