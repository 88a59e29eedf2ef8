/*
 * objfile.h
 *		The ELF files that processes map, known once for every process that
 *		maps them: build id, PT_LOAD segments, call frame information for
 *		unwinding, function symbols (PLT stubs included) for naming, and
 *		whether the file's DWARF is cheap to read.
 *
 * A file is identified by device and inode and opened on its first use
 * through a process that maps it.  What is read from it is read when first
 * needed (CFI at the first unwind through it, symbols at the first lookup)
 * and kept across flushes, so that the hundredth short-lived process
 * running the same compiler costs no ELF work.  The cache is bounded in
 * bytes, least recently used files closed first, and the file pages the
 * agent touched are given back at every flush (objfile_end_flush).
 */
#ifndef AGENT_OBJFILE_H
#define AGENT_OBJFILE_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gopclntab/gopclntab.h"

typedef struct ObjFile ObjFile;

/*
 * The file with this device (major << 32 | minor, as /proc/PID/maps shows
 * it) and inode, opened on first use as path in process pid (through its
 * root, else its map_files entry for the mapping [start, end), else path
 * here if it is the same file).  Never NULL; a file that cannot be opened
 * has no build id, segments or symbols (and is tried again a second later).
 * The pointer is valid until the next objfile_end_flush().
 */
extern ObjFile *objfile_get(uint64_t dev, uint64_t ino, uint32_t pid, const char *path,
							uint64_t start, uint64_t end);

/* Could the file be opened (as an ELF file)? */
extern bool objfile_is_open(const ObjFile *f);

/* The GNU build id in hex, "" if none. */
extern const char *objfile_build_id(const ObjFile *f);

/* The ELF virtual address of a file offset, through the PT_LOAD segments. */
extern bool objfile_vaddr(const ObjFile *f, uint64_t offset, uint64_t *vaddr);

/*
 * The file's bytes at ELF virtual address vaddr, len of them, as its
 * PT_LOAD segments map them from the file; NULL if they are not all there.
 * Valid until the next objfile_end_flush().
 */
extern const void *objfile_bytes(ObjFile *f, uint64_t vaddr, size_t len);

/*
 * The value (ELF virtual address) and size of the symbol called name that
 * the file defines in .dynsym, functions and data alike; false if none.
 */
extern bool objfile_dynamic_symbol(ObjFile *f, const char *name, uint64_t *addr,
								   uint64_t *size);

/* The file's CFI: .eh_frame, else .debug_frame; NULL if none. */
extern Dwarf_CFI *objfile_cfi(ObjFile *f);

/*
 * Unwinding used the FDE starting at fde_start (libdw keeps it parsed):
 * charged to the cache the first time.
 */
extern void objfile_cfi_used(ObjFile *f, uint64_t fde_start);

/*
 * The function symbol containing vaddr (from .symtab, else the separate
 * debug file's, else .dynsym), or "name@plt" in a PLT stub; NULL if none.
 * Valid until the next objfile_end_flush().
 */
extern const char *objfile_symbol(ObjFile *f, uint64_t vaddr);

/*
 * For a Go program: where its g is in thread-local storage (from the
 * thread pointer) and the offset of m.curg in its runtime's m, read from
 * the machine code of runtime.systemstack (amd64, Go 1.17 and later);
 * false if the file is not such a program.  See docs/agent.md, "Go".
 */
extern bool objfile_go_runtime(ObjFile *f, int64_t *tls_g, uint64_t *m_curg);

/*
 * For uploading the file's debug information: a descriptor of its
 * separate debug file (by build id), else of the file itself when it has a
 * symbol table or DWARF; -1 if neither, or if it has no build id.  The
 * caller closes it.
 */
extern int	objfile_open_debuginfo(ObjFile *f);

/*
 * The file's DWARF (or its separate debug file's, by build id) when it is
 * cheap to read: not compressed and not larger than 8 MB; NULL otherwise.
 * libdw decompresses every debug section of a file when it first reads
 * it, which costs tens of milliseconds and megabytes (Debian's -dbg
 * files, Go binaries), and finding an address's unit in a large file
 * reads megabytes of it; small uncompressed DWARF is read in place.
 * Without DWARF, names come from the symbol table.  Opened for the current
 * flush only.
 */
extern Dwarf *objfile_dwarf(ObjFile *f);

/*
 * A Go program's .gopclntab (function, file, line and inlined frames of
 * every function, read in place), opened at the first use; NULL if the
 * file has none that common/gopclntab/ reads.
 */
extern const GoPclntab *objfile_gopclntab(ObjFile *f);

/*
 * Done with the file for this flush's symbolization: close its DWARF and
 * drop its pages from the agent's resident memory, so that symbolizing
 * many files costs the memory of one at a time.
 */
extern void objfile_release(ObjFile *f);

/*
 * Drop the pages of every cached file from the agent's resident memory
 * (they are read again from the page cache when needed).
 */
extern void objfile_drop_pages(void);

/*
 * At every flush: close the DWARF handles, give back the file pages read
 * since the last flush, and close the least recently used files until the
 * cache holds at most max_bytes.
 */
extern void objfile_end_flush(size_t max_bytes);

/* Bytes the cache holds now (its own memory and libdw's, estimated). */
extern size_t objfile_cache_bytes(void);

#endif							/* AGENT_OBJFILE_H */
