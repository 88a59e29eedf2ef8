/*
 * columnar_write.c
 *		Write buffers and the stripe writer.
 *
 * A write buffer holds rows of one table column by column; values of
 * pass-by-reference columns go through a per-stripe dictionary as they
 * arrive, so repeated stacks and label sets take memory once.  The
 * transaction's buffers (columnar_write_state.c) and compaction
 * (columnar_compaction.c) fill buffers and write them out as stripes:
 * encoded chunk by chunk (columnar_chunk.c), kept inline in their
 * parca.columnar_stripes row when small, else on data pages
 * (columnar_storage.c), and recorded in the stripe catalog
 * (columnar_catalog.c).
 */
#include "postgres.h"

#include "access/detoast.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "columnar/columnar_internal.h"
#include "keyed_hash/keyed_hash.h"

typedef struct DictKey
{
	const char *ptr;
	uint32		len;
} DictKey;

typedef struct DictEntry
{
	DictKey		key;
	uint32		hash;
	uint32		index;
	char		status;
} DictEntry;

/* keyed: values are what ingesting roles send (keyed_hash.h) */
#define SH_PREFIX dict
#define SH_ELEMENT_TYPE DictEntry
#define SH_KEY_TYPE DictKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) keyed_hash_bytes((k).ptr, (k).len)
#define SH_EQUAL(tb, a, b) ((a).len == (b).len && memcmp((a).ptr, (b).ptr, (a).len) == 0)
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct ColumnBuffer
{
	int16		typlen;
	bool		byval;
	bool		dropped;
	uint8		kind;
	bool		has_order;		/* min/max are kept */
	ColumnarValueOrder order;
	int64	   *ints;			/* KIND_INT: the values */
	uint32	   *idx;			/* KIND_BYTES: dictionary indexes */
	bool	   *nulls;
	/* KIND_BYTES dictionary */
	dict_hash  *dict;
	char	  **dict_ptr;
	uint32	   *dict_len;
	int			ndict;
	int			dict_cap;
	int			last_idx;		/* the previous row's index, or -1 */
	bool		stacks;			/* of stacks: in the table's stack dictionary */
	int64	   *entries;		/* while flushed: the dictionary's entry
								 * numbers in the table's stack dictionary,
								 * or NULL */
} ColumnBuffer;

struct ColumnarWriteBuffer
{
	int64		storage_id;		/* of the table's storage when created */
	MemoryContext cxt;			/* the buffer */
	MemoryContext stripe_cxt;	/* the buffered rows */
	ColumnarOptions opts;
	int			natts;
	ColumnBuffer *cols;
	int			nrows;
	int			cap;
	/* row numbers of the buffered rows, in order */
	ColumnarRowRange *ranges;
	int			nranges;
	int			ranges_cap;
	/* command ids: rows [cid_rows[i], ...) were written by cids[i] */
	CommandId  *cids;
	int		   *cid_rows;
	int			ncids;
	bool		order_rows;		/* by opts.sort_by when flushed */
	/* the format version that the stripe last encoded needs */
	uint32		stripe_version;
};

/* ---- buffers ---- */

static void
reset_buffers(ColumnarWriteBuffer *buf)
{
	MemoryContext old;

	MemoryContextReset(buf->stripe_cxt);
	old = MemoryContextSwitchTo(buf->stripe_cxt);
	buf->cap = 1024;
	buf->nrows = 0;
	for (int i = 0; i < buf->natts; i++)
	{
		ColumnBuffer *c = &buf->cols[i];

		c->nulls = palloc(sizeof(bool) * buf->cap);
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints = palloc(sizeof(int64) * buf->cap);
		else
		{
			c->idx = palloc(sizeof(uint32) * buf->cap);
			c->dict = dict_create(buf->stripe_cxt, 256, NULL);
			c->dict_cap = 256;
			c->ndict = 0;
			c->last_idx = -1;
			c->entries = NULL;
			c->dict_ptr = palloc(sizeof(char *) * c->dict_cap);
			c->dict_len = palloc(sizeof(uint32) * c->dict_cap);
		}
	}
	buf->ranges_cap = 16;
	buf->nranges = 0;
	buf->ranges = palloc(sizeof(ColumnarRowRange) * buf->ranges_cap);
	buf->ncids = 0;
	buf->cids = palloc(sizeof(CommandId) * 16);
	buf->cid_rows = palloc(sizeof(int) * 16);
	MemoryContextSwitchTo(old);
}

/* min/max of pass-by-value columns whose type has a btree order */
static void
init_order(ColumnBuffer *c, Form_pg_attribute att, MemoryContext cxt)
{
	TypeCacheEntry *tce = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC_FINFO);

	if (!OidIsValid(tce->cmp_proc))
		return;
	c->has_order = true;
	c->order.typlen = att->attlen;
	c->order.collation = att->attcollation;
	fmgr_info_cxt(tce->cmp_proc, &c->order.cmp, cxt);
	c->order.signed_order = columnar_order_is_signed(tce->cmp_proc);
}

/* An empty buffer for rows of rel, in a memory context under parent. */
ColumnarWriteBuffer *
columnar_buffer_create(Relation rel, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "parca_columnar write",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColumnarWriteBuffer *buf = palloc0(sizeof(ColumnarWriteBuffer));
	TupleDesc	desc = RelationGetDescr(rel);

	buf->storage_id = columnar_read_metapage(rel).storage_id;
	buf->cxt = cxt;
	buf->stripe_cxt = AllocSetContextCreate(cxt, "parca_columnar stripe",
											ALLOCSET_DEFAULT_SIZES);
	buf->opts = columnar_get_options(RelationGetRelid(rel));
	buf->natts = desc->natts;
	buf->cols = palloc0(sizeof(ColumnBuffer) * buf->natts);
	for (int i = 0; i < buf->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColumnBuffer *c = &buf->cols[i];

		c->typlen = att->attlen;
		c->byval = att->attbyval;
		c->dropped = att->attisdropped;
		c->kind = att->attbyval ? COLUMNAR_KIND_INT : COLUMNAR_KIND_BYTES;
		c->stacks = !att->attisdropped && columnar_dictionary_type(att->atttypid);
		if (att->attbyval && !att->attisdropped)
			init_order(c, att, cxt);
	}
	reset_buffers(buf);
	MemoryContextSwitchTo(old);
	return buf;
}

void
columnar_buffer_free(ColumnarWriteBuffer *buf)
{
	MemoryContextDelete(buf->cxt);
}

int
columnar_buffer_rows(const ColumnarWriteBuffer *buf)
{
	return buf->nrows;
}

/* How many of the buffered rows commands before cid wrote. */
int
columnar_buffer_rows_before(const ColumnarWriteBuffer *buf, CommandId cid)
{
	int			nrows = 0;

	for (int i = 0; i < buf->ncids; i++)
	{
		if (buf->cids[i] >= cid)
			break;
		nrows = (i + 1 < buf->ncids) ? buf->cid_rows[i + 1] : buf->nrows;
	}
	return nrows;
}

ColumnarOptions
columnar_buffer_options(const ColumnarWriteBuffer *buf)
{
	return buf->opts;
}

/* Make room for rows rows at once (when their number is known). */
void
columnar_buffer_reserve(ColumnarWriteBuffer *buf, int rows)
{
	if (rows <= buf->cap)
		return;
	for (int i = 0; i < buf->natts; i++)
	{
		ColumnBuffer *c = &buf->cols[i];

		c->nulls = repalloc_huge(c->nulls, sizeof(bool) * rows);
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints = repalloc_huge(c->ints, sizeof(int64) * rows);
		else
			c->idx = repalloc_huge(c->idx, sizeof(uint32) * rows);
	}
	buf->cap = rows;
}

/* Buffer bytes per row of a table of desc, dictionary entries aside. */
Size
columnar_buffer_row_bytes(TupleDesc desc)
{
	Size		n = 0;

	for (int i = 0; i < desc->natts; i++)
		n += sizeof(bool) + (TupleDescAttr(desc, i)->attbyval ? sizeof(int64) : sizeof(uint32));
	return Max(n, 1);
}

/* The bytes that stand for a pass-by-reference value. */
static inline DictKey
value_bytes(ColumnBuffer *c, Datum d)
{
	DictKey		k;

	if (c->typlen == -1)
	{
		struct varlena *v = (struct varlena *) DatumGetPointer(d);

		if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
			v = detoast_attr(v);
		k.ptr = VARDATA_ANY(v);
		k.len = VARSIZE_ANY_EXHDR(v);
	}
	else if (c->typlen == -2)
	{
		k.ptr = DatumGetCString(d);
		k.len = strlen(k.ptr) + 1;
	}
	else
	{
		k.ptr = DatumGetPointer(d);
		k.len = c->typlen;
	}
	return k;
}

static uint32
dict_add(ColumnarWriteBuffer *buf, ColumnBuffer *c, DictKey k)
{
	bool		found;
	DictEntry  *e;

	/*
	 * Rows often repeat the previous row's value (the rows of one pprof
	 * sample share its stack and labels): comparing costs less than hashing.
	 */
	if (c->last_idx >= 0 && c->dict_len[c->last_idx] == k.len &&
		memcmp(c->dict_ptr[c->last_idx], k.ptr, k.len) == 0)
		return c->last_idx;
	e = dict_insert(c->dict, k, &found);
	if (!found)
	{
		char	   *copy = MemoryContextAlloc(buf->stripe_cxt, k.len + 1);

		memcpy(copy, k.ptr, k.len);
		e->key.ptr = copy;
		if (c->ndict == c->dict_cap)
		{
			c->dict_cap *= 2;
			c->dict_ptr = repalloc_huge(c->dict_ptr, sizeof(char *) * c->dict_cap);
			c->dict_len = repalloc_huge(c->dict_len, sizeof(uint32) * c->dict_cap);
		}
		e->index = c->ndict;
		c->dict_ptr[c->ndict] = copy;
		c->dict_len[c->ndict] = k.len;
		c->ndict++;
	}
	c->last_idx = e->index;
	return e->index;
}

/*
 * Buffer one row, with row number row, written by command cid.  Returns
 * true when the buffer is full: it has a stripe's rows, or its memory has
 * passed parca.columnar_write_memory; it is then to be flushed.
 */
bool
columnar_buffer_append(ColumnarWriteBuffer *buf, Datum *values, bool *isnull, int64 row,
					   CommandId cid)
{
	int			r = buf->nrows;
	int			natts = buf->natts;

	if (r == buf->cap)
		columnar_buffer_reserve(buf, buf->cap * 2);
	for (int i = 0; i < natts; i++)
	{
		ColumnBuffer *c = &buf->cols[i];
		bool		null = isnull[i] || c->dropped;

		c->nulls[r] = null;
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints[r] = null ? 0 : columnar_datum_to_int(values[i], c->typlen);
		else
			c->idx[r] = null ? 0 : dict_add(buf, c, value_bytes(c, values[i]));
	}
	if (buf->nranges > 0 &&
		buf->ranges[buf->nranges - 1].first + buf->ranges[buf->nranges - 1].count == row)
		buf->ranges[buf->nranges - 1].count++;
	else
	{
		if (buf->nranges == buf->ranges_cap)
		{
			buf->ranges_cap *= 2;
			buf->ranges = repalloc(buf->ranges, sizeof(ColumnarRowRange) * buf->ranges_cap);
		}
		buf->ranges[buf->nranges].first = row;
		buf->ranges[buf->nranges].count = 1;
		buf->nranges++;
	}
	if (buf->ncids == 0 || buf->cids[buf->ncids - 1] != cid)
	{
		if (buf->ncids > 0 && (buf->ncids & (buf->ncids - 1)) == 0 && buf->ncids >= 16)
		{
			buf->cids = repalloc(buf->cids, sizeof(CommandId) * buf->ncids * 2);
			buf->cid_rows = repalloc(buf->cid_rows, sizeof(int) * buf->ncids * 2);
		}
		buf->cids[buf->ncids] = cid;
		buf->cid_rows[buf->ncids] = r;
		buf->ncids++;
	}
	buf->nrows = ++r;
	if (r >= buf->opts.stripe_rows)
		return true;
	return (r & 1023) == 0 &&
		MemoryContextMemAllocated(buf->stripe_cxt, true) >= (Size) columnar_write_memory_kb * 1024;
}

/*
 * Have flushes write the rows in the order of the table's sort columns
 * (opts.sort_by) rather than as they were appended.  The rows' numbers are
 * then not the ones they were appended with: only for a buffer whose rows
 * nothing refers to by number (compaction of a table without indexes).
 */
void
columnar_buffer_order_rows(ColumnarWriteBuffer *buf)
{
	buf->order_rows = buf->opts.nsort > 0;
}

/* ---- row order ---- */

typedef struct RowOrder
{
	const ColumnBuffer *keys[COLUMNAR_MAX_SORT_COLUMNS];
	int			nkeys;
} RowOrder;

/* Rows by the values of their keys first to end - 1 (signed), NULLs last. */
static inline int
compare_keys(int32 a, int32 b, const RowOrder *order, int first, int end)
{
	for (int k = first; k < end; k++)
	{
		const ColumnBuffer *c = order->keys[k];

		if (c->nulls[a] != c->nulls[b])
			return c->nulls[a] ? 1 : -1;
		if (!c->nulls[a] && c->ints[a] != c->ints[b])
			return c->ints[a] < c->ints[b] ? -1 : 1;
	}
	return 0;
}

/* Rows by their keys, then as appended. */
static inline int
compare_rows(int32 a, int32 b, const RowOrder *order)
{
	int			c = compare_keys(a, b, order, 0, order->nkeys);

	return c != 0 ? c : (a > b) - (a < b);
}

#define ST_SORT sort_row_positions
#define ST_ELEMENT_TYPE int32
#define ST_COMPARE(a, b, arg) compare_rows(*(a), *(b), arg)
#define ST_COMPARE_ARG_TYPE const RowOrder
#define ST_SCOPE static
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"

/* Reverses pos[first] to pos[last - 1]. */
static void
reverse_positions(int32 *pos, int first, int last)
{
	for (int i = first, j = last - 1; i < j; i++, j--)
	{
		int32		t = pos[i];

		pos[i] = pos[j];
		pos[j] = t;
	}
}

/*
 * Rows sorted by several keys: every other run of equal leading keys (the
 * second, fourth, ... series) gets its last key (time) in descending
 * order, rows of equal keys still as appended.  A chunk group where two
 * runs meet then holds the end of one run and the start of the next at
 * the same end of the time range, so its min/max of the last key stays as
 * narrow as the groups within a run, where an ascending run next to an
 * ascending one makes it span the stripe's whole range: read by every
 * time range query.
 */
static void
reverse_every_other_run(int32 *pos, int n, const RowOrder *order)
{
	int			lead = order->nkeys - 1;
	int			run = 0;

	if (lead == 0)
		return;
	for (int first = 0; first < n;)
	{
		int			last = first + 1;

		while (last < n && compare_keys(pos[first], pos[last], order, 0, lead) == 0)
			last++;
		if (run++ % 2 == 1)
		{
			reverse_positions(pos, first, last);
			/* ties back in the order they were appended */
			for (int tie = first; tie < last;)
			{
				int			end = tie + 1;

				while (end < last &&
					   compare_keys(pos[tie], pos[end], order, lead, order->nkeys) == 0)
					end++;
				reverse_positions(pos, tie, end);
				tie = end;
			}
		}
		first = last;
	}
}

/* Whether rows 0 to n - 1 are in the order reverse_every_other_run leaves. */
static bool
in_serpentine_order(int n, const RowOrder *order)
{
	int			lead = order->nkeys - 1;
	bool		descending = false;

	for (int r = 1; r < n; r++)
	{
		int			c = compare_keys(r - 1, r, order, 0, lead);

		if (c > 0)
			return false;
		if (c < 0)
			descending = !descending;
		else
		{
			/* the leading keys are equal: the last one decides */
			int			last = compare_keys(r - 1, r, order, lead, order->nkeys);

			if (descending ? last < 0 : last > 0)
				return false;
		}
	}
	return true;
}

/*
 * Put the buffered rows in the order of the sort columns (serpentine, as
 * reverse_every_other_run says), and number each dictionary's entries in
 * the order the reordered rows first use them, as if the rows had arrived
 * so (runs of consecutive indexes encode small).  The row number ranges
 * stay: the stripe holds the same numbers.
 */
static void
order_buffered_rows(ColumnarWriteBuffer *buf)
{
	RowOrder	order;
	int			n = buf->nrows;
	int32	   *pos;

	order.nkeys = 0;
	for (int k = 0; k < buf->opts.nsort; k++)
	{
		const ColumnBuffer *c = &buf->cols[buf->opts.sort_by[k] - 1];

		if (c->kind == COLUMNAR_KIND_INT && !c->dropped)
			order.keys[order.nkeys++] = c;
	}
	if (order.nkeys == 0 || n < 2)
		return;
	if (in_serpentine_order(n, &order))
		return;
	pos = palloc(sizeof(int32) * n);
	for (int r = 0; r < n; r++)
		pos[r] = r;
	sort_row_positions(pos, n, &order);
	reverse_every_other_run(pos, n, &order);

	for (int a = 0; a < buf->natts; a++)
	{
		ColumnBuffer *c = &buf->cols[a];
		bool	   *nulls = MemoryContextAllocHuge(buf->stripe_cxt, sizeof(bool) * buf->cap);

		for (int r = 0; r < n; r++)
			nulls[r] = c->nulls[pos[r]];
		if (c->kind == COLUMNAR_KIND_INT)
		{
			int64	   *ints = MemoryContextAllocHuge(buf->stripe_cxt, sizeof(int64) * buf->cap);

			for (int r = 0; r < n; r++)
				ints[r] = c->ints[pos[r]];
			pfree(c->ints);
			c->ints = ints;
		}
		else
		{
			uint32	   *idx = MemoryContextAllocHuge(buf->stripe_cxt, sizeof(uint32) * buf->cap);
			uint32	   *renumber = palloc(sizeof(uint32) * Max(c->ndict, 1));
			char	  **dict_ptr = MemoryContextAllocHuge(buf->stripe_cxt,
														  sizeof(char *) * c->dict_cap);
			uint32	   *dict_len = MemoryContextAllocHuge(buf->stripe_cxt,
														  sizeof(uint32) * c->dict_cap);
			uint32		next = 0;

			memset(renumber, 0xff, sizeof(uint32) * Max(c->ndict, 1));
			for (int r = 0; r < n; r++)
			{
				uint32		old;

				if (nulls[r])
				{
					idx[r] = 0;
					continue;
				}
				old = c->idx[pos[r]];
				if (renumber[old] == PG_UINT32_MAX)
					renumber[old] = next++;
				idx[r] = renumber[old];
			}
			/* entries no row uses (none, as buffers are flushed whole) last */
			for (int i = 0; i < c->ndict; i++)
				if (renumber[i] == PG_UINT32_MAX)
					renumber[i] = next++;
			for (int i = 0; i < c->ndict; i++)
			{
				dict_ptr[renumber[i]] = c->dict_ptr[i];
				dict_len[renumber[i]] = c->dict_len[i];
			}
			/* the hash table's indexes are stale: no row is added after this */
			c->last_idx = -1;
			pfree(renumber);
			pfree(c->idx);
			pfree(c->dict_ptr);
			pfree(c->dict_len);
			c->idx = idx;
			c->dict_ptr = dict_ptr;
			c->dict_len = dict_len;
		}
		pfree(c->nulls);
		c->nulls = nulls;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(pos);
}

/* ---- stripes ---- */

/*
 * The chunks of column a of the first nrows buffered rows: its dictionary
 * (when values repeat), then one chunk per chunk group.
 */
static void
encode_column(ColumnarWriteBuffer *buf, int a, int nrows, ColumnarChunkWriter *w,
			  ColumnarStripe *s)
{
	ColumnBuffer *c = &buf->cols[a];
	ColumnarColumn *col = &s->columns[a];
	bool		use_dict = false;

	col->kind = c->kind;
	if (c->kind == COLUMNAR_KIND_BYTES && c->entries)
	{
		use_dict = true;
		col->has_dict = true;
		col->ndict = c->ndict;
		columnar_chunk_encode_entries(w, c->entries, c->ndict, &col->dict);
		buf->stripe_version = Max(buf->stripe_version, COLUMNAR_VERSION_TABLE_DICTIONARY);
	}
	else if (c->kind == COLUMNAR_KIND_BYTES && c->ndict > 0)
	{
		int			nonnull = 0;

		for (int r = 0; r < nrows; r++)
			nonnull += !c->nulls[r];
		/* a dictionary pays when values repeat */
		use_dict = (int64) c->ndict * 2 <= nonnull;
		if (use_dict)
		{
			col->has_dict = true;
			col->ndict = c->ndict;
			columnar_chunk_encode_dictionary(w, c->dict_ptr, c->dict_len, c->ndict, c->typlen,
											 &col->dict);
			/*
			 * Values of 64-bit words (stacks of location ids) get their ids
			 * beside: a reader that knows a stack by its id (parca_query
			 * across stripes and partitions) then skips the dictionary.
			 */
			if (col->dict.encoding == ENC_WORDS)
			{
				columnar_chunk_encode_ids(w, c->dict_ptr, c->dict_len, c->ndict,
										  &s->dict_ids[a]);
				buf->stripe_version = Max(buf->stripe_version, COLUMNAR_VERSION_DICT_IDS);
			}
		}
	}
	for (int g = 0; g < s->ngroups; g++)
	{
		ColumnarChunk *ch = COLUMNAR_CHUNK(s, a, g);
		int			first = g * s->group_rows;
		int			n = Min(s->group_rows, nrows - first);

		if (c->kind == COLUMNAR_KIND_INT)
			columnar_chunk_encode_ints(w, c->ints + first, c->nulls + first, n,
									   c->has_order ? &c->order : NULL, ch);
		else if (use_dict)
			columnar_chunk_encode_indexes(w, c->idx + first, c->nulls + first, n, ch);
		else
			columnar_chunk_encode_plain(w, c->idx + first, c->nulls + first, n,
										c->dict_ptr, c->dict_len, ch);
	}
}

/* The row number ranges of the first nrows buffered rows, into s. */
static void
stripe_row_ranges(ColumnarWriteBuffer *buf, int nrows, ColumnarStripe *s)
{
	int64		left = nrows;

	s->nranges = 0;
	while (s->nranges < buf->nranges && left > 0)
	{
		left -= buf->ranges[s->nranges].count;
		s->nranges++;
	}
	s->ranges = palloc(sizeof(ColumnarRowRange) * s->nranges);
	memcpy(s->ranges, buf->ranges, sizeof(ColumnarRowRange) * s->nranges);
	/* the last range is cut where the prefix ends (left <= 0 rows past it) */
	s->ranges[s->nranges - 1].count += left;
	s->first_row = s->ranges[0].first;
	for (int i = 1; i < s->nranges; i++)
		s->first_row = Min(s->first_row, s->ranges[i].first);
}

/*
 * The entry numbers of the stacks of the buffered rows in rel's stack
 * dictionary (columnar_dictionary.c), which gets those it lacks: once per
 * stripe written, before it is encoded.
 */
static void
find_table_entries(Relation rel, ColumnarWriteBuffer *buf)
{
	for (int a = 0; a < buf->natts; a++)
	{
		ColumnBuffer *c = &buf->cols[a];

		if (!c->stacks || !columnar_dictionary_fits(c->dict_len, c->ndict))
			continue;
		c->entries = MemoryContextAllocHuge(buf->stripe_cxt, sizeof(int64) * c->ndict);
		if (!columnar_dictionary_entries(rel, buf->storage_id, c->dict_ptr, c->dict_len,
										 c->ndict, buf->opts.compression_level, c->entries))
		{
			pfree(c->entries);
			c->entries = NULL;
		}
	}
}

/*
 * Encode the first nrows buffered rows as a stripe at zstd level: its data
 * into data, its directory into *directory; fills s (without inline data).
 */
static void
encode_stripe(ColumnarWriteBuffer *buf, int nrows, int level, int flags,
			  ColumnarStripe *s, bytea **directory, StringInfo data)
{
	ColumnarChunkWriter w;

	memset(s, 0, sizeof(ColumnarStripe));
	s->row_count = nrows;
	s->flags = flags;
	s->natts = buf->natts;
	s->group_rows = buf->opts.chunk_group_rows;
	s->ngroups = (nrows + s->group_rows - 1) / s->group_rows;
	s->columns = palloc0(sizeof(ColumnarColumn) * s->natts);
	s->chunks = palloc0(sizeof(ColumnarChunk) * s->natts * Max(s->ngroups, 1));
	s->dict_ids = palloc0(sizeof(ColumnarChunk) * s->natts);
	buf->stripe_version = 1;
	columnar_chunk_writer_begin(&w, data, level, Min(s->group_rows, nrows));
	for (int a = 0; a < buf->natts; a++)
		encode_column(buf, a, nrows, &w, s);
	columnar_chunk_writer_end(&w);
	stripe_row_ranges(buf, nrows, s);
	/* a stripe without ids is of an older version, as older builds wrote it */
	if (buf->stripe_version < COLUMNAR_VERSION_DICT_IDS)
	{
		pfree(s->dict_ids);
		s->dict_ids = NULL;
	}
	*directory = columnar_directory_build(s);
	s->data_size = data->len;
	s->first_block = -1;
	/* the directory has them */
	pfree(s->ranges);
	pfree(s->columns);
	pfree(s->chunks);
	if (s->dict_ids)
		pfree(s->dict_ids);
	s->ranges = NULL;
	s->columns = NULL;
	s->chunks = NULL;
	s->dict_ids = NULL;
}

/*
 * Write the buffered rows as a stripe, and empty the buffer.  for_good:
 * stored on pages at the table's level even if small (a merged stripe that
 * is not to be merged again soon); flags: COLUMNAR_STRIPE_* of the stripe.
 */
void
columnar_buffer_flush(Relation rel, ColumnarWriteBuffer *buf, bool for_good, int flags)
{
	ColumnarStripe s;
	bytea	   *directory;
	bytea	   *inline_data = NULL;
	StringInfoData data;
	MemoryContext old;
	CommandId	cid;

	if (buf->nrows == 0)
		return;
	cid = buf->cids[0];
	/* rows of one command only: rows_before finds a command's rows by position */
	if (buf->order_rows && buf->ncids == 1)
		order_buffered_rows(buf);
	find_table_entries(rel, buf);
	old = MemoryContextSwitchTo(buf->cxt);
	initStringInfo(&data);

	/*
	 * A partial stripe is usually small enough to stay inline, and an
	 * inline stripe is compressed again when compaction merges it: zstd's
	 * fastest level does for it.  Should it turn out too big for inline,
	 * it is stored for good, so it is encoded again at the table's level.
	 */
	if (buf->nrows < buf->opts.stripe_rows && buf->opts.compression_level > 1 && !for_good)
	{
		encode_stripe(buf, buf->nrows, 1, flags, &s, &directory, &data);
		if (data.len > columnar_inline_stripe_bytes)
		{
			pfree(directory);
			resetStringInfo(&data);
			encode_stripe(buf, buf->nrows, buf->opts.compression_level, flags, &s, &directory,
					  &data);
		}
	}
	else
		encode_stripe(buf, buf->nrows, buf->opts.compression_level, flags, &s, &directory,
					  &data);
	/* older builds are to refuse the table before they could misread it */
	columnar_require_version(rel, buf->stripe_version);
	if (data.len <= columnar_inline_stripe_bytes && !for_good)
	{
		inline_data = palloc(VARHDRSZ + data.len);
		SET_VARSIZE(inline_data, VARHDRSZ + data.len);
		memcpy(VARDATA(inline_data), data.data, data.len);
	}
	if (inline_data)
		columnar_insert_stripe(buf->storage_id, &s, directory, inline_data, cid);
	else
	{
		/* VACUUM must not take these pages for free until the row is there */
		columnar_lock_page_writes(RelationGetRelid(rel), RowExclusiveLock);
		s.first_block = columnar_write_pages(rel, data.data, data.len);
		columnar_insert_stripe(buf->storage_id, &s, directory, NULL, cid);
		columnar_unlock_page_writes(RelationGetRelid(rel), RowExclusiveLock);
	}
	pfree(data.data);
	pfree(directory);
	if (inline_data)
		pfree(inline_data);
	MemoryContextSwitchTo(old);
	reset_buffers(buf);
}

/*
 * The first nrows buffered rows as an in-memory stripe (inline, not
 * compressed), for the writing backend's own reads.
 */
ColumnarStripe *
columnar_buffer_stripe(ColumnarWriteBuffer *buf, int nrows)
{
	ColumnarStripe tmp;
	bytea	   *directory;
	StringInfoData data;
	ColumnarStripe *s;

	initStringInfo(&data);
	encode_stripe(buf, nrows, 0, 0, &tmp, &directory, &data);
	s = columnar_directory_parse(tmp.first_row, tmp.row_count, -1, data.len, directory, NULL);
	s->inline_data = data.data;
	pfree(directory);
	return s;
}
