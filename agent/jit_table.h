/*
 * jit_table.h
 *		A process's JIT-compiled code: address ranges and what each is (a
 *		name, and a source file, line and line table where the runtime says
 *		so), as its perf map or jitdump file describes them.
 *
 * Ranges arrive in the order the runtime wrote them; a later one wins
 * where they overlap (code freed and its memory reused).  The table is
 * bounded in bytes by its owner: jit_table_add refuses what would pass
 * the bound.
 */
#ifndef AGENT_JIT_TABLE_H
#define AGENT_JIT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JitSymbol
{
	uint64_t	start;
	uint32_t	size;
	uint32_t	seq;			/* arrival order: later wins */
	uint32_t	text;			/* offset in the arena: name NUL file NUL */
	uint32_t	nlines;			/* JitLine entries after the text, aligned */
	int32_t		line;			/* the first line, 0 if unknown */
} JitSymbol;

/* One entry of a code's line table: from this offset in the code on. */
typedef struct JitLine
{
	uint32_t	offset;
	int32_t		line;
} JitLine;

typedef struct JitTable
{
	JitSymbol  *symbols;
	size_t		nsymbols;
	size_t		sorted;			/* symbols[0..sorted) are sorted, disjoint */
	size_t		cap;
	char	   *arena;
	size_t		arena_len;
	size_t		arena_cap;
	uint32_t	next_seq;
	size_t		max_bytes;
	bool		full;			/* something was refused for the bound */
} JitTable;

/* What a lookup finds: pointers into the table, valid until it changes. */
typedef struct JitFrame
{
	const char *name;			/* as the runtime wrote it */
	const char *file;			/* "" if none */
	int32_t		start_line;		/* the code's first line, 0 if unknown */
	int32_t		line;			/* the address's line, 0 if unknown */
} JitFrame;

/*
 * Add code at [start, start + size) named name (len bytes, no NUL needed),
 * from file (or NULL) at line, with an optional line table (offsets from
 * start, ascending).  False when the table's bound refuses it (then
 * table->full is set).
 */
extern bool jit_table_add(JitTable *t, uint64_t start, uint64_t size,
						  const char *name, size_t len, const char *file, int32_t line,
						  const JitLine *lines, uint32_t nlines);

/*
 * Code that moved: a copy of the entry at old_start (if any) at new_start.
 * False if there is none or the bound refuses it.
 */
extern bool jit_table_move(JitTable *t, uint64_t old_start, uint64_t new_start);

/* The code covering addr, or false. */
extern bool jit_table_lookup(JitTable *t, uint64_t addr, JitFrame *out);

/* Forget everything (the bound stays). */
extern void jit_table_reset(JitTable *t);

/* Bytes it holds. */
extern size_t jit_table_bytes(const JitTable *t);

#endif							/* AGENT_JIT_TABLE_H */
