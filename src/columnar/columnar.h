/*
 * columnar.h
 *		The parca_columnar table access method: module face.
 *
 * A columnar table keeps its rows in stripes.  A stripe holds up to
 * stripe_rows rows, split into chunk groups of chunk_group_rows rows; each
 * column of a chunk group is one chunk, encoded for its data and then
 * compressed with zstd.  Columns of pass-by-reference types (text, bytea,
 * jsonb, stacktrace, ...) share one dictionary per stripe.
 *
 * Where things live:
 *	- block 0 of the relation's main fork: the metapage (storage id, row
 *	  number counter), written with generic WAL;
 *	- blocks 1..n: stripe data, page-aligned per stripe, generic WAL;
 *	- parca.columnar_stripes (an ordinary heap table): one row per stripe
 *	  with its row numbers, location and directory (per chunk: offset,
 *	  size, encoding, min/max).  Small stripes keep their data inline in
 *	  that row.  A stripe exists for a snapshot exactly when its row there
 *	  is visible, which gives transactions, crash safety and replication
 *	  the heap's semantics.
 *
 * Row numbers are reserved from the metapage counter when rows are
 * buffered, so that index entries can point at them (a TID encodes a row
 * number); a stripe lists the row number ranges it holds.
 *
 * Files: columnar_tableam.c (AM callbacks), columnar_write.c (buffers,
 * stripe writer, transaction callbacks, compaction), columnar_read.c
 * (stripe list, chunk decoding, scans, fetch by row number),
 * columnar_encode.c (integer encodings, zstd), columnar_meta.c (metapage,
 * stripe catalog, options), columnar_customscan.c (chunk skipping and
 * column projection), columnar_check.c (integrity check, chunk listing).
 */
#ifndef PARCA_COLUMNAR_H
#define PARCA_COLUMNAR_H

#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/tupdesc.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/bitmapset.h"
#include "storage/bufpage.h"
#include "storage/itemptr.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

/* Settings (GUCs parca.columnar_*). */
extern int	columnar_stripe_rows;
extern int	columnar_chunk_group_rows;
extern int	columnar_compression_level;
extern int	columnar_write_memory_kb;
extern int	columnar_inline_stripe_bytes;
extern bool columnar_enable_custom_scan;
extern bool columnar_enable_aggregate;

/* Per-table options (parca.columnar_options, else the settings). */
typedef struct ColumnarOptions
{
	int			stripe_rows;
	int			chunk_group_rows;
	int			compression_level;
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

/* ---- on-disk directory of a stripe ---- */

/* Data bytes per page: everything after the page header. */
#define COLUMNAR_PAGE_PAYLOAD	(BLCKSZ - SizeOfPageHeaderData)

/* Chunk encodings (ColumnarChunk.encoding). */
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
	ColumnarChunk dict;			/* the stripe dictionary, if has_dict */
} ColumnarColumn;

typedef struct ColumnarRowRange
{
	int64		first;
	int64		count;
} ColumnarRowRange;

#define COLUMNAR_DIRECTORY_MAGIC 0x50435331 /* "PCS1" */

/* Header of the serialized directory; arrays follow. */
typedef struct ColumnarDirectoryHeader
{
	uint32		magic;
	int32		natts;
	int32		ngroups;
	int32		group_rows;
	int32		nranges;
	int32		pad;
	int64		nrows;
} ColumnarDirectoryHeader;

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
	ColumnarRowRange *ranges;
	ColumnarColumn *columns;	/* [natts] */
	ColumnarChunk *chunks;		/* [natts * ngroups], column-major */
} ColumnarStripe;

#define COLUMNAR_CHUNK(stripe, att, group) \
	(&(stripe)->chunks[(att) * (stripe)->ngroups + (group)])

/* ---- columnar_meta.c ---- */

typedef struct ColumnarMetaPage
{
	uint32		magic;
	uint32		version;
	int64		storage_id;
	int64		next_row;		/* next row number to reserve */
} ColumnarMetaPage;

#define COLUMNAR_META_MAGIC 0x50434d31	/* "PCM1" */

extern void columnar_init_metapage(Relation rel, SMgrRelation srel, bool wal, int64 storage_id);
extern ColumnarMetaPage columnar_read_metapage(Relation rel);
extern int64 columnar_reserve_rows(Relation rel, int64 count);
extern int64 columnar_new_storage_id(void);
extern ColumnarOptions columnar_get_options(Oid relid);
extern Oid	columnar_namespace(void);
extern Relation columnar_open_stripes(LOCKMODE mode);
extern void columnar_insert_stripe(int64 storage_id, const ColumnarStripe *s,
								   bytea *directory, bytea *inline_data, CommandId cid);
extern List *columnar_load_stripes(int64 storage_id, Snapshot snapshot, bool inline_only);
extern void columnar_delete_stripe(ItemPointer meta_tid);
extern bool columnar_lock_compaction(Oid relid, bool wait);
extern void columnar_delete_storage(Oid relid, int64 storage_id);
extern void columnar_delete_options(Oid relid);
extern int	columnar_inline_row_counts(int64 storage_id, int64 **counts);
extern ColumnarStripe *columnar_parse_stripe(int64 first_row, int64 row_count,
											 int64 first_block, int64 data_size,
											 bytea *directory, bytea *inline_data);

/* ---- columnar_encode.c ---- */

extern Datum columnar_int_to_datum(int64 v, int16 typlen);
extern int64 columnar_datum_to_int(Datum d, int16 typlen);
extern int	columnar_encode_ints(const int64 *values, int n, StringInfo out, bool allow_delta);
extern void columnar_decode_ints(int encoding, const char *data, int len, int64 *values, int n);
extern void columnar_compress(const char *raw, int rawlen, int level, StringInfo out, int32 *stored_rawsize);
extern void columnar_decompress(const char *stored, int size, int rawsize, char *raw);

/* ---- columnar_write.c ---- */

extern void columnar_write_row(Relation rel, TupleTableSlot *slot, CommandId cid);
extern void columnar_flush_relation(Oid relid);
extern void columnar_discard_relation(Oid relid);
extern int64 columnar_compact(Relation rel, bool wait);
extern bool columnar_compaction_pending(Relation rel);
extern void columnar_write_init(void);
extern List *columnar_pending_stripes(Relation rel, CommandId curcid);
extern uint64 columnar_pending_generation;

/* ---- columnar_read.c ---- */

typedef struct ColumnarPredicate ColumnarPredicate;
typedef struct ColumnarReadState ColumnarReadState;

extern ColumnarReadState *columnar_read_begin(Relation rel, Snapshot snapshot,
											  Bitmapset *attrs, List *predicates);
extern bool columnar_read_next(ColumnarReadState *rs, Datum *values, bool *isnull, int64 *rownum);

/* A decoded chunk group; arrays are indexed [attno - 1][row]. */
typedef struct ColumnarGroup
{
	int			nrows;
	Datum	  **values;			/* as columnar_read_next returns them */
	bool	  **nulls;
	int64	  **dict_index;		/* dictionary chunks without NULLs: each row's entry; else NULL */
	char	 ***dicts;			/* the stripe's dictionaries (varlena values);
								 * valid until the next stripe's are loaded */
	int		   *dict_sizes;
	int			stripe;			/* the dictionaries change when this does */
	bool		all_pass;		/* min/max show that every row passes the predicates */
} ColumnarGroup;

extern bool columnar_read_next_group(ColumnarReadState *rs, ColumnarGroup *group);
extern ColumnarReadState *columnar_read_stripes(Relation rel, List *stripes, Bitmapset *attrs);
extern void columnar_read_rescan(ColumnarReadState *rs);
extern void columnar_read_set_desc(ColumnarReadState *rs, TupleDesc desc);
extern void columnar_read_keep_dicts(ColumnarReadState *rs);
extern void columnar_read_filter_rows(ColumnarReadState *rs);
extern bool columnar_read_value_is_dict(ColumnarReadState *rs, AttrNumber attno);
extern void columnar_read_end(ColumnarReadState *rs);
extern bool columnar_read_row(ColumnarReadState *rs, int64 rownum, Datum *values, bool *isnull);
extern int64 columnar_read_total_rows(ColumnarReadState *rs);
extern bool columnar_read_seek_ordinal(ColumnarReadState *rs, int64 ordinal,
									   Datum *values, bool *isnull, int64 *rownum);
extern void columnar_read_stats(ColumnarReadState *rs, int64 *groups_read,
								int64 *groups_skipped, int64 *blocks_read);
extern int	columnar_read_stored(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk,
								 StringInfo out);
extern int	columnar_read_chunk(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk,
								StringInfo raw);

/*
 * A chunk skipping predicate: column op value, op a btree operator of the
 * column's default operator family (its strategy), or column = ANY (array).
 */
#define COLUMNAR_STRATEGY_ANY (BTMaxStrategyNumber + 1)

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

extern ColumnarPredicate *columnar_predicate_make(AttrNumber attno, int strategy, Oid cmpproc,
												  Oid collation);
extern void columnar_predicate_set_value(ColumnarPredicate *p, Datum value, bool isnull);

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

/* ---- columnar_tableam.c ---- */

extern bool columnar_is_columnar(Relation rel);

/*
 * The parca_columnar table relid, locked in lockmode (the caller checked
 * the user's rights first); a missing relation, or one of another kind, is
 * an error.
 */
extern Relation columnar_open_table(Oid relid, LOCKMODE lockmode);

/* Called from _PG_init. */
extern void columnar_init(void);

#endif							/* PARCA_COLUMNAR_H */
