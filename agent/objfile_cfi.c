/*
 * objfile_cfi.c
 *		A file's call frame information, for unwinding (objfile.h): its
 *		.eh_frame, else its .debug_frame, read by libdw and charged to the
 *		per-file cache by the FDEs used.
 */
#include "objfile_internal.h"

#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf_lines.h"
#include "ids/ids.h"

/*
 * libdw keeps each FDE it has parsed (one per function unwound through),
 * about 80 bytes each (measured with libdw 0.188 on cc1's 27,000
 * functions); the cache counts the FDEs each file has used, and charges
 * them with its own record of them.
 */
#define CFI_BYTES_PER_FDE (80 + 2 * sizeof(uint64_t))

/*
 * CFI from .debug_frame, for files without .eh_frame (Go binaries).  libdw
 * reads .debug_frame only as part of a Dwarf, and opening one on the file
 * would decompress every debug section (megabytes for a Go program): it is
 * opened on a small ELF image in memory holding the decompressed
 * .debug_frame alone.
 */
static void
load_debug_frame(ObjFile *f)
{
	static const char names[] = "\0.shstrtab\0.debug_frame";
	GElf_Shdr	shdr;
	Elf_Scn    *scn = parca_elf_section(f->elf, ".debug_frame", &shdr);
	Elf_Data   *data = NULL;
	GElf_Ehdr	orig;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	size_t		size;

	if (scn == NULL || gelf_getehdr(f->elf, &orig) == NULL ||
		orig.e_ident[EI_CLASS] != ELFCLASS64)
		return;
	if ((shdr.sh_flags & SHF_COMPRESSED) == 0 || elf_compress(scn, 0, 0) >= 0)
		data = elf_getdata(scn, NULL);
	if (data == NULL || data->d_size == 0)
		return;

	/* Header, names, .debug_frame, then section headers (null, names, frame). */
	size = sizeof(Elf64_Ehdr) + sizeof(names) + data->d_size;
	size = (size + 7) & ~(size_t) 7;
	f->frame_image = xcalloc(1, size + 3 * sizeof(Elf64_Shdr));
	objfile_charge(f, size + 3 * sizeof(Elf64_Shdr));
	eh = (Elf64_Ehdr *) f->frame_image;
	memcpy(eh->e_ident, orig.e_ident, EI_NIDENT);
	eh->e_type = orig.e_type;
	eh->e_machine = orig.e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_shoff = size;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	memcpy(f->frame_image + sizeof(Elf64_Ehdr), names, sizeof(names));
	memcpy(f->frame_image + sizeof(Elf64_Ehdr) + sizeof(names), data->d_buf, data->d_size);
	sh = (Elf64_Shdr *) (f->frame_image + size);
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_offset = sizeof(Elf64_Ehdr);
	sh[1].sh_size = sizeof(names);
	sh[1].sh_addralign = 1;
	sh[2].sh_name = 11;
	sh[2].sh_type = SHT_PROGBITS;
	sh[2].sh_offset = sizeof(Elf64_Ehdr) + sizeof(names);
	sh[2].sh_size = data->d_size;
	sh[2].sh_addralign = 1;
	f->frame_elf = elf_memory(f->frame_image, size + 3 * sizeof(Elf64_Shdr));
	if (f->frame_elf)
		f->frame_dwarf = dwarf_begin_elf(f->frame_elf, DWARF_C_READ, NULL);
	if (f->frame_dwarf)
		f->cfi = dwarf_getcfi(f->frame_dwarf);
}

/*
 * libdw (0.188) takes .eh_frame_hdr's search table only from a section
 * before .eh_frame; files linked by lld (libLLVM, which PostgreSQL's JIT
 * loads) have it after, and libdw then finds an address's FDE by parsing
 * and keeping every FDE before it: all 95,000 of libLLVM-14's, 6 MB of
 * heap and 5 MB of file pages read for one lookup.  Swapping the two
 * section headers in libelf's copy of them (the file is untouched; both
 * are found by name) gives libdw the table.
 */
static void
put_eh_frame_hdr_first(Elf *elf)
{
	GElf_Shdr	frame_shdr;
	GElf_Shdr	hdr_shdr;
	Elf_Scn    *frame = parca_elf_section(elf, ".eh_frame", &frame_shdr);
	Elf_Scn    *hdr = parca_elf_section(elf, ".eh_frame_hdr", &hdr_shdr);

	if (frame != NULL && hdr != NULL && elf_ndxscn(frame) < elf_ndxscn(hdr) &&
		!(gelf_update_shdr(frame, &hdr_shdr) && gelf_update_shdr(hdr, &frame_shdr)))
		gelf_update_shdr(frame, &frame_shdr);
}

Dwarf_CFI *
objfile_cfi(ObjFile *f)
{
	if (!f->cfi_loaded && f->elf != NULL)
	{
		f->cfi_loaded = true;
		put_eh_frame_hdr_first(f->elf);
		f->cfi = dwarf_getcfi_elf(f->elf);
		if (f->cfi == NULL)
			load_debug_frame(f);
	}
	return f->cfi;
}

void
objfile_cfi_used(ObjFile *f, uint64_t fde_start)
{
	uint64_t	key = parca_hash64(&fde_start, sizeof(fde_start));

	if (u64map_get(&f->fdes_used, key) == NULL)
	{
		u64map_put(&f->fdes_used, key, (void *) 1);
		objfile_charge(f, CFI_BYTES_PER_FDE);
	}
}
