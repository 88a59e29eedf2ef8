/*
 * columnar_write.c
 *		Write buffers, the stripe writer, transaction callbacks and
 *		compaction of small stripes.
 *
 * Each backend buffers the rows it writes, per relation and per
 * subtransaction, column by column; values of pass-by-reference columns
 * go through a per-stripe dictionary as they arrive, so repeated stacks
 * and label sets take memory once.  A buffer becomes a stripe when it
 * reaches the table's stripe_rows, when its memory passes
 * parca.columnar_write_memory, at (sub)transaction commit, or when a bulk
 * load into a table created in this transaction ends.  Rows still
 * buffered are visible to the writing transaction's own scans as
 * in-memory stripes (columnar_pending_stripes).
 *
 * A stripe smaller than parca.columnar_inline_stripe_bytes is kept inline
 * in its parca.columnar_stripes row; many of those (small transactions)
 * are merged into one stripe by compaction, at commit once enough have
 * gathered, and by VACUUM.  Compaction keeps the row numbers, so indexes
 * stay valid.  Its concurrency rules are at "compaction" below and in
 * docs/columnar.md.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "columnar/columnar.h"

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

/*
 * Hash of a value's bytes, eight at a time (stacks are long: the generic
 * hash_bytes() was a tenth of a COPY).
 */
static inline uint32
value_hash(const char *p, uint32 len)
{
	uint64		h = 0x9e3779b97f4a7c15ULL ^ len;
	uint32		i = 0;

	for (; i + 8 <= len; i += 8)
	{
		uint64		w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	for (; i < len; i++)
		h = (h ^ (uint8) p[i]) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (uint32) h;
}

#define SH_PREFIX dict
#define SH_ELEMENT_TYPE DictEntry
#define SH_KEY_TYPE DictKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) value_hash((k).ptr, (k).len)
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
	bool		has_cmp;		/* min/max are kept */
	bool		signed_order;	/* min/max by int64 comparison */
	FmgrInfo	cmp;
	Oid			collation;
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
} ColumnBuffer;

typedef struct ColumnarWriteState
{
	Oid			relid;
	Oid			relfilenode;	/* storage the rows belong to */
	int64		storage_id;
	SubTransactionId subxid;
	MemoryContext cxt;			/* the state */
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
	int64		next_row;		/* next reserved row number */
	int64		reserved_end;
	int64		reserve_size;
	/* command ids: rows [cid_rows[i], ...) were written by cids[i] */
	CommandId  *cids;
	int		   *cid_rows;
	int			ncids;
	struct ColumnarWriteState *next;
} ColumnarWriteState;

static ColumnarWriteState *write_states;

/* A table this transaction wrote stripes to: its commit may compact it. */
typedef struct WrittenTable
{
	Oid			relid;
	ColumnarOptions opts;
} WrittenTable;

static List *written_tables;	/* in TopTransactionContext */

/* Bumped whenever buffered rows change, so readers know to look again. */
uint64		columnar_pending_generation;

static void flush_state(Relation rel, ColumnarWriteState *st, bool for_good);
static void maybe_compact(Oid relid, ColumnarOptions opts);

/* ---- buffers ---- */

static void
reset_buffers(ColumnarWriteState *st)
{
	MemoryContext old;

	MemoryContextReset(st->stripe_cxt);
	old = MemoryContextSwitchTo(st->stripe_cxt);
	st->cap = 1024;
	st->nrows = 0;
	for (int i = 0; i < st->natts; i++)
	{
		ColumnBuffer *c = &st->cols[i];

		c->nulls = palloc(sizeof(bool) * st->cap);
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints = palloc(sizeof(int64) * st->cap);
		else
		{
			c->idx = palloc(sizeof(uint32) * st->cap);
			c->dict = dict_create(st->stripe_cxt, 256, NULL);
			c->dict_cap = 256;
			c->ndict = 0;
			c->last_idx = -1;
			c->dict_ptr = palloc(sizeof(char *) * c->dict_cap);
			c->dict_len = palloc(sizeof(uint32) * c->dict_cap);
		}
	}
	st->ranges_cap = 16;
	st->nranges = 0;
	st->ranges = palloc(sizeof(ColumnarRowRange) * st->ranges_cap);
	st->ncids = 0;
	st->cids = palloc(sizeof(CommandId) * 16);
	st->cid_rows = palloc(sizeof(int) * 16);
	MemoryContextSwitchTo(old);
	columnar_pending_generation++;
}

static ColumnarWriteState *
create_state(Relation rel)
{
	MemoryContext cxt = AllocSetContextCreate(TopTransactionContext,
											  "parca_columnar write",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColumnarWriteState *st = palloc0(sizeof(ColumnarWriteState));
	TupleDesc	desc = RelationGetDescr(rel);

	st->relid = RelationGetRelid(rel);
	st->relfilenode = rel->rd_node.relNode;
	st->storage_id = columnar_read_metapage(rel).storage_id;
	st->subxid = GetCurrentSubTransactionId();
	st->cxt = cxt;
	st->stripe_cxt = AllocSetContextCreate(cxt, "parca_columnar stripe",
										   ALLOCSET_DEFAULT_SIZES);
	st->opts = columnar_get_options(st->relid);
	st->natts = desc->natts;
	st->cols = palloc0(sizeof(ColumnBuffer) * st->natts);
	st->reserve_size = 128;
	for (int i = 0; i < st->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		ColumnBuffer *c = &st->cols[i];

		c->typlen = att->attlen;
		c->byval = att->attbyval;
		c->dropped = att->attisdropped;
		c->kind = att->attbyval ? COLUMNAR_KIND_INT : COLUMNAR_KIND_BYTES;
		c->collation = att->attcollation;
		if (att->attbyval && !att->attisdropped)
		{
			TypeCacheEntry *tce = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC_FINFO);

			if (OidIsValid(tce->cmp_proc))
			{
				c->has_cmp = true;
				fmgr_info_cxt(tce->cmp_proc, &c->cmp, cxt);
				c->signed_order = (tce->cmp_proc == F_BTINT2CMP ||
								   tce->cmp_proc == F_BTINT4CMP ||
								   tce->cmp_proc == F_BTINT8CMP ||
								   tce->cmp_proc == F_TIMESTAMP_CMP ||
								   tce->cmp_proc == F_DATE_CMP ||
								   tce->cmp_proc == F_TIME_CMP ||
								   tce->cmp_proc == F_CASH_CMP ||
								   tce->cmp_proc == F_BTBOOLCMP);
			}
		}
	}
	reset_buffers(st);
	MemoryContextSwitchTo(old);
	return st;
}

static void
free_state(ColumnarWriteState *st)
{
	ColumnarWriteState **p;

	for (p = &write_states; *p; p = &(*p)->next)
		if (*p == st)
		{
			*p = st->next;
			break;
		}
	MemoryContextDelete(st->cxt);
	columnar_pending_generation++;
}

/* The state of relid for the current subtransaction, or NULL. */
static ColumnarWriteState *
current_state(Oid relid)
{
	SubTransactionId sub = GetCurrentSubTransactionId();

	for (ColumnarWriteState *st = write_states; st; st = st->next)
		if (st->relid == relid && st->subxid == sub)
			return st;
	return NULL;
}

/* Make room for cap rows. */
static void
grow(ColumnarWriteState *st, int cap)
{
	for (int i = 0; i < st->natts; i++)
	{
		ColumnBuffer *c = &st->cols[i];

		c->nulls = repalloc_huge(c->nulls, sizeof(bool) * cap);
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints = repalloc_huge(c->ints, sizeof(int64) * cap);
		else
			c->idx = repalloc_huge(c->idx, sizeof(uint32) * cap);
	}
	st->cap = cap;
}

/* Buffer bytes per row, dictionary entries aside. */
static Size
row_bytes(ColumnarWriteState *st)
{
	Size		n = 0;

	for (int i = 0; i < st->natts; i++)
		n += sizeof(bool) + (st->cols[i].kind == COLUMNAR_KIND_INT ? sizeof(int64) : sizeof(uint32));
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
dict_add(ColumnarWriteState *st, ColumnBuffer *c, DictKey k)
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
		char	   *copy = MemoryContextAlloc(st->stripe_cxt, k.len + 1);

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

static void
append_row(ColumnarWriteState *st, Datum *values, bool *isnull, int64 row, CommandId cid)
{
	int			r = st->nrows;

	if (r == st->cap)
		grow(st, st->cap * 2);
	for (int i = 0; i < st->natts; i++)
	{
		ColumnBuffer *c = &st->cols[i];
		bool		null = isnull[i] || c->dropped;

		c->nulls[r] = null;
		if (c->kind == COLUMNAR_KIND_INT)
			c->ints[r] = null ? 0 : columnar_datum_to_int(values[i], c->typlen);
		else
			c->idx[r] = null ? 0 : dict_add(st, c, value_bytes(c, values[i]));
	}
	if (st->nranges > 0 &&
		st->ranges[st->nranges - 1].first + st->ranges[st->nranges - 1].count == row)
		st->ranges[st->nranges - 1].count++;
	else
	{
		if (st->nranges == st->ranges_cap)
		{
			st->ranges_cap *= 2;
			st->ranges = repalloc(st->ranges, sizeof(ColumnarRowRange) * st->ranges_cap);
		}
		st->ranges[st->nranges].first = row;
		st->ranges[st->nranges].count = 1;
		st->nranges++;
	}
	if (st->ncids == 0 || st->cids[st->ncids - 1] != cid)
	{
		if (st->ncids > 0 && (st->ncids & (st->ncids - 1)) == 0 && st->ncids >= 16)
		{
			st->cids = repalloc(st->cids, sizeof(CommandId) * st->ncids * 2);
			st->cid_rows = repalloc(st->cid_rows, sizeof(int) * st->ncids * 2);
		}
		st->cids[st->ncids] = cid;
		st->cid_rows[st->ncids] = r;
		st->ncids++;
	}
	st->nrows++;
	columnar_pending_generation++;
}

static bool
state_full(ColumnarWriteState *st)
{
	if (st->nrows >= st->opts.stripe_rows)
		return true;
	if ((st->nrows & 1023) == 0 &&
		MemoryContextMemAllocated(st->stripe_cxt, true) >= (Size) columnar_write_memory_kb * 1024)
		return true;
	return false;
}

/*
 * Buffer one row of slot for rel, assigning its row number (slot->tts_tid).
 */
void
columnar_write_row(Relation rel, TupleTableSlot *slot, CommandId cid)
{
	ColumnarWriteState *st = current_state(RelationGetRelid(rel));
	int64		row;

	if (st && st->relfilenode != rel->rd_node.relNode)
	{
		/* the relation was rewritten: its rows went with the rewrite */
		free_state(st);
		st = NULL;
	}
	if (st == NULL)
	{
		st = create_state(rel);
		st->next = write_states;
		write_states = st;
	}
	if (st->next_row == st->reserved_end)
	{
		st->next_row = columnar_reserve_rows(rel, st->reserve_size);
		st->reserved_end = st->next_row + st->reserve_size;
		st->reserve_size = Min(st->reserve_size * 2, (int64) st->opts.stripe_rows);
	}
	row = st->next_row++;
	slot_getallattrs(slot);
	append_row(st, slot->tts_values, slot->tts_isnull, row, cid);
	columnar_row_to_tid(row, &slot->tts_tid);
	slot->tts_tableOid = RelationGetRelid(rel);
	if (state_full(st))
		flush_state(rel, st, false);
}

/* ---- stripes ---- */

static void
put_chunk(StringInfo data, const char *raw, int rawlen, int level, ColumnarChunk *chunk)
{
	pg_crc32c	crc;

	chunk->offset = data->len;
	columnar_compress(raw, rawlen, level, data, &chunk->rawsize);
	chunk->size = data->len - (int32) chunk->offset;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data->data + chunk->offset, chunk->size);
	FIN_CRC32C(crc);
	chunk->crc = crc;
}

static inline int
compare_values(ColumnBuffer *c, int64 a, int64 b)
{
	if (c->signed_order)
		return a < b ? -1 : (a > b ? 1 : 0);
	return DatumGetInt32(FunctionCall2Coll(&c->cmp, c->collation,
										   columnar_int_to_datum(a, c->typlen),
										   columnar_int_to_datum(b, c->typlen)));
}

static void
put_varint(StringInfo out, uint64 v)
{
	while (v >= 0x80)
	{
		appendStringInfoChar(out, (char) ((v & 0x7f) | 0x80));
		v >>= 7;
	}
	appendStringInfoChar(out, (char) v);
}

/*
 * Encode the first nrows buffered rows as a stripe: its directory and its
 * data.  Fills s (without inline data).
 */
static void
encode_stripe(ColumnarWriteState *st, int nrows, int level,
			  ColumnarStripe *s, bytea **directory, StringInfo data)
{
	int			group_rows = st->opts.chunk_group_rows;
	int			ngroups = (nrows + group_rows - 1) / group_rows;
	ColumnarColumn *columns = palloc0(sizeof(ColumnarColumn) * st->natts);
	ColumnarChunk *chunks = palloc0(sizeof(ColumnarChunk) * st->natts * Max(ngroups, 1));
	int64	   *vals = palloc(sizeof(int64) * Min(group_rows, nrows));
	StringInfoData raw;
	ColumnarDirectoryHeader hdr;
	int			nranges = 0;
	int64		left = nrows;
	StringInfoData dir;

	initStringInfo(&raw);
	for (int a = 0; a < st->natts; a++)
	{
		ColumnBuffer *c = &st->cols[a];
		ColumnarColumn *col = &columns[a];
		bool		use_dict = false;

		col->kind = c->kind;
		if (c->kind == COLUMNAR_KIND_BYTES && c->ndict > 0)
		{
			int			nonnull = 0;

			for (int r = 0; r < nrows; r++)
				nonnull += !c->nulls[r];
			/* a dictionary pays when values repeat */
			use_dict = (int64) c->ndict * 2 <= nonnull;
			if (use_dict)
			{
				resetStringInfo(&raw);
				for (int i = 0; i < c->ndict; i++)
				{
					put_varint(&raw, c->dict_len[i]);
					appendBinaryStringInfo(&raw, c->dict_ptr[i], c->dict_len[i]);
				}
				col->has_dict = true;
				col->ndict = c->ndict;
				col->dict.encoding = ENC_PLAIN;
				put_chunk(data, raw.data, raw.len, level, &col->dict);
			}
		}
		for (int g = 0; g < ngroups; g++)
		{
			ColumnarChunk *ch = &chunks[a * ngroups + g];
			int			first = g * group_rows;
			int			n = Min(group_rows, nrows - first);
			int			nv = 0;

			for (int r = first; r < first + n; r++)
				ch->nnulls += c->nulls[r];
			if (ch->nnulls == n)
			{
				ch->encoding = ENC_ALL_NULL;
				ch->offset = data->len;
				continue;
			}
			resetStringInfo(&raw);
			if (ch->nnulls > 0)
			{
				int			nbytes = (n + 7) / 8;

				enlargeStringInfo(&raw, nbytes);
				memset(raw.data, 0, nbytes);
				for (int r = 0; r < n; r++)
					if (c->nulls[first + r])
						raw.data[r / 8] |= (char) (1 << (r % 8));
				raw.len = nbytes;
			}
			if (c->kind == COLUMNAR_KIND_INT)
			{
				for (int r = first; r < first + n; r++)
					if (!c->nulls[r])
						vals[nv++] = c->ints[r];
				ch->encoding = columnar_encode_ints(vals, nv, &raw, true);
				if (c->has_cmp)
				{
					int64		min = vals[0],
								max = vals[0];

					for (int i = 1; i < nv; i++)
					{
						if (compare_values(c, vals[i], min) < 0)
							min = vals[i];
						if (compare_values(c, vals[i], max) > 0)
							max = vals[i];
					}
					ch->has_minmax = true;
					ch->min = min;
					ch->max = max;
				}
			}
			else if (use_dict)
			{
				for (int r = first; r < first + n; r++)
					if (!c->nulls[r])
						vals[nv++] = c->idx[r];
				ch->encoding = ENC_DICT;
				ch->index_encoding = columnar_encode_ints(vals, nv, &raw, false);
			}
			else
			{
				for (int r = first; r < first + n; r++)
					if (!c->nulls[r])
					{
						uint32		i = c->idx[r];

						put_varint(&raw, c->dict_len[i]);
						appendBinaryStringInfo(&raw, c->dict_ptr[i], c->dict_len[i]);
					}
				ch->encoding = ENC_PLAIN;
			}
			put_chunk(data, raw.data, raw.len, level, ch);
		}
	}

	/* the row numbers of the first nrows rows */
	while (nranges < st->nranges && left > 0)
	{
		left -= Min(left, st->ranges[nranges].count);
		nranges++;
	}

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = COLUMNAR_DIRECTORY_MAGIC;
	hdr.natts = st->natts;
	hdr.ngroups = ngroups;
	hdr.group_rows = group_rows;
	hdr.nranges = nranges;
	hdr.nrows = nrows;
	initStringInfo(&dir);
	appendStringInfoSpaces(&dir, VARHDRSZ);
	appendBinaryStringInfo(&dir, (char *) &hdr, sizeof(hdr));
	appendBinaryStringInfo(&dir, (char *) st->ranges, sizeof(ColumnarRowRange) * nranges);
	if (nranges > 0)
	{
		/* the last range may be cut by the prefix */
		ColumnarRowRange *last = (ColumnarRowRange *)
		(dir.data + dir.len - sizeof(ColumnarRowRange));

		last->count += left;
	}
	appendBinaryStringInfo(&dir, (char *) columns, sizeof(ColumnarColumn) * st->natts);
	appendBinaryStringInfo(&dir, (char *) chunks, sizeof(ColumnarChunk) * st->natts * ngroups);
	SET_VARSIZE(dir.data, dir.len);
	*directory = (bytea *) dir.data;

	s->first_row = st->ranges[0].first;
	for (int i = 1; i < nranges; i++)
		s->first_row = Min(s->first_row, st->ranges[i].first);
	s->row_count = nrows;
	s->data_size = data->len;
	s->first_block = -1;
	pfree(raw.data);
	pfree(vals);
	pfree(columns);
	pfree(chunks);
}

/* Append data to rel in new pages (generic WAL); returns the first block. */
static int64
write_pages(Relation rel, const char *data, int64 len)
{
	int64		npages = (len + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;
	BlockNumber first;
	int64		done = 0;

	LockRelationForExtension(rel, ExclusiveLock);
	first = RelationGetNumberOfBlocks(rel);
	while (done < npages)
	{
		GenericXLogState *state = GenericXLogStart(rel);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			n = (int) Min(npages - done, MAX_GENERIC_XLOG_PAGES);

		for (int i = 0; i < n; i++)
		{
			int64		off = (done + i) * COLUMNAR_PAGE_PAYLOAD;
			int			part = (int) Min(len - off, COLUMNAR_PAGE_PAYLOAD);
			Page		page;

			bufs[i] = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
			Assert(BufferGetBlockNumber(bufs[i]) == first + done + i);
			LockBuffer(bufs[i], BUFFER_LOCK_EXCLUSIVE);
			page = GenericXLogRegisterBuffer(state, bufs[i], GENERIC_XLOG_FULL_IMAGE);
			PageInit(page, BLCKSZ, 0);
			memcpy(page + SizeOfPageHeaderData, data + off, part);
			((PageHeader) page)->pd_lower = SizeOfPageHeaderData + part;
		}
		GenericXLogFinish(state);
		for (int i = 0; i < n; i++)
			UnlockReleaseBuffer(bufs[i]);
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	UnlockRelationForExtension(rel, ExclusiveLock);
	return first;
}

/*
 * Write the buffered rows as a stripe.  for_good: the stripe is final even
 * if small (compaction could make it no bigger): stored on pages, at the
 * table's level, and never merged again.
 */
static void
flush_state(Relation rel, ColumnarWriteState *st, bool for_good)
{
	ColumnarStripe s;
	bytea	   *directory;
	bytea	   *inline_data = NULL;
	StringInfoData data;
	MemoryContext old;
	CommandId	cid;

	if (st->nrows == 0)
		return;
	cid = st->cids[0];
	old = MemoryContextSwitchTo(st->cxt);
	initStringInfo(&data);

	/*
	 * A partial stripe is usually small enough to stay inline, and an
	 * inline stripe is compressed again when compaction merges it: zstd's
	 * fastest level does for it.  Should it turn out too big for inline,
	 * it is stored for good, so it is encoded again at the table's level.
	 */
	if (st->nrows < st->opts.stripe_rows && st->opts.compression_level > 1 && !for_good)
	{
		encode_stripe(st, st->nrows, 1, &s, &directory, &data);
		if (data.len > columnar_inline_stripe_bytes)
		{
			pfree(directory);
			resetStringInfo(&data);
			encode_stripe(st, st->nrows, st->opts.compression_level, &s, &directory, &data);
		}
	}
	else
		encode_stripe(st, st->nrows, st->opts.compression_level, &s, &directory, &data);
	if (data.len <= columnar_inline_stripe_bytes && !for_good)
	{
		inline_data = palloc(VARHDRSZ + data.len);
		SET_VARSIZE(inline_data, VARHDRSZ + data.len);
		memcpy(VARDATA(inline_data), data.data, data.len);
	}
	else
		s.first_block = write_pages(rel, data.data, data.len);
	columnar_insert_stripe(st->storage_id, &s, directory, inline_data, cid);
	pfree(data.data);
	pfree(directory);
	if (inline_data)
		pfree(inline_data);
	MemoryContextSwitchTo(old);
	reset_buffers(st);
}

/*
 * In-memory stripes of the rows this backend has buffered for relid that
 * a snapshot with curcid sees (rows of earlier commands).
 */
List *
columnar_pending_stripes(Relation rel, CommandId curcid)
{
	List	   *result = NIL;

	for (ColumnarWriteState *st = write_states; st; st = st->next)
	{
		int			nrows = 0;
		ColumnarStripe tmp;
		bytea	   *directory;
		StringInfoData data;
		ColumnarStripe *s;

		if (st->relid != RelationGetRelid(rel) || st->nrows == 0 ||
			st->relfilenode != rel->rd_node.relNode)
			continue;
		for (int i = 0; i < st->ncids; i++)
		{
			if (st->cids[i] >= curcid)
				break;
			nrows = (i + 1 < st->ncids) ? st->cid_rows[i + 1] : st->nrows;
		}
		if (nrows == 0)
			continue;
		initStringInfo(&data);
		encode_stripe(st, nrows, 0, &tmp, &directory, &data);
		s = columnar_parse_stripe(tmp.first_row, tmp.row_count, -1, data.len,
								  directory, NULL);
		s->inline_data = data.data;
		result = lappend(result, s);
		pfree(directory);
	}
	return result;
}

/* Write out the buffered rows of relid (all subtransactions). */
void
columnar_flush_relation(Oid relid)
{
	ColumnarWriteState *st;

	while ((st = write_states) != NULL)
	{
		for (; st; st = st->next)
			if (st->relid == relid)
				break;
		if (st == NULL)
			break;
		{
			Relation	rel = table_open(relid, NoLock);

			if (st->relfilenode == rel->rd_node.relNode)
				flush_state(rel, st, false);
			table_close(rel, NoLock);
		}
		free_state(st);
	}
}

/* Drop the buffered rows of relid (TRUNCATE, DROP). */
void
columnar_discard_relation(Oid relid)
{
	ColumnarWriteState *st = write_states;

	while (st)
	{
		ColumnarWriteState *next = st->next;

		if (st->relid == relid)
			free_state(st);
		st = next;
	}
}

static void
remember_written(ColumnarWriteState *st)
{
	ListCell   *lc;
	WrittenTable *w;
	MemoryContext old;

	foreach(lc, written_tables)
		if (((WrittenTable *) lfirst(lc))->relid == st->relid)
			return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	w = palloc(sizeof(WrittenTable));
	w->relid = st->relid;
	w->opts = st->opts;
	written_tables = lappend(written_tables, w);
	MemoryContextSwitchTo(old);
}

/* Flush the states of the current subtransaction (or all of them). */
static void
flush_states(bool all)
{
	SubTransactionId sub = GetCurrentSubTransactionId();
	ColumnarWriteState *st = write_states;

	while (st)
	{
		ColumnarWriteState *next = st->next;

		if (all || st->subxid == sub)
		{
			Relation	rel = try_relation_open(st->relid, NoLock);

			if (rel && st->relfilenode == rel->rd_node.relNode)
			{
				if (st->nrows > 0)
					remember_written(st);
				flush_state(rel, st, false);
			}
			free_state(st);
			if (rel)
				relation_close(rel, NoLock);
		}
		st = next;
	}
}

/*
 * At commit: let compaction look at the tables this transaction wrote to.
 * Not at PREPARE TRANSACTION: the compaction lock would stay held until
 * COMMIT PREPARED, however long that takes.
 */
static void
compact_written_tables(void)
{
	ListCell   *lc;

	foreach(lc, written_tables)
	{
		WrittenTable *w = lfirst(lc);

		maybe_compact(w->relid, w->opts);
	}
}

static void
xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (write_states)
				flush_states(true);
			compact_written_tables();
			break;
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (write_states)
				flush_states(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			/* the memory went with TopTransactionContext */
			write_states = NULL;
			written_tables = NIL;
			columnar_pending_generation++;
			break;
	}
}

static void
subxact_callback(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	ColumnarWriteState *st;

	switch (event)
	{
		case SUBXACT_EVENT_PRE_COMMIT_SUB:
			if (write_states)
				flush_states(false);
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			st = write_states;
			while (st)
			{
				ColumnarWriteState *next = st->next;

				if (st->subxid == mySubid)
					free_state(st);
				st = next;
			}
			break;
		default:
			break;
	}
}

void
columnar_write_init(void)
{
	RegisterXactCallback(xact_callback, NULL);
	RegisterSubXactCallback(subxact_callback, NULL);
}

/* ---- compaction ---- */

/*
 * Compaction merges inline stripes by size class: class k holds stripes of
 * 16^k to 16^(k+1) - 1 rows.  The stripes of one class merge into stripes
 * of a higher class, so however small the commits, a row is rewritten at
 * most log16(stripe_rows) times (5 for the default) before it rests in a
 * full or paged stripe; merging every inline stripe each time instead
 * would rewrite a growing stripe again and again.
 *
 * Concurrency.  A compaction deletes the stripe rows it merges and inserts
 * the merged stripes in its own transaction, so that every snapshot sees
 * either the old stripes or the new ones, each row once:
 *	- one compactor per table at a time: it holds the table's compaction
 *	  lock (columnar_lock_compaction) to the end of its transaction;
 *	- it reads the stripes to merge under that lock, with a snapshot taken
 *	  after it, so it sees what the compactor before it committed; it sees
 *	  committed stripes only, never one another transaction still writes;
 *	- its deletes are ordinary MVCC deletes: older snapshots still see the
 *	  old stripes (and vacuum keeps their rows and TOAST) until they end;
 *	- data pages are only ever appended; a compaction that fails or
 *	  crashes leaves pages that no stripe row refers to.
 * The transaction must be one whose xid other snapshots see: lazy VACUUM
 * makes sure of that first (columnar_tableam.c).
 */
#define COMPACT_FANIN 16
#define COMPACT_CLASSES 8		/* 16^7 > the largest stripe_rows */
#define COMPACT_ALL_CLASSES (-1)

static int
compaction_class(int64 rows)
{
	int			k = 0;

	while (rows >= COMPACT_FANIN && k < COMPACT_CLASSES - 1)
	{
		rows /= COMPACT_FANIN;
		k++;
	}
	return k;
}

/*
 * Merge the inline stripes of rel of fewer than stripe_rows rows in the
 * given size class (or all of them) into as few stripes as the stripe size
 * allows, keeping row numbers.  Returns how many stripes were merged; 0 if
 * there was nothing to do, or if another transaction holds the compaction
 * lock and wait is false.
 */
static int64
compact_class(Relation rel, int class, bool wait)
{
	ColumnarWriteState *st;
	Snapshot	snapshot;
	List	   *stripes;
	List	   *small = NIL;
	ListCell   *lc;
	Bitmapset  *attrs = NULL;
	Datum	   *values;
	bool	   *isnull;
	int64		merged = 0;
	int64		total_rows = 0;
	int64		stripe_rows;	/* rows per merged stripe */
	bool		cut_by_memory;
	MemoryContext old;
	ColumnarOptions opts = columnar_get_options(RelationGetRelid(rel));

	if (!columnar_lock_compaction(RelationGetRelid(rel), wait))
		return 0;
	/* what the previous holder of the lock committed, and this transaction's own */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	stripes = columnar_load_stripes(columnar_read_metapage(rel).storage_id, snapshot, true);
	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		if (s->row_count < opts.stripe_rows &&
			(class == COMPACT_ALL_CLASSES || compaction_class(s->row_count) == class))
		{
			small = lappend(small, s);
			total_rows += s->row_count;
		}
	}
	if (list_length(small) < 2)
	{
		UnregisterSnapshot(snapshot);
		return 0;
	}

	st = create_state(rel);
	/* a compaction that fails in a subtransaction gives its buffers back */
	MemoryContextSetParent(st->cxt, CurTransactionContext);

	/*
	 * The rows are known: stripes of this many rows, with buffers sized once
	 * rather than doubled (which needs the old and the new buffer at once),
	 * within half of the write memory (the rest is for dictionaries).
	 */
	stripe_rows = Min(total_rows, (int64) opts.stripe_rows);
	cut_by_memory = stripe_rows * (int64) row_bytes(st) > (int64) columnar_write_memory_kb * 1024 / 2;
	if (cut_by_memory)
		stripe_rows = Max((int64) columnar_write_memory_kb * 1024 / 2 / (int64) row_bytes(st), 1);
	old = MemoryContextSwitchTo(st->cxt);
	values = palloc(sizeof(Datum) * st->natts);
	isnull = palloc(sizeof(bool) * st->natts);
	for (int i = 0; i < st->natts; i++)
		attrs = bms_add_member(attrs, i + 1);
	MemoryContextSwitchTo(old);
	foreach(lc, small)
	{
		ColumnarStripe *s = lfirst(lc);
		ColumnarReadState *rs = columnar_read_stripes(rel, list_make1(s), attrs);
		int64		row;

		/* gone before its rows are written again under the same numbers */
		columnar_delete_stripe(&s->meta_tid);
		while (columnar_read_next(rs, values, isnull, &row))
		{
			if (st->nrows == 0 && st->cap < stripe_rows)
				grow(st, (int) stripe_rows);
			append_row(st, values, isnull, row, GetCurrentCommandId(true));
			/* a stripe cut short by the memory is final, or it would be merged again */
			if (st->nrows == stripe_rows || state_full(st))
				flush_state(rel, st, cut_by_memory || st->nrows < stripe_rows);
		}
		columnar_read_end(rs);
		merged++;
	}
	flush_state(rel, st, false);
	MemoryContextDelete(st->cxt);
	UnregisterSnapshot(snapshot);
	return merged;
}

/*
 * Merge all small inline stripes of rel now (VACUUM, parca_columnar_compact);
 * without wait, nothing happens while another transaction compacts rel.
 */
int64
columnar_compact(Relation rel, bool wait)
{
	return compact_class(rel, COMPACT_ALL_CLASSES, wait);
}

/*
 * The row counts of the inline stripes of rel that compaction would merge
 * (fewer rows than a stripe), as the latest snapshot sees them: a hint for
 * deciding whether to compact, read without the compaction lock.
 */
static int
mergeable_row_counts(Relation rel, ColumnarOptions opts, int64 **counts)
{
	int			n = columnar_inline_row_counts(columnar_read_metapage(rel).storage_id, counts);
	int			kept = 0;

	for (int i = 0; i < n; i++)
		if ((*counts)[i] < opts.stripe_rows)
			(*counts)[kept++] = (*counts)[i];
	return kept;
}

/* Whether rel has inline stripes that columnar_compact would merge. */
bool
columnar_compaction_pending(Relation rel)
{
	int64	   *counts;
	int			n = mergeable_row_counts(rel, columnar_get_options(RelationGetRelid(rel)), &counts);

	pfree(counts);
	return n >= 2;
}

/*
 * Compact one size class of rel at commit, in a subtransaction: a
 * compaction that fails (cancelled, out of memory, a damaged stripe) is
 * rolled back on its own, with a warning, and the commit goes on, so
 * that compaction can never cost the rows being committed.
 */
static void
compact_class_at_commit(Relation rel, int class)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	PG_TRY();
	{
		compact_class(rel, class, false);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		ereport(WARNING,
				(errmsg("compaction of \"%s\" failed: %s", RelationGetRelationName(rel),
						edata->message),
				 errdetail("The commit went on; its small stripes stay as they were.")));
		FreeErrorData(edata);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
}

/*
 * At commit of a transaction that wrote to relid: merge the lowest size
 * class that has gathered COMPACT_FANIN inline stripes, or a full
 * stripe's worth of rows.  Skipped while another transaction compacts.
 */
static void
maybe_compact(Oid relid, ColumnarOptions opts)
{
	Relation	rel;
	int64	   *counts;
	int			n;
	int			stripes[COMPACT_CLASSES] = {0};
	int64		rows[COMPACT_CLASSES] = {0};

	/*
	 * Usually still locked by the writes; not if they were in a savepoint
	 * rolled back since, and a commit does not wait.
	 */
	if (!ConditionalLockRelationOid(relid, RowExclusiveLock))
		return;
	rel = try_relation_open(relid, NoLock);
	if (rel == NULL || !columnar_is_columnar(rel))
	{
		/* dropped, or rewritten with another access method, by this transaction */
		if (rel)
			relation_close(rel, NoLock);
		return;
	}
	CommandCounterIncrement();
	n = mergeable_row_counts(rel, opts, &counts);
	for (int i = 0; i < n; i++)
	{
		int			k = compaction_class(counts[i]);

		stripes[k]++;
		rows[k] += counts[i];
	}
	pfree(counts);
	for (int k = 0; k < COMPACT_CLASSES; k++)
	{
		if (stripes[k] >= COMPACT_FANIN || (stripes[k] >= 2 && rows[k] >= opts.stripe_rows))
		{
			compact_class_at_commit(rel, k);
			break;
		}
	}
	relation_close(rel, NoLock);
}
