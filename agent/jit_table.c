/*
 * jit_table.c
 *		A process's JIT code ranges and their names; see jit_table.h.
 *
 * Ranges are appended as read and sorted at the next lookup after an
 * addition: sorted by start, then an overlap is settled for the later
 * arrival (an earlier range that starts at the same address is dropped,
 * one that starts before is cut where the later begins; an earlier range
 * that starts inside a later one is dropped).  The text of a dropped range
 * stays in the arena until the table is reset: the bound counts it.
 */
#include "jit_table.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define ALIGN_LINES(n) (((n) + (sizeof(JitLine) - 1)) & ~(sizeof(JitLine) - 1))

size_t
jit_table_bytes(const JitTable *t)
{
	return t->cap * sizeof(JitSymbol) + t->arena_cap;
}

/* The capacities for one more symbol and extra arena bytes. */
static void
grown(const JitTable *t, size_t extra, size_t slack_div, size_t *cap, size_t *arena_cap)
{
	*cap = t->cap;
	*arena_cap = t->arena_cap;
	if (t->nsymbols == t->cap)
		*cap = t->nsymbols + 1 + (slack_div ? (t->nsymbols + 64) / slack_div : 0);
	if (t->arena_len + extra > t->arena_cap)
		*arena_cap = t->arena_len + extra + (slack_div ? (t->arena_len + 4096) / slack_div : 0);
}

/*
 * Room for one more symbol and extra arena bytes: the arrays double, or
 * near the bound grow by an eighth, then by what is needed; false (and
 * the table full) past the bound.
 */
static bool
reserve(JitTable *t, size_t extra)
{
	static const size_t slack[] = {1, 8, 0};
	size_t		cap = 0;
	size_t		arena_cap = 0;
	size_t		i;

	for (i = 0; i < sizeof(slack) / sizeof(slack[0]); i++)
	{
		grown(t, extra, slack[i], &cap, &arena_cap);
		if (cap * sizeof(JitSymbol) + arena_cap <= t->max_bytes)
			break;
	}
	if (i == sizeof(slack) / sizeof(slack[0]))
	{
		t->full = true;
		return false;
	}
	if (cap != t->cap)
	{
		t->symbols = xrealloc(t->symbols, cap * sizeof(JitSymbol));
		t->cap = cap;
	}
	if (arena_cap != t->arena_cap)
	{
		t->arena = xrealloc(t->arena, arena_cap);
		t->arena_cap = arena_cap;
	}
	return true;
}

bool
jit_table_add(JitTable *t, uint64_t start, uint64_t size, const char *name, size_t len,
			  const char *file, int32_t line, const JitLine *lines, uint32_t nlines)
{
	size_t		flen = file ? strlen(file) : 0;
	size_t		text_len = len + 1 + flen + 1;
	size_t		lines_at;
	JitSymbol  *s;

	if (size == 0 || size > UINT32_MAX || start + size < start)
		return true;			/* nothing to name */
	lines_at = ALIGN_LINES(t->arena_len + text_len);
	if (lines_at + (size_t) nlines * sizeof(JitLine) > UINT32_MAX ||
		!reserve(t, lines_at - t->arena_len + (size_t) nlines * sizeof(JitLine)))
		return false;
	s = &t->symbols[t->nsymbols++];
	s->start = start;
	s->size = (uint32_t) size;
	s->seq = t->next_seq++;
	s->text = (uint32_t) t->arena_len;
	s->nlines = nlines;
	s->line = line;
	memcpy(t->arena + t->arena_len, name, len);
	t->arena[t->arena_len + len] = '\0';
	if (flen)
		memcpy(t->arena + t->arena_len + len + 1, file, flen);
	t->arena[t->arena_len + len + 1 + flen] = '\0';
	if (nlines > 0)
		memcpy(t->arena + lines_at, lines, (size_t) nlines * sizeof(JitLine));
	t->arena_len = lines_at + (size_t) nlines * sizeof(JitLine);
	return true;
}

static int
symbol_cmp(const void *a, const void *b)
{
	const JitSymbol *x = a;
	const JitSymbol *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort, and settle overlaps for the later arrival (see above). */
static void
normalize(JitTable *t)
{
	size_t		kept = 0;

	qsort(t->symbols, t->nsymbols, sizeof(JitSymbol), symbol_cmp);
	for (size_t i = 0; i < t->nsymbols; i++)
	{
		JitSymbol	e = t->symbols[i];

		if (kept > 0)
		{
			JitSymbol  *last = &t->symbols[kept - 1];

			if (last->start + last->size > e.start)
			{
				if (e.seq < last->seq)
					continue;
				if (last->start == e.start)
					kept--;
				else
					last->size = (uint32_t) (e.start - last->start);
			}
		}
		t->symbols[kept++] = e;
	}
	t->nsymbols = t->sorted = kept;
}

static JitSymbol *
find(JitTable *t, uint64_t addr)
{
	size_t		lo = 0;
	size_t		hi;

	if (t->nsymbols == 0)
		return NULL;
	if (t->sorted != t->nsymbols)
		normalize(t);
	hi = t->nsymbols;
	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (t->symbols[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - t->symbols[lo - 1].start >= t->symbols[lo - 1].size)
		return NULL;
	return &t->symbols[lo - 1];
}

bool
jit_table_move(JitTable *t, uint64_t old_start, uint64_t new_start)
{
	JitSymbol  *s = find(t, old_start);
	JitSymbol	copy;

	if (s == NULL || s->start != old_start || new_start + s->size < new_start)
		return false;
	copy = *s;					/* (reserve may move the array) */
	if (!reserve(t, 0))
		return false;
	copy.start = new_start;
	copy.seq = t->next_seq++;
	t->symbols[t->nsymbols++] = copy;
	return true;
}

bool
jit_table_lookup(JitTable *t, uint64_t addr, JitFrame *out)
{
	JitSymbol  *s = find(t, addr);
	const JitLine *lines;

	if (s == NULL)
		return false;
	out->name = t->arena + s->text;
	out->file = out->name + strlen(out->name) + 1;
	out->start_line = s->line;
	out->line = s->line;
	lines = (const JitLine *) (t->arena + ALIGN_LINES(s->text + strlen(out->name) + 1 +
													 strlen(out->file) + 1));
	for (uint32_t i = 0; i < s->nlines && lines[i].offset <= addr - s->start; i++)
		out->line = lines[i].line;
	return true;
}

void
jit_table_reset(JitTable *t)
{
	size_t		max_bytes = t->max_bytes;

	free(t->symbols);
	free(t->arena);
	memset(t, 0, sizeof(*t));
	t->max_bytes = max_bytes;
}
