/*
 * gopclntab.h
 *		The function, file and line of an address of a Go program from its
 *		.gopclntab, inlined frames included: what the Go runtime itself
 *		reports in a traceback or a CPU profile.
 *
 * Every Go program carries this table, also one built without DWARF
 * (-ldflags=-s -w), and it is read in place: no decompression, no
 * allocation.  Go 1.16 and later (header magic 0xfffffffa for 1.16 and
 * 1.17, 0xfffffff0 for 1.18 and 1.19, 0xfffffff1 for 1.20 and later),
 * little-endian, 64-bit pointers.
 * The file may be hostile (the extension reads uploaded files): every read
 * is bounds-checked, and a table that does not hold together is not
 * opened.
 *
 * Plain C over libelf: shared by the agent (on the files processes map)
 * and the extension (on debug information stored in the database), as
 * common/dwarf/ is.
 */
#ifndef PARCA_GOPCLNTAB_H
#define PARCA_GOPCLNTAB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A region of the file's bytes. */
typedef struct GoBytes
{
	const unsigned char *p;
	size_t		len;
} GoBytes;

/* The table's layout, by the Go release that introduced it. */
typedef enum GoLayout
{
	GO_116,						/* absolute entries and funcdata pointers */
	GO_118,						/* entries and funcdata relative (text, go:func.*) */
	GO_120						/* _func.startLine; a shorter inlinedCall */
} GoLayout;

typedef struct GoPclntab
{
	Elf		   *elf;
	GoBytes		file;			/* the whole file */
	GoBytes		tab;			/* the .gopclntab section */
	GoLayout	layout;
	uint8_t		quantum;		/* instruction size quantum */
	uint64_t	nfunc;
	uint64_t	text_start;		/* runtime.text: entries are offsets from it (1.18+) */
	uint64_t	first_entry;	/* the lowest function's entry address */
	GoBytes		funcnames;
	GoBytes		cutab;
	GoBytes		filetab;
	GoBytes		pctab;
	GoBytes		functab;		/* the function table and the _func records */
	GoBytes		gofunc;			/* from go:func.* to its segment's end (1.18+);
								 * len 0 if unknown */
} GoPclntab;

typedef struct GoLine
{
	const char *function;
	const char *filename;		/* "" if unknown */
	int64_t		start_line;		/* the line of func (Go 1.20 and later), else 0 */
	int64_t		line;			/* 0 if unknown */
} GoLine;

/*
 * Open the .gopclntab of an ELF file whose bytes libelf holds (mapped or
 * in memory): false if it has none this reader knows.  The table points
 * into those bytes and elf, and needs no closing.
 */
extern bool gopclntab_open(Elf *elf, GoPclntab *t);

/*
 * The chain of frames at ELF virtual address pc, innermost (inlined)
 * first, down to the function that contains it; at most max.  Returns
 * their number, 0 when the table does not know the address.  The strings
 * point into the file.  *complete is false when pc lies in inlined code
 * whose calls the file does not hold (the inline trees are in read-only
 * data, which a debug file may lack): the last frame is then the function
 * that contains pc at the position of an inlined callee's code, as
 * go tool pprof names it; DWARF, where the file has it, knows the calls.
 */
extern int	gopclntab_lines(const GoPclntab *t, uint64_t pc, GoLine *lines, int max,
							bool *complete);

#endif							/* PARCA_GOPCLNTAB_H */
