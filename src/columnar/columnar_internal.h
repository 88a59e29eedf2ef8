/*
 * columnar_internal.h
 *		Inside the parca_columnar table access method: the on-disk format and
 *		the face of each file.  Only files in src/columnar/ include it; the
 *		rest of the extension has columnar.h.
 *
 * A columnar table keeps its rows in stripes.  A stripe holds up to
 * stripe_rows rows, split into chunk groups of chunk_group_rows rows; each
 * column of a chunk group is one chunk, encoded for its data and then
 * compressed with zstd.  Columns of pass-by-reference types (text, bytea,
 * jsonb, ...) share one dictionary per stripe; a stacktrace column's is
 * entry numbers in the table's stack dictionary (columnar_dictionary.c).
 *
 * Where things live:
 *	- block 0 of the relation's main fork: the metapage (format version,
 *	  storage id, row number and stack dictionary entry counters),
 *	  written with generic WAL;
 *	- blocks 1..n: stripe data, page-aligned per stripe, generic WAL;
 *	  pages of merged-away stripes are reused (the metapage lists them);
 *	- parca.columnar_stripes (an ordinary heap table): one row per stripe
 *	  with its row numbers, location and directory (per chunk: offset,
 *	  size, encoding, min/max).  Small stripes keep their data inline in
 *	  that row.  A stripe exists for a snapshot exactly when its row there
 *	  is visible, which gives transactions, crash safety and replication
 *	  the heap's semantics;
 *	- parca.columnar_dictionary: the segments of the table's stack
 *	  dictionary, rows laid out as stripe rows, their data inline or on
 *	  the table's pages too.
 *
 * Row numbers are reserved from the metapage counter when rows are
 * buffered, so that index entries can point at them (a TID encodes a row
 * number); a stripe lists the row number ranges it holds.
 *
 * The files, from the top layer down (docs/development.md draws which may
 * call which):
 *	columnar.c				start-up: settings, callbacks, DROP TABLE clean-up
 *	columnar_tableam.c		the table access method callbacks
 *	columnar_customscan.c	Columnar Scan: column projection, chunk skipping
 *	columnar_agg.c			Columnar Aggregate: GROUP BY inside the scan
 *	columnar_check.c		parca_columnar_check(), parca_columnar_chunks()
 *	columnar_admin.c		parca_columnar_compact(),
 *							parca.columnar_delete_all_rows()
 *	columnar_write_log.c	parca_columnar_written(): the write log read
 *	columnar_write_state.c	the transaction's buffered rows, per table and
 *							subtransaction: row numbers, flushing at commit,
 *							in-memory stripes for the writer's own reads
 *	columnar_compaction.c	merging stripes (inline ones at commit, all
 *							in VACUUM), the free page list
 *	columnar_write.c		write buffers and the stripe writer
 *	columnar_read.c			scans: stripe lists, chunk groups, the row
 *							filter, fetch by row number and by ordinal
 *	columnar_dictionary.c	a table's stack dictionary: its segments, what
 *							writers know of it, readers' views of it
 *	columnar_predicate.c	chunk skipping predicates: their values, and
 *							the chunk groups their min/max rule out
 *	columnar_chunk.c		the stripe format: chunks, encoded and decoded
 *							side by side
 *	columnar_directory.c	the stripe format: the directory that lists the
 *							chunks, built and parsed
 *	columnar_encode.c		integer encodings, varints, zstd
 *	columnar_storage.c		the relation's blocks: metapage, data pages
 *	columnar_scratch.c		the buffers of scans, kept from one scan to
 *							the next
 *	columnar_catalog.c		parca.columnar_stripes, parca.columnar_options,
 *							parca.columnar_write_log, the compaction lock
 */
#ifndef PARCA_COLUMNAR_INTERNAL_H
#define PARCA_COLUMNAR_INTERNAL_H

#include "columnar/columnar.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "port/pg_crc32c.h"
#include "storage/bufpage.h"
#include "storage/itemptr.h"
#include "storage/lockdefs.h"
#include "storage/smgr.h"

/* Settings (GUCs parca.columnar_*, columnar.c). */
extern int	columnar_stripe_rows;
extern int	columnar_chunk_group_rows;
extern int	columnar_compression_level;
extern int	columnar_write_memory_kb;
extern int	columnar_inline_stripe_bytes;
extern int	columnar_scan_cache_kb;
extern bool columnar_enable_custom_scan;
extern bool columnar_enable_aggregate;

/* Per-table options (parca.columnar_options, else the settings). */
#define COLUMNAR_MAX_SORT_COLUMNS 4

typedef struct ColumnarOptions
{
	int			stripe_rows;
	int			chunk_group_rows;
	int			compression_level;
	/* the pass-by-value columns VACUUM orders merged stripes by */
	int			nsort;
	AttrNumber	sort_by[COLUMNAR_MAX_SORT_COLUMNS];
	/* the timestamptz column whose range writes log, or InvalidAttrNumber */
	AttrNumber	log_by;
} ColumnarOptions;

/* ---- row numbers and TIDs ---- */

#define COLUMNAR_ROWS_PER_BLOCK	MaxHeapTuplesPerPage
#define COLUMNAR_MAX_ROW_NUMBER	((int64) MaxBlockNumber * COLUMNAR_ROWS_PER_BLOCK)

static inline void
columnar_row_to_tid(int64 row, ItemPointer tid)
{
	ItemPointerSet(tid, (BlockNumber) (row / COLUMNAR_ROWS_PER_BLOCK),
				   (OffsetNumber) (row % COLUMNAR_ROWS_PER_BLOCK + 1));
}

static inline int64
columnar_tid_to_row(ItemPointer tid)
{
	return (int64) ItemPointerGetBlockNumber(tid) * COLUMNAR_ROWS_PER_BLOCK +
		ItemPointerGetOffsetNumber(tid) - 1;
}

/* ---- the on-disk format ---- */

/*
 * Format versions.  COLUMNAR_FORMAT_VERSION, kept in the metapage, is the
 * version of everything a table's storage holds: the metapage, the stripe
 * directory, the chunk layout and the encodings.  The rule:
 *	- a build reads tables of its version and of every older one (it keeps
 *	  their decoders), and refuses to read or write a table of a newer
 *	  version, with an error, rather than misread it;
 *	- a change that an older build would misread (a new encoding number, a
 *	  field in the directory, the chunk layout or the metapage) increments
 *	  the version, and a build raises a table's metapage version before it
 *	  writes anything new into it, so that older builds refuse the table
 *	  from then on;
 *	- a change that older builds read correctly (choosing differently among
 *	  the existing encodings, new settings) keeps the version;
 *	- magic, version and storage_id keep their place in the metapage in
 *	  every version, so that any build can tell a table's version, and DROP
 *	  or TRUNCATE a table it cannot read.
 * A new column encoding: see "Adding a column encoding" in
 * docs/development.md.
 */
#define COLUMNAR_FORMAT_VERSION 4

/* The first format version of each addition (older builds refuse it). */
#define COLUMNAR_VERSION_WORD_DICTIONARY 2	/* ENC_WORDS */
#define COLUMNAR_VERSION_DICT_IDS 3 /* ENC_IDS, COLUMNAR_STRIPE_DICT_IDS */
#define COLUMNAR_VERSION_TABLE_DICTIONARY 4 /* ENC_ENTRIES, next_entry,
											 * parca.columnar_dictionary */

/* Block 0: the metapage. */
typedef struct ColumnarMetaPage
{
	uint32		magic;
	uint32		version;		/* COLUMNAR_FORMAT_VERSION of the storage */
	int64		storage_id;
	int64		next_row;		/* next row number to reserve */
	/* nfree ColumnarBlockRun (free pages) follow; 0 in older tables */
	int32		nfree;
	int32		next_entry;		/* next stack dictionary entry number to
								 * reserve (format version 4; 0 before) */
} ColumnarMetaPage;

#define COLUMNAR_META_MAGIC 0x50434d31	/* "PCM1" */

/* Data bytes per page: everything after the page header. */
#define COLUMNAR_PAGE_PAYLOAD	(BLCKSZ - SizeOfPageHeaderData)

/* Chunk encodings (ColumnarChunk.encoding); the numbers are on disk. */
typedef enum ColumnarEncoding
{
	ENC_ALL_NULL = 0,			/* no values, every row NULL */
	ENC_FOR,					/* frame of reference + bit-packing */
	ENC_RLE,					/* runs of (value, count), varints */
	ENC_DELTA_FOR,				/* deltas, then FOR */
	ENC_DELTA_RLE,				/* deltas, then RLE */
	ENC_DOD_FOR,				/* delta of delta, then FOR */
	ENC_DICT,					/* indexes into the stripe dictionary */
	ENC_PLAIN,					/* varlena/bytes values in the chunk */
	ENC_WORDS,					/* a dictionary as indexes into its 8-byte
								 * words (format version 2) */
	ENC_IDS,					/* the 64-bit ids of a dictionary's entries
								 * (format version 3) */
	ENC_ENTRIES,				/* a dictionary as entry numbers in the
								 * table's stack dictionary (version 4) */
	ENC_COUNT
} ColumnarEncoding;

extern const char *const columnar_encoding_names[ENC_COUNT];

/* One chunk: one column of one chunk group (or a stripe dictionary). */
typedef struct ColumnarChunk
{
	int64		offset;			/* in the stripe's data */
	int32		size;			/* stored bytes */
	int32		rawsize;		/* bytes before zstd, 0 = not compressed */
	int32		nnulls;
	uint32		crc;			/* CRC-32C of the stored bytes */
	uint8		encoding;		/* ColumnarEncoding (of the values) */
	uint8		index_encoding; /* ENC_DICT: the indexes' integer encoding */
	uint8		has_minmax;
	uint8		pad;
	int64		min;			/* pass-by-value types: min/max as int64 */
	int64		max;
} ColumnarChunk;

/* Column kinds: pass-by-value values are handled as int64. */
#define COLUMNAR_KIND_INT	1
#define COLUMNAR_KIND_BYTES 2

typedef struct ColumnarColumn
{
	uint8		kind;
	uint8		has_dict;
	uint16		pad;
	int32		ndict;			/* dictionary entries */
	ColumnarChunk dict;			/* the stripe dictionary, if has_dict:
								 * ENC_PLAIN, ENC_WORDS or ENC_ENTRIES */
} ColumnarColumn;

typedef struct ColumnarRowRange
{
	int64		first;
	int64		count;
} ColumnarRowRange;

/*
 * A run of data pages: first block, count.  The metapage lists runs of
 * free pages (of stripes merged away, of rolled-back and crashed writes),
 * found by VACUUM from the stripe catalog, for writers to reuse.  Older
 * builds of format version 1 ignore the list (they only ever append), so
 * it keeps the version.
 */
typedef ColumnarRowRange ColumnarBlockRun;

#define COLUMNAR_MAX_FREE_RUNS 256

/* qsort order of row ranges and block runs: by first */
static inline int
columnar_range_cmp(const void *a, const void *b)
{
	const ColumnarRowRange *x = a;
	const ColumnarRowRange *y = b;

	return x->first < y->first ? -1 : (x->first > y->first ? 1 : 0);
}

#define COLUMNAR_DIRECTORY_MAGIC 0x50435331 /* "PCS1" */

/* Header of the serialized directory; arrays follow. */
typedef struct ColumnarDirectoryHeader
{
	uint32		magic;
	int32		natts;
	int32		ngroups;
	int32		group_rows;
	int32		nranges;
	int32		flags;			/* COLUMNAR_STRIPE_* (0 in older builds) */
	int64		nrows;
} ColumnarDirectoryHeader;

/*
 * A stripe cut short by parca.columnar_write_memory during a merge: merging
 * it again could make it no bigger, so it never is.
 */
#define COLUMNAR_STRIPE_FINAL	0x1

/*
 * The directory ends with one ColumnarChunk per column: the ids of its
 * dictionary's entries (ENC_IDS), or an empty chunk (size 0) for a column
 * without them (format version 3).  Set and cleared by the directory's
 * build and parse, from ColumnarStripe.dict_ids; not in ColumnarStripe.flags.
 */
#define COLUMNAR_STRIPE_DICT_IDS	0x2

/* A stripe as read from parca.columnar_stripes (all in one palloc). */
typedef struct ColumnarStripe
{
	int64		first_row;
	int64		row_count;
	int64		first_block;	/* -1: data inline */
	int64		data_size;
	char	   *inline_data;	/* when first_block < 0 */
	ItemPointerData meta_tid;	/* its row in parca.columnar_stripes */
	int			natts;
	int			ngroups;
	int			group_rows;
	int			nranges;
	int			flags;			/* COLUMNAR_STRIPE_* */
	ColumnarRowRange *ranges;
	ColumnarColumn *columns;	/* [natts] */
	ColumnarChunk *chunks;		/* [natts * ngroups], column-major */
	ColumnarChunk *dict_ids;	/* [natts] the ids of each dictionary's
								 * entries (size 0: none); NULL in stripes of
								 * older formats */
} ColumnarStripe;

#define COLUMNAR_CHUNK(stripe, att, group) \
	(&(stripe)->chunks[(att) * (stripe)->ngroups + (group)])

/* ---- columnar_storage.c: the relation's blocks ---- */

extern void columnar_init_metapage(Relation rel, SMgrRelation srel, bool wal, int64 storage_id);
extern ColumnarMetaPage columnar_read_metapage(Relation rel);
extern int64 columnar_read_storage_id(Relation rel);
extern int64 columnar_reserve_rows(Relation rel, int64 count);
extern void columnar_require_version(Relation rel, uint32 version);
extern int64 columnar_reserve_entries(Relation rel, int count);
extern int64 columnar_write_pages(Relation rel, const char *data, int64 len);
extern void columnar_set_free_runs(Relation rel, ColumnarBlockRun *runs, int nruns);
extern int	columnar_free_runs(Relation rel, ColumnarBlockRun **runs);
extern int	columnar_read_pages(Relation rel, int64 first_block, int64 offset, int size,
								StringInfo out, Bitmapset **seen);

/* ---- columnar_catalog.c: stripe rows, options, the compaction lock ---- */

extern ColumnarOptions columnar_get_options(Oid relid);
extern Oid	columnar_namespace(void);
extern int64 columnar_new_storage_id(void);
extern Relation columnar_open_stripes(LOCKMODE mode);
extern void columnar_insert_stripe(int64 storage_id, const ColumnarStripe *s,
								   bytea *directory, bytea *inline_data, CommandId cid);
extern List *columnar_load_stripes(int64 storage_id, Snapshot snapshot, bool inline_only);
extern void columnar_insert_segment(int64 storage_id, const ColumnarStripe *s,
									bytea *directory, bytea *inline_data, CommandId cid);
extern List *columnar_load_segments(int64 storage_id, int64 from_entry, Snapshot snapshot);
extern bool columnar_dictionary_installed(void);
extern void columnar_delete_segment(ItemPointer meta_tid);
extern void columnar_delete_stripe(ItemPointer meta_tid);
extern bool columnar_lock_compaction(Oid relid, bool wait);
extern void columnar_lock_page_writes(Oid relid, LOCKMODE mode);
extern void columnar_unlock_page_writes(Oid relid, LOCKMODE mode);
extern int	columnar_stripe_block_runs(int64 storage_id, ColumnarBlockRun **runs);
extern void columnar_delete_storage(Oid relid, int64 storage_id);
extern void columnar_delete_options(Oid relid);
extern int	columnar_stripe_row_counts(int64 storage_id, bool inline_only, int64 **counts);
extern void columnar_log_insert(Oid relid, TimestampTz lo, TimestampTz hi);
extern bool columnar_log_meets(Oid relid, TimestampTz lo, TimestampTz hi, Snapshot snapshot);

/* ---- columnar_dictionary.c: a table's stack dictionary ---- */

typedef struct ColumnarDictionaryView ColumnarDictionaryView;

extern void columnar_dictionary_init(void);
extern bool columnar_dictionary_type(Oid typid);
extern bool columnar_dictionary_fits(const uint32 *dict_len, int ndict);
extern bool columnar_dictionary_entries(Relation rel, int64 storage_id, char *const *dict,
										const uint32 *dict_len, int ndict, int level,
										int64 *entries);
extern ColumnarDictionaryView *columnar_dictionary_view(Relation rel, Snapshot snapshot);
extern void columnar_dictionary_view_end(ColumnarDictionaryView *v);
extern int64 columnar_dictionary_blocks_read(const ColumnarDictionaryView *v);
extern int	columnar_dictionary_segments(const ColumnarDictionaryView *v);
extern void columnar_dictionary_ids(ColumnarDictionaryView *v, const int64 *entries, int n,
									uint64 *ids);
extern void columnar_dictionary_values(ColumnarDictionaryView *v, const int64 *entries, int n,
									   char **values);
extern int	columnar_dictionary_check(ColumnarDictionaryView *v, int64 next_entry,
									  BlockNumber nblocks, ColumnarBlockRun **runs);
extern int	columnar_dictionary_merge(Relation rel, int level);
extern bool columnar_dictionary_merge_pending(Relation rel);

/* ---- columnar_scratch.c: the buffers of scans, kept between scans ---- */

typedef struct ColumnarScratch ColumnarScratch;

/* Buffers are allocated in multiples of this, so that close sizes share them. */
#define COLUMNAR_SCRATCH_MIN_BYTES (64 * 1024)

extern ColumnarScratch *columnar_scratch_create(MemoryContext cxt);
extern void columnar_scratch_reserve(ColumnarScratch *sc, StringInfo buf, Size size);
extern char *columnar_scratch_alloc(ColumnarScratch *sc, StringInfo space, Size size,
									MemoryContext cxt);

/* ---- columnar_encode.c: integer encodings, varints, zstd ---- */

extern Datum columnar_int_to_datum(int64 v, int16 typlen);
extern int64 columnar_datum_to_int(Datum d, int16 typlen);

/*
 * Varints (in the header, to be inlined): v in 7-bit groups, lowest first,
 * the high bit set on all but the last; at most COLUMNAR_VARINT_MAX bytes.
 */
#define COLUMNAR_VARINT_MAX 10

/* Write v at p, which has room for it; returns the bytes written. */
static inline int
columnar_varint_write(char *p, uint64 v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		p[n++] = (char) ((v & 0x7f) | 0x80);
		v >>= 7;
	}
	p[n++] = (char) v;
	return n;
}

/* The bytes of the varint of v. */
static inline int
columnar_varint_size(uint64 v)
{
	int			n = 1;

	while (v >= 0x80)
	{
		v >>= 7;
		n++;
	}
	return n;
}

static inline void
columnar_put_varint(StringInfo out, uint64 v)
{
	char		buf[COLUMNAR_VARINT_MAX];

	appendBinaryStringInfo(out, buf, columnar_varint_write(buf, v));
}

/* The varint at *p, which ends before end; *p moves past it. */
static inline uint64
columnar_get_varint(const char **p, const char *end)
{
	uint64		v = 0;
	int			shift = 0;

	while (*p < end)
	{
		uint8		b = (uint8) *(*p)++;

		v |= (uint64) (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		shift += 7;
		if (shift > 63)
			break;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar chunk has a truncated varint")));
	return 0;
}

extern int	columnar_encode_ints(const int64 *values, int n, StringInfo out);
extern void columnar_decode_ints(int encoding, const char *data, int len, int64 *values, int n);
/* Dictionary indexes: each checked to be below ndict (data_corrupted). */
extern void columnar_decode_indexes(int encoding, const char *data, int len, int64 *values,
									int n, int ndict);
/* FOR's bit width, and where some of its values lie (reading part of a chunk) */
extern int	columnar_for_width(int64 min, int64 max);
extern void columnar_for_span(int width, int lo, int n, int64 *offset, int64 *size);
extern void columnar_decode_for_span(int64 min, int width, const char *p, int64 len, int lo,
									 int64 *v, int n);
extern void columnar_compress(const char *raw, int rawlen, int level, StringInfo out, int32 *stored_rawsize);
extern void columnar_decompress(const char *stored, int size, int rawsize, char *raw);

/* ---- columnar_chunk.c: chunks ---- */

/*
 * How a pass-by-value column's values are ordered, for its chunks' min/max:
 * by int64 comparison, or by the type's btree comparison function.
 */
typedef struct ColumnarValueOrder
{
	bool		signed_order;
	int16		typlen;
	Oid			collation;
	FmgrInfo	cmp;
} ColumnarValueOrder;

/* Where a stripe's chunks are written: its data, at a zstd level. */
typedef struct ColumnarChunkWriter
{
	StringInfo	data;			/* the stripe's data */
	int			level;
	StringInfoData raw;			/* the chunk being encoded */
	int64	   *values;			/* [max_rows] the non-NULL values */
} ColumnarChunkWriter;

extern void columnar_chunk_writer_begin(ColumnarChunkWriter *w, StringInfo data, int level,
										int max_rows);
extern void columnar_chunk_writer_end(ColumnarChunkWriter *w);
extern void columnar_chunk_encode_ints(ColumnarChunkWriter *w, const int64 *values,
									   const bool *nulls, int n,
									   ColumnarValueOrder *order, ColumnarChunk *chunk);
extern void columnar_chunk_encode_indexes(ColumnarChunkWriter *w, const uint32 *indexes,
										  const bool *nulls, int n, ColumnarChunk *chunk);
extern void columnar_chunk_encode_plain(ColumnarChunkWriter *w, const uint32 *indexes,
										const bool *nulls, int n, char *const *dict,
										const uint32 *dict_len, ColumnarChunk *chunk);
extern void columnar_chunk_encode_dictionary(ColumnarChunkWriter *w, char *const *dict,
											 const uint32 *dict_len, int ndict, int16 typlen,
											 ColumnarChunk *chunk);
extern void columnar_chunk_encode_ids(ColumnarChunkWriter *w, char *const *dict,
									  const uint32 *dict_len, int ndict, ColumnarChunk *chunk);
extern void columnar_chunk_encode_entries(ColumnarChunkWriter *w, const int64 *entries,
										  int n, ColumnarChunk *chunk);
extern bool columnar_order_is_signed(Oid cmp_proc);
extern uint64 columnar_chunk_entry_id(const char *value, int16 typlen);

extern pg_crc32c columnar_chunk_crc(const char *data, int len);
extern int	columnar_chunk_read_stored(Relation rel, ColumnarStripe *stripe,
									   ColumnarChunk *chunk, StringInfo out, Bitmapset **seen);
extern int	columnar_chunk_read(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk,
								StringInfo raw, StringInfo stored, Bitmapset **seen);
extern bool columnar_chunk_read_rows(Relation rel, ColumnarStripe *s, ColumnarChunk *ch,
									 bool signed_order, int n, int lo, int hi, int64 *ints,
									 StringInfo buf, int64 *pages, Bitmapset **seen);
extern int	columnar_chunk_read_scratch(ColumnarScratch *sc, Relation rel, ColumnarStripe *stripe,
										ColumnarChunk *chunk, StringInfo raw, StringInfo stored,
										Bitmapset **seen);
extern int	columnar_chunk_decode(const ColumnarChunk *chunk, const char *raw, int len, int n,
								  int16 typlen, int ndict, bool *nulls, int64 *ints,
								  char ***values);
extern Size columnar_chunk_dictionary_size(const ColumnarChunk *chunk, const char *raw, int len,
											int ndict, int16 typlen);
extern char **columnar_chunk_decode_dictionary(const ColumnarChunk *chunk, const char *raw,
											   int len, int ndict, int16 typlen, char *space);

/* ---- columnar_directory.c: the stripe directory ---- */

extern bytea *columnar_directory_build(const ColumnarStripe *s);
extern ColumnarStripe *columnar_directory_parse(int64 first_row, int64 row_count,
												int64 first_block, int64 data_size,
												bytea *directory, bytea *inline_data);

/* ---- columnar_write.c: write buffers and the stripe writer ---- */

typedef struct ColumnarWriteBuffer ColumnarWriteBuffer;

extern ColumnarWriteBuffer *columnar_buffer_create(Relation rel, MemoryContext parent);
extern void columnar_buffer_order_rows(ColumnarWriteBuffer *buf);
extern void columnar_buffer_free(ColumnarWriteBuffer *buf);
extern bool columnar_buffer_append(ColumnarWriteBuffer *buf, Datum *values, bool *isnull,
								   int64 row, CommandId cid);
extern void columnar_buffer_flush(Relation rel, ColumnarWriteBuffer *buf, bool for_good,
								  int flags);
extern int	columnar_buffer_rows(const ColumnarWriteBuffer *buf);
extern int	columnar_buffer_rows_before(const ColumnarWriteBuffer *buf, CommandId cid);
extern ColumnarOptions columnar_buffer_options(const ColumnarWriteBuffer *buf);
extern void columnar_buffer_reserve(ColumnarWriteBuffer *buf, int rows);
extern Size columnar_buffer_row_bytes(TupleDesc desc);
extern ColumnarStripe *columnar_buffer_stripe(ColumnarWriteBuffer *buf, int nrows);

/* ---- columnar_write_state.c: the transaction's buffered rows ---- */

extern void columnar_write_row(Relation rel, TupleTableSlot *slot, CommandId cid);
extern void columnar_flush_relation(Oid relid);
extern void columnar_discard_relation(Oid relid);
extern List *columnar_pending_stripes(Relation rel, CommandId curcid);
extern bool columnar_pending_written(Oid relid, TimestampTz lo, TimestampTz hi);
extern uint64 columnar_pending_generation;
extern void columnar_write_state_init(void);

/* ---- columnar_compaction.c ---- */

extern int64 columnar_compact(Relation rel, bool wait, bool in_vacuum);
extern int64 columnar_delete_all_rows(Relation rel);
extern void columnar_refresh_free_space(Relation rel);
extern bool columnar_compaction_pending(Relation rel);
extern void columnar_compact_at_commit(Oid relid, ColumnarOptions opts);

/* ---- columnar_read.c: scans (besides those of columnar.h) ---- */

extern ColumnarReadState *columnar_read_stripes(Relation rel, List *stripes, Bitmapset *attrs,
												 ColumnarDictionaryView *table_dict);
extern void columnar_read_rescan(ColumnarReadState *rs);
extern void columnar_read_set_desc(ColumnarReadState *rs, TupleDesc desc);
extern void columnar_read_keep_dicts(ColumnarReadState *rs);
extern void columnar_read_filter_rows(ColumnarReadState *rs);
extern bool columnar_read_value_is_dict(ColumnarReadState *rs, AttrNumber attno);
extern bool columnar_read_row(ColumnarReadState *rs, int64 rownum, Datum *values, bool *isnull);
extern int64 columnar_read_total_rows(ColumnarReadState *rs);
extern bool columnar_read_seek_ordinal(ColumnarReadState *rs, int64 ordinal,
									   Datum *values, bool *isnull, int64 *rownum);
extern void columnar_read_stats(ColumnarReadState *rs, int64 *groups_read,
								int64 *groups_skipped, int64 *blocks_read);

struct ColumnarPredicate
{
	AttrNumber	attno;
	int			strategy;		/* BTLessStrategyNumber ... or _ANY */
	Datum		value;			/* set at scan start */
	bool		isnull;
	Datum	   *elems;			/* COLUMNAR_STRATEGY_ANY: the array's non-NULL elements */
	int			nelems;
	bool		cmp_unsorted;	/* elements not sorted (cross-type comparison) */
	FmgrInfo	cmp;			/* cmp(column type, value or element type) */
	Oid			collation;
};

/*
 * Evaluating predicates on values: on each row by the scan's row filter
 * (columnar_read.c), on a chunk's min and max by chunk group skipping
 * (columnar_predicate.c); inline for the row filter's loop.
 */

static inline int
columnar_predicate_cmp(ColumnarPredicate *p, Datum v)
{
	return DatumGetInt32(FunctionCall2Coll(&p->cmp, p->collation, v, p->value));
}

/* cmp(v, element i) of an "= ANY" predicate */
static inline int
columnar_element_cmp(ColumnarPredicate *p, Datum v, int i)
{
	return DatumGetInt32(FunctionCall2Coll(&p->cmp, p->collation, v, p->elems[i]));
}

/* Is v one of the elements of an "= ANY" predicate? */
static inline bool
columnar_element_member(ColumnarPredicate *p, Datum v)
{
	int			lo = 0,
				hi = p->nelems - 1;

	if (p->cmp_unsorted)
	{
		for (int i = 0; i < p->nelems; i++)
			if (columnar_element_cmp(p, v, i) == 0)
				return true;
		return false;
	}
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		int			c = columnar_element_cmp(p, v, mid);

		if (c == 0)
			return true;
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return false;
}

/* Does value v pass predicate p (v op value)? */
static inline bool
columnar_predicate_passes(ColumnarPredicate *p, Datum v)
{
	int			c;

	if (p->isnull)
		return false;
	if (p->strategy == COLUMNAR_STRATEGY_ANY)
		return columnar_element_member(p, v);
	c = columnar_predicate_cmp(p, v);
	switch (p->strategy)
	{
		case BTLessStrategyNumber:
			return c < 0;
		case BTLessEqualStrategyNumber:
			return c <= 0;
		case BTEqualStrategyNumber:
			return c == 0;
		case BTGreaterEqualStrategyNumber:
			return c >= 0;
		case BTGreaterStrategyNumber:
			return c > 0;
	}
	return true;
}

/* ---- columnar_predicate.c ---- */

/*
 * Whether predicates rule out chunk group g of stripe s; if not, sets
 * *all_pass when min/max show that every row passes every predicate, and
 * att_pass[a] (unless att_pass is NULL; desc->natts of them) when they
 * show it of the predicates on column a (a column without: true).
 */
extern bool columnar_group_excluded(List *predicates, TupleDesc desc, ColumnarStripe *s, int g,
									bool *all_pass, bool *att_pass);

/* ---- planner costs (columnar_customscan.c, columnar_agg.c) ---- */

/*
 * The custom nodes are costed as fractions of the plans they replace, so
 * that the planner picks them whenever they apply (they return the same
 * rows, with less work).  Columnar Scan: of a sequential scan's run cost,
 * a fixed share (stripe list, per-group work) plus shares that shrink with
 * the columns read and with the selectivity of the chunk predicates.
 * Columnar Aggregate: a share of the cheapest aggregation plan (one pass,
 * no hashing of keys per row).  What these nodes save is measured by
 * bench/columnar.sh.
 */
#define COLUMNAR_SCAN_FIXED_COST		0.1
#define COLUMNAR_SCAN_COLUMNS_COST		0.4
#define COLUMNAR_SCAN_SELECTIVITY_COST	0.4
#define COLUMNAR_AGG_COST				0.5

/* ---- columnar_customscan.c ---- */

extern void columnar_customscan_init(void);
extern bool columnar_clause_predicate(Expr *clause, Index relid, AttrNumber *attno,
									  int *strategy, Oid *cmpproc, Expr **value, Oid *collation);
extern List *columnar_predicate_to_plan(AttrNumber attno, int strategy, Oid cmpproc,
										Oid collation);
extern ColumnarPredicate *columnar_predicate_from_plan(List *info);
extern void columnar_predicates_set_values(List *preds, List *pred_exprs,
										   ExprContext *econtext);

/* ---- columnar_agg.c ---- */

extern void columnar_agg_init(void);

/* ---- columnar_admin.c ---- */

/*
 * The parca_columnar table relid, locked in lockmode (the caller checked
 * the user's rights first); a missing relation, or one of another kind, is
 * an error.
 */
extern Relation columnar_open_table(Oid relid, LOCKMODE lockmode);

/*
 * The tables a function given relid works on: relid itself, or, if it is
 * a partitioned table, its leaf partitions that are parca_columnar, locked
 * in lockmode (the caller checked the user's rights on relid first); a
 * leaf of another access method is skipped with a NOTICE.
 */
extern List *columnar_tables_of(Oid relid, LOCKMODE lockmode);

#endif							/* PARCA_COLUMNAR_INTERNAL_H */
