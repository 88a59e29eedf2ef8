/*
 * aggregate.c
 *		Sample counting and batch building; see aggregate.h and batch.h.
 *
 * Stacks and label sets are keyed by 64-bit hashes of their contents, as
 * the metastore keys locations: a collision is as unlikely here as there.
 */
#include "aggregate.h"

#include <inttypes.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>

#include "ids/ids.h"
#include "metastore_cache.h"
#include "sample.h"
#include "util.h"

typedef struct Series
{
	int			kind;			/* SAMPLE_ON_CPU, SAMPLE_OFF_CPU */
	char	   *labels;
	char	   *title;
	int			index;			/* in the batch being built */
} Series;

typedef struct Entry
{
	uint64_t	series_key;
	int64_t		count;			/* the sum of the samples' values */
	int64_t		samples;
	int			nframes;
	uint64_t	frames[];
} Entry;

static U64Map series_map;		/* hash(labels) -> Series */
static U64Map entries;			/* hash(series, stack) -> Entry */

/*
 * The server's metastore generation under which the rows marked persisted
 * were written; -1 while none is.
 */
static int64_t persisted_generation = -1;

void
agg_add(int kind, const char *labels, const char *title, const uint64_t *frames,
		int nframes, int64_t value)
{
	uint64_t	series_key = parca_hash64(labels, strlen(labels)) + (uint64_t) kind;
	uint64_t	key;
	Entry	   *e;

	if (u64map_get(&series_map, series_key) == NULL)
	{
		Series	   *s = xcalloc(1, sizeof(Series));

		s->kind = kind;
		s->labels = xstrdup(labels);
		s->title = xstrdup(title);
		u64map_put(&series_map, series_key, s);
	}
	/* entry_key() computes the same key from an entry. */
	key = parca_hash64(frames, nframes * sizeof(uint64_t)) ^ series_key;
	e = u64map_get(&entries, key);
	if (e == NULL)
	{
		e = xmalloc(sizeof(Entry) + nframes * sizeof(uint64_t));
		e->series_key = series_key;
		e->count = 0;
		e->samples = 0;
		e->nframes = nframes;
		memcpy(e->frames, frames, nframes * sizeof(uint64_t));
		u64map_put(&entries, key, e);
	}
	e->count += value;
	e->samples++;
}

static uint64_t
entry_key(const Entry *e)
{
	return parca_hash64(e->frames, e->nframes * sizeof(uint64_t)) ^ e->series_key;
}

void
agg_settle(uint64_t (*decide) (const uint64_t *frames, int nframes, int64_t samples))
{
	Entry	  **undecided = xcalloc(entries.count, sizeof(Entry *));
	size_t		n = 0;
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&entries, &pos, NULL, &v))
	{
		Entry	   *e = v;

		if (e->nframes > 0 && e->frames[e->nframes - 1] == AGG_UNDECIDED)
			undecided[n++] = e;
	}
	for (size_t i = 0; i < n; i++)
	{
		Entry	   *e = undecided[i];
		uint64_t	last;
		Entry	   *same;

		u64map_remove(&entries, entry_key(e));
		last = decide(e->frames, e->nframes - 1, e->samples);
		if (last)
			e->frames[e->nframes - 1] = last;
		else
			e->nframes--;
		same = u64map_get(&entries, entry_key(e));
		if (same)
		{
			same->count += e->count;
			same->samples += e->samples;
			free(e);
		}
		else
			u64map_put(&entries, entry_key(e), e);
	}
	free(undecided);
}

/* A folded line and its count, for printing. */
typedef struct Folded
{
	char	   *text;
	int64_t		count;
	int			off_cpu;
} Folded;

static int
folded_cmp_text(const void *a, const void *b)
{
	return strcmp(((const Folded *) a)->text, ((const Folded *) b)->text);
}

static int
folded_cmp_count(const void *a, const void *b)
{
	const Folded *x = a;
	const Folded *y = b;

	if (x->off_cpu != y->off_cpu)
		return x->off_cpu - y->off_cpu;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->text, y->text);
}

/* A frame's name for folded output: its functions, outermost first. */
static void
fold_location(Buf *out, uint64_t id)
{
	MsLocation *loc = ms_get_location(id);

	if (loc == NULL)
	{
		buf_append(out, ";?", 2);
		return;
	}
	if (loc->nlines == 0)
	{
		MsMapping  *m = loc->mapping_id ? ms_get_mapping(loc->mapping_id) : NULL;
		const char *file = m ? strrchr(m->file, '/') : NULL;

		buf_printf(out, ";%s+0x%" PRIx64, file ? file + 1 : m ? m->file : "?",
				   loc->address);
		return;
	}
	for (int i = loc->nlines - 1; i >= 0; i--)
	{
		MsFunction *f = ms_get_function(loc->function_ids[i]);

		buf_printf(out, ";%s", f ? f->name : "?");
	}
}

/*
 * Stacks that differ only in addresses within the same functions print
 * alike, so lines are merged by their text before sorting by count.
 */
void
agg_print_folded(FILE *out)
{
	Folded	   *list = xcalloc(entries.count, sizeof(Folded));
	size_t		n = 0;
	size_t		merged = 0;
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&entries, &pos, NULL, &v))
	{
		Entry	   *e = v;
		Series	   *s = u64map_get(&series_map, e->series_key);
		Buf			line = {0};

		buf_printf(&line, "%s%s", s->title, s->kind == SAMPLE_OFF_CPU ? " [off-CPU]" : "");
		for (int f = e->nframes - 1; f >= 0; f--)
			fold_location(&line, e->frames[f]);
		list[n].text = line.data;
		list[n].count = e->count;
		list[n].off_cpu = s->kind == SAMPLE_OFF_CPU;
		n++;
	}
	qsort(list, n, sizeof(Folded), folded_cmp_text);
	for (size_t i = 0; i < n; i++)
	{
		if (merged > 0 && strcmp(list[merged - 1].text, list[i].text) == 0)
		{
			list[merged - 1].count += list[i].count;
			free(list[i].text);
		}
		else
			list[merged++] = list[i];
	}
	qsort(list, merged, sizeof(Folded), folded_cmp_count);
	for (size_t i = 0; i < merged; i++)
	{
		fprintf(out, "%s %" PRId64 "\n", list[i].text, list[i].count);
		free(list[i].text);
	}
	fflush(out);
	free(list);
}

/* Forget what was counted. */
static void
agg_reset(void)
{
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&series_map, &pos, NULL, &v))
	{
		free(((Series *) v)->labels);
		free(((Series *) v)->title);
		free(v);
	}
	pos = 0;
	while (u64map_next(&entries, &pos, NULL, &v))
		free(v);
	u64map_clear(&series_map);
	u64map_clear(&entries);
}

/* Array literal builders: elements are added with a separating comma. */
static void
lit_sep(Buf *b)
{
	if (b->len > 1)
		buf_append(b, ",", 1);
}

static void
lit_int(Buf *b, int64_t v)
{
	lit_sep(b);
	buf_printf(b, "%" PRId64, v);
}

static void
lit_str(Buf *b, const char *s)
{
	lit_sep(b);
	buf_append(b, "\"", 1);
	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			buf_append(b, "\\", 1);
		buf_append(b, s, 1);
	}
	buf_append(b, "\"", 1);
}

typedef struct RowSet
{
	Buf			cols[6];
	int			ncols;
	U64Map		seen;
	uint64_t   *ids;
	int			nids;
	int			cap;
} RowSet;

static void
rowset_init(RowSet *r, int ncols)
{
	memset(r, 0, sizeof(*r));
	r->ncols = ncols;
	for (int i = 0; i < ncols; i++)
		buf_append(&r->cols[i], "{", 1);
}

/* True the first time id is offered: the caller then adds the row. */
static bool
rowset_want(RowSet *r, uint64_t id)
{
	if (u64map_get(&r->seen, id))
		return false;
	u64map_put(&r->seen, id, (void *) 1);
	if (r->nids == r->cap)
	{
		r->cap = r->cap ? r->cap * 2 : 64;
		r->ids = xrealloc(r->ids, r->cap * sizeof(uint64_t));
	}
	r->ids[r->nids++] = id;
	return true;
}

static size_t
rowset_finish(RowSet *r, char **cols, uint64_t **ids, int *nids)
{
	size_t		bytes = r->nids * sizeof(uint64_t);

	for (int i = 0; i < r->ncols; i++)
	{
		buf_append(&r->cols[i], "}", 2);	/* with the NUL */
		cols[i] = r->cols[i].data;
		bytes += r->cols[i].len;
	}
	*ids = r->ids;
	*nids = r->nids;
	u64map_free(&r->seen);
	return bytes;
}

static void
add_mapping_row(RowSet *r, uint64_t id)
{
	MsMapping  *m = ms_get_mapping(id);

	if (m == NULL || m->persisted || !rowset_want(r, id))
		return;
	lit_int(&r->cols[0], (int64_t) m->id);
	lit_str(&r->cols[1], m->build_id);
	lit_str(&r->cols[2], m->file);
}

static void
add_function_row(RowSet *r, uint64_t id)
{
	MsFunction *f = ms_get_function(id);

	if (f == NULL || f->persisted || !rowset_want(r, id))
		return;
	lit_int(&r->cols[0], (int64_t) f->id);
	lit_str(&r->cols[1], f->name);
	lit_str(&r->cols[2], f->system_name);
	lit_str(&r->cols[3], f->filename);
	lit_int(&r->cols[4], f->start_line);
}

static void
add_location_rows(RowSet *rows, uint64_t id)
{
	MsLocation *l = ms_get_location(id);

	if (l == NULL || l->persisted || !rowset_want(&rows[2], id))
		return;
	if (l->mapping_id)
		add_mapping_row(&rows[0], l->mapping_id);
	for (int i = 0; i < l->nlines; i++)
	{
		add_function_row(&rows[1], l->function_ids[i]);
		lit_int(&rows[2].cols[4], (int64_t) l->function_ids[i]);
		lit_int(&rows[2].cols[5], l->lines[i]);
	}
	lit_int(&rows[2].cols[0], (int64_t) l->id);
	lit_sep(&rows[2].cols[1]);
	if (l->mapping_id)
		buf_printf(&rows[2].cols[1], "%" PRId64, (int64_t) l->mapping_id);
	else
		buf_append(&rows[2].cols[1], "NULL", 4);
	lit_int(&rows[2].cols[2], (int64_t) l->address);
	lit_int(&rows[2].cols[3], l->nlines);
}

/* The metastore rows b's samples need that the server may not have. */
static void
batch_fill_rows(Batch *b)
{
	RowSet		rows[3];

	rowset_init(&rows[0], 3);
	rowset_init(&rows[1], 5);
	rowset_init(&rows[2], 6);
	for (int f = 0; f < b->stack_start[b->nsamples]; f++)
		add_location_rows(rows, b->frames[f]);
	b->bytes += rowset_finish(&rows[0], b->mappings, &b->new_ids[0], &b->nnew_ids[0]);
	b->bytes += rowset_finish(&rows[1], b->functions, &b->new_ids[1], &b->nnew_ids[1]);
	b->bytes += rowset_finish(&rows[2], b->locations, &b->new_ids[2], &b->nnew_ids[2]);
	b->generation = persisted_generation;
}

/* Frees what batch_fill_rows made, and takes its bytes off b->bytes. */
static void
batch_free_rows(Batch *b)
{
	char	  **cols[3] = {b->mappings, b->functions, b->locations};
	int			ncols[3] = {3, 5, 6};

	for (int k = 0; k < 3; k++)
	{
		for (int i = 0; i < ncols[k]; i++)
		{
			if (cols[k][i])
				b->bytes -= strlen(cols[k][i]) + 1;
			free(cols[k][i]);
			cols[k][i] = NULL;
		}
		b->bytes -= b->nnew_ids[k] * sizeof(uint64_t);
		free(b->new_ids[k]);
		b->new_ids[k] = NULL;
		b->nnew_ids[k] = 0;
	}
}

Batch *
agg_take(uint64_t batch_id, uint64_t time_ns, uint64_t duration_ns)
{
	Batch	   *b;
	size_t		pos = 0;
	void	   *v;
	int			nframes = 0;
	int			i = 0;

	if (entries.count == 0)
		return NULL;
	b = xcalloc(1, sizeof(Batch));
	b->batch_id = batch_id;
	b->time_ns = time_ns;
	b->duration_ns = duration_ns;

	{
		Buf			lit = {0};

		buf_append(&lit, "{", 1);
		b->series_kind = xcalloc(series_map.count, sizeof(int));
		while (u64map_next(&series_map, &pos, NULL, &v))
		{
			Series	   *s = v;

			b->series_kind[b->nseries] = s->kind;
			s->index = b->nseries++;
			lit_str(&lit, s->labels);
		}
		buf_append(&lit, "}", 2);
		b->series = lit.data;
		b->bytes += lit.len;
	}

	pos = 0;
	while (u64map_next(&entries, &pos, NULL, &v))
		nframes += ((Entry *) v)->nframes;
	b->nsamples = (int) entries.count;
	b->sample_series = xcalloc(b->nsamples, sizeof(int));
	b->values = xcalloc(b->nsamples, sizeof(int64_t));
	b->stack_start = xcalloc(b->nsamples + 1, sizeof(int));
	b->frames = xcalloc(nframes, sizeof(uint64_t));
	b->bytes += b->nsamples * (2 * sizeof(int) + sizeof(int64_t)) +
		nframes * sizeof(uint64_t);

	nframes = 0;
	pos = 0;
	while (u64map_next(&entries, &pos, NULL, &v))
	{
		Entry	   *e = v;

		b->sample_series[i] = ((Series *) u64map_get(&series_map, e->series_key))->index;
		b->values[i] = e->count;
		b->stack_start[i] = nframes;
		memcpy(b->frames + nframes, e->frames, e->nframes * sizeof(uint64_t));
		nframes += e->nframes;
		i++;
	}
	b->stack_start[i] = nframes;
	agg_reset();
	batch_fill_rows(b);
	return b;
}

int64_t
batch_rebuild(Batch *b)
{
	int64_t		dropped = 0;
	int			kept = 0;
	int			nframes = 0;

	for (int i = 0; i < b->nsamples; i++)
	{
		int			start = b->stack_start[i];
		int			end = b->stack_start[i + 1];
		bool		known = true;

		for (int f = start; f < end && known; f++)
			known = ms_get_location(b->frames[f]) != NULL;
		if (!known)
		{
			dropped += b->values[i];
			continue;
		}
		/* kept samples move down over the dropped ones */
		b->sample_series[kept] = b->sample_series[i];
		b->values[kept] = b->values[i];
		memmove(b->frames + nframes, b->frames + start, (end - start) * sizeof(uint64_t));
		b->stack_start[kept] = nframes;
		nframes += end - start;
		kept++;
	}
	b->nsamples = kept;
	b->stack_start[kept] = nframes;
	batch_free_rows(b);
	batch_fill_rows(b);
	return dropped;
}

void
batch_free(Batch *b)
{
	free(b->series);
	free(b->series_kind);
	free(b->sample_series);
	free(b->values);
	free(b->stack_start);
	free(b->frames);
	batch_free_rows(b);
	free(b);
}

void
batch_note_generation(int64_t generation)
{
	if (generation > persisted_generation)
	{
		if (persisted_generation >= 0)
			ms_forget_persisted();
		persisted_generation = generation;
	}
}

void
batch_mark_persisted(const Batch *b)
{
	/*
	 * Written before a collection that a later batch saw: what it wrote
	 * may be collected already, so it marks nothing.
	 */
	if (b->committed_generation < persisted_generation)
		return;
	batch_note_generation(b->committed_generation);
	for (int i = 0; i < b->nnew_ids[0]; i++)
	{
		MsMapping  *m = ms_get_mapping(b->new_ids[0][i]);

		if (m)
			m->persisted = true;
	}
	for (int i = 0; i < b->nnew_ids[1]; i++)
	{
		MsFunction *f = ms_get_function(b->new_ids[1][i]);

		if (f)
			f->persisted = true;
	}
	for (int i = 0; i < b->nnew_ids[2]; i++)
	{
		MsLocation *l = ms_get_location(b->new_ids[2][i]);

		if (l)
			l->persisted = true;
	}
}
