/*
 * columnar.h
 *		The parca_columnar table access method: what the rest of the
 *		extension may use.
 *
 * Everything else in src/columnar/ goes through the table access method
 * (tables are created USING parca_columnar, rows are written and read by
 * the executor).  A module that reads a columnar table faster than the
 * executor can (query/merge_scan.c) uses the scan API below: a chunk group
 * at a time, only the columns it asks for, chunk groups that min/max rule
 * out skipped.  The on-disk format, the write path and compaction are
 * internal to src/columnar/ (columnar_internal.h), which no file outside
 * includes.
 */
#ifndef PARCA_COLUMNAR_H
#define PARCA_COLUMNAR_H

#include "postgres.h"

#include "access/stratnum.h"
#include "datatype/timestamp.h"
#include "executor/tuptable.h"
#include "nodes/bitmapset.h"
#include "nodes/pg_list.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

/* Settings, hooks and callbacks; called from _PG_init. */
extern void columnar_init(void);

/*
 * Called with the rows of every insert into a parca_columnar table, before
 * they are stored, so that a module can note what the rows of its tables
 * tell (the series index, series_index.c, notes the hours of each series
 * that parca.samples' partitions get rows in).  NULL: nobody listens.
 */
typedef void (*columnar_insert_hook_type) (Relation rel, TupleTableSlot **slots, int nslots);
extern PGDLLIMPORT columnar_insert_hook_type columnar_insert_hook;

/* Whether rel is stored by parca_columnar. */
extern bool columnar_is_columnar(Relation rel);

/*
 * Which rows rel holds, as two numbers: its storage (a new one on
 * TRUNCATE) and its next row number (every row added takes a new one, as
 * does a deletion of all rows, and numbers are never given twice).  While no transaction that wrote rel is
 * in progress, equal numbers mean the same rows: what was derived from
 * them may be cached.
 */
extern void columnar_content_version(Relation rel, int64 *storage_id, int64 *next_row);

/*
 * Whether rows were written into table relid (a table with a log_by
 * column, or the partitioned table at the top of such tables) whose
 * log_by values meet [lo, hi], as the active snapshot sees
 * parca.columnar_write_log, or by this transaction: what its readers
 * (the rollups) have not taken in yet.
 */
extern bool columnar_written(Oid relid, TimestampTz lo, TimestampTz hi);

/* ---- chunk skipping predicates ---- */

/*
 * column op value: op a btree operator of the column type's default
 * operator family, given by its strategy (BTLessStrategyNumber ...
 * BTGreaterStrategyNumber), or column = ANY (array): COLUMNAR_STRATEGY_ANY.
 * cmpproc compares (column type, value or element type).
 */
typedef struct ColumnarPredicate ColumnarPredicate;

#define COLUMNAR_STRATEGY_ANY (BTMaxStrategyNumber + 1)

/* A predicate whose value is set later (columnar_predicate_set_value). */
extern ColumnarPredicate *columnar_predicate_make(AttrNumber attno, int strategy, Oid cmpproc,
												  Oid collation);
extern void columnar_predicate_set_value(ColumnarPredicate *p, Datum value, bool isnull);

/* ---- scans ---- */

typedef struct ColumnarReadState ColumnarReadState;

/*
 * Start reading rel as snapshot sees it: its stripes, and for the
 * writing backend its buffered rows of earlier commands.  attrs: the
 * attribute numbers to decode (others read as NULL); predicates: chunk
 * groups they rule out are skipped (rows are not filtered by them).
 */
extern ColumnarReadState *columnar_read_begin(Relation rel, Snapshot snapshot,
											  Bitmapset *attrs, List *predicates);

/* The next row and its row number; false at the end. */
extern bool columnar_read_next(ColumnarReadState *rs, Datum *values, bool *isnull, int64 *rownum);

/* A decoded chunk group; arrays are indexed [attno - 1][row]. */
typedef struct ColumnarGroup
{
	int			nrows;
	Datum	  **values;			/* as columnar_read_next returns them; NULL for
								 * a column read only to filter that the group
								 * passes whole (columnar_read_filter_only) */
	bool	  **nulls;
	int64	  **dict_index;		/* dictionary chunks without NULLs: each row's entry; else NULL */
	char	 ***dicts;			/* the stripe's dictionaries (varlena values);
								 * valid until the next stripe's are loaded */
	int		   *dict_sizes;
	const uint64 **dict_ids;	/* columns read by ids (columnar_read_by_ids):
								 * the ids of the stripe's dictionary's
								 * entries, NULL if not read; else NULL */
	const int64 **dict_entries; /* columns read by ids of a stripe whose
								 * dictionary is the table's: its entries'
								 * numbers there (dense from 0, one table's
								 * own), whose ids are read only when asked
								 * (columnar_read_dictionary_ids); else
								 * NULL */
	int			stripe;			/* the dictionaries change when this does */
	bool		all_pass;		/* min/max show that every row passes the predicates */
	const Datum *constants;		/* [natts] of a column read with
								 * columnar_read_constant_ok whose values are
								 * NULL: its rows' one value; else NULL */
} ColumnarGroup;

/*
 * The next chunk group that the predicates do not rule out, decoded, for
 * callers that loop over its columns themselves.  Not to be mixed with
 * columnar_read_next().  false at the end.
 */
extern bool columnar_read_next_group(ColumnarReadState *rs, ColumnarGroup *group);
extern void columnar_read_end(ColumnarReadState *rs);

/*
 * Read column attno by ids: a chunk group whose dictionary has ids gives
 * its entries' ids and indexes, not its values, and the dictionary is
 * decoded only when asked by columnar_read_dictionary(stripe: a group's
 * ColumnarGroup.stripe).  Of a stripe whose dictionary is the table's
 * (a stacktrace column), the group gives its entries' numbers in the
 * table's instead, and their ids are read when asked by
 * columnar_read_dictionary_ids.  An id is parca_hash64 of the entry's
 * bytes (for a stacktrace, of its location ids).  Before the first group
 * is read.
 */
extern void columnar_read_by_ids(ColumnarReadState *rs, AttrNumber attno);
extern char **columnar_read_dictionary(ColumnarReadState *rs, AttrNumber attno, int stripe,
									   int *nentries);
extern const uint64 *columnar_read_dictionary_ids(ColumnarReadState *rs, AttrNumber attno,
												  int stripe);

/*
 * Read column attno only to test the predicates on it: a chunk group
 * whose min/max show that every row passes them is not decoded for it
 * (ColumnarGroup.values and nulls of the column are NULL).  For
 * columnar_read_next_group(); before the first group is read.
 */
extern void columnar_read_filter_only(ColumnarReadState *rs, AttrNumber attno);

/*
 * Column attno (of an integer type, or one ordered as its integers:
 * bool, oid, date, timestamp, timestamptz) of a chunk group whose min and
 * max show that its rows all hold one value, none NULL, is not decoded:
 * ColumnarGroup.values and nulls of the column are NULL, and the value is
 * in ColumnarGroup.constants.  For columnar_read_next_group(); before the
 * first group is read.
 */
extern void columnar_read_constant_ok(ColumnarReadState *rs, AttrNumber attno);

/*
 * Of a chunk group that the predicates (on column by, when not 0) do not
 * pass whole, read the other columns only for the rows from the first to
 * the last that pass them; rows outside read as NULL in those columns.
 * by 0: for callers of columnar_read_next() that drop the rows a
 * predicate fails; by a column: for callers of columnar_read_next_group()
 * that count only rows that pass column by's predicates and whose other
 * columns are not NULL (only integer columns bit-packed in a way that
 * can be read in part are left out there).  Before the first group is
 * read.
 */
extern void columnar_read_row_window(ColumnarReadState *rs, AttrNumber by);

/*
 * Read only a share of the rows, for processes that split a table between
 * them: those read with the same snapshot see the same stripes of the
 * catalog in the same order, whose chunk groups go in shares of at least
 * share_rows rows (never across stripes), and each process reads the
 * shares for which claim(arg) returns true (asked once per share, in that
 * order); this backend's own buffered rows, which only it sees, when
 * read_pending.  Before the first group is read.
 */
typedef bool (*ColumnarStripeClaim) (void *arg);
extern void columnar_read_share_stripes(ColumnarReadState *rs, ColumnarStripeClaim claim,
										void *arg, bool read_pending, int64 share_rows);

/*
 * How many shares of share_rows rows a read of rel with snapshot meets: a
 * process that knows every one of them is another's need not read the
 * table at all.
 */
extern int64 columnar_share_count(Relation rel, Snapshot snapshot, int64 share_rows);

#endif							/* PARCA_COLUMNAR_H */
