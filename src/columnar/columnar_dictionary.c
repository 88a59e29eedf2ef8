/*
 * columnar_dictionary.c
 *		A table's stack dictionary (format version 4): the stacks of its
 *		stripes stored once per table, in segments, which stripes refer to
 *		by entry number.
 *
 * A column of stacks (of type stacktrace: location ids, whole 8-byte
 * words) keeps in each stripe, instead of its dictionary's values,
 * their entry numbers in the table's dictionary (ENC_ENTRIES).  Without
 * it, each profile pushed alone stores every one of its stacks again.
 *
 * The dictionary is a set of segments, rows of parca.columnar_dictionary
 * laid out as stripes: a directory of one column with a dictionary
 * (ENC_WORDS or ENC_PLAIN) of the segment's entries and their ids
 * (ENC_IDS), no chunk groups, and its ranges of entry numbers (one as
 * written).  Entry numbers come from the metapage
 * (columnar_reserve_entries), so a number means the same stack in every
 * stripe.  A segment is never changed: VACUUM merges small ones into one
 * of the same entries under the same numbers (columnar_dictionary_merge),
 * and they go when their storage does.
 *
 * Writers: each backend keeps, per table, the ids of the entries it knows
 * (those of the segments committed when it last looked, and its own), and
 * writes the stacks it does not know as a new segment, in the writing
 * transaction, before the stripe.  Two transactions may add the same
 * stack at once, under two numbers: readers take entries by number, and
 * what merges by stack goes by id, as it does across stripes.  An id is
 * a fixed hash that writers could make collide, so an entry is used for a
 * value only if a keyed hash of the bytes matches too.
 *
 * Visibility needs no rule of its own: a stripe is visible to a snapshot
 * that sees its transaction committed, and that transaction either wrote
 * the segments the stripe refers to or saw them committed, so they are
 * visible too.  (A segment is recorded as of the transaction's first
 * command, so that its own commands see it whatever order its stripes are
 * written in.)  A transaction that rolls back leaves unused numbers, and
 * pages that VACUUM takes back as a rolled-back stripe's; the backend
 * forgets what it learnt in it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "columnar/columnar_internal.h"
#include "ids/ids.h"
#include "keyed_hash/keyed_hash.h"

/*
 * Entries a backend keeps ids of, over all tables: beyond, it forgets
 * them all; a table with more than this many keeps stripe dictionaries.
 */
#define MAX_KNOWN_ENTRIES	(4 * 1024 * 1024)

/* ---- segments ---- */

/*
 * A segment's directory, checked: one column, a dictionary and its ids,
 * ranges of entry numbers in order (one, or several once merged) that add
 * up to its entries.
 */
static void
check_segment(ColumnarStripe *seg)
{
	bool		bad = seg->natts != 1 || seg->ngroups != 0 || seg->nranges < 1 ||
		seg->dict_ids == NULL || seg->ranges[0].first != seg->first_row ||
		seg->row_count < 1 || seg->row_count > PG_INT32_MAX ||
		!seg->columns[0].has_dict || seg->columns[0].ndict != seg->row_count ||
		seg->dict_ids[0].encoding != ENC_IDS || seg->dict_ids[0].rawsize != 0 ||
		(uint64) seg->dict_ids[0].size != (uint64) seg->row_count * sizeof(uint64) ||
		(seg->columns[0].dict.encoding != ENC_WORDS &&
		 seg->columns[0].dict.encoding != ENC_PLAIN);
	int64		entries = 0;
	int64		end = 0;

	for (int r = 0; !bad && r < seg->nranges; r++)
	{
		ColumnarRowRange *range = &seg->ranges[r];

		bad = range->first < end || range->count < 1 ||
			range->first + range->count > PG_INT32_MAX;
		end = range->first + range->count;
		entries += range->count;
	}
	if (bad || entries != seg->row_count)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar stack dictionary segment at entry " INT64_FORMAT " is damaged",
						seg->first_row)));
}

/* One past the last entry number of a checked segment. */
static inline int64
segment_end(const ColumnarStripe *seg)
{
	return seg->ranges[seg->nranges - 1].first + seg->ranges[seg->nranges - 1].count;
}

/*
 * What segments are read with: the chunk's bytes (as stored and
 * decompressed) in buffers that the backend keeps from one scan to the
 * next (columnar_scratch.c), given back when cxt is reset or deleted.
 */
typedef struct SegmentReader
{
	MemoryContext cxt;
	ColumnarScratch *scratch;
	StringInfoData raw;
	StringInfoData stored;
} SegmentReader;

static SegmentReader *
segment_reader(MemoryContext cxt)
{
	SegmentReader *r = MemoryContextAllocZero(cxt, sizeof(SegmentReader));

	r->cxt = cxt;
	r->scratch = columnar_scratch_create(cxt);
	return r;
}

/*
 * The values of a segment, decoded into space, a kept buffer (if space is
 * given and they fill one: 20,430 stacks take 3.7 MB, which a fresh
 * allocation faults in again at every query), else into memory of r->cxt.
 */
static char **
segment_values(SegmentReader *r, Relation rel, ColumnarStripe *seg, StringInfo space,
			   int64 *blocks_read)
{
	ColumnarChunk *ch = &seg->columns[0].dict;
	Size		size;
	char	   *dst;

	*blocks_read += columnar_chunk_read_scratch(r->scratch, rel, seg, ch, &r->raw, &r->stored,
												 NULL);
	size = columnar_chunk_dictionary_size(ch, r->raw.data, r->raw.len, (int) seg->row_count, -1);
	dst = columnar_scratch_alloc(r->scratch, size >= COLUMNAR_SCRATCH_MIN_BYTES ? space : NULL,
								 size, r->cxt);
	return columnar_chunk_decode_dictionary(ch, r->raw.data, r->raw.len, (int) seg->row_count,
											-1, dst);
}

/* The ids of a segment's entries, into memory of cxt. */
static const uint64 *
segment_ids(Relation rel, ColumnarStripe *seg, MemoryContext cxt, int64 *blocks_read)
{
	StringInfoData ids;
	MemoryContext old = MemoryContextSwitchTo(cxt);

	initStringInfo(&ids);
	MemoryContextSwitchTo(old);
	*blocks_read += columnar_chunk_read_stored(rel, seg, &seg->dict_ids[0], &ids, NULL);
	return (const uint64 *) ids.data;
}

/*
 * Write the n values dict[i] (dict_len[i] bytes each, a varlena's data)
 * as a segment of rel's dictionary, numbered by the ranges, at zstd
 * level, as of command cid.
 */
static void
write_segment(Relation rel, int64 storage_id, ColumnarRowRange *ranges, int nranges,
			  char *const *dict, const uint32 *dict_len, int n, int level, CommandId cid)
{
	ColumnarStripe seg;
	ColumnarColumn column;
	ColumnarChunk ids;
	ColumnarChunkWriter w;
	StringInfoData data;
	bytea	   *directory;
	bytea	   *inline_data = NULL;

	memset(&seg, 0, sizeof(seg));
	memset(&column, 0, sizeof(column));
	seg.first_row = ranges[0].first;
	seg.row_count = n;
	seg.natts = 1;
	seg.group_rows = 1;
	seg.nranges = nranges;
	seg.ranges = ranges;
	seg.columns = &column;
	seg.dict_ids = &ids;
	column.kind = COLUMNAR_KIND_BYTES;
	column.has_dict = true;
	column.ndict = n;
	initStringInfo(&data);
	columnar_chunk_writer_begin(&w, &data, level, 1);
	columnar_chunk_encode_dictionary(&w, dict, dict_len, n, -1, &column.dict);
	columnar_chunk_encode_ids(&w, dict, dict_len, n, &ids);
	columnar_chunk_writer_end(&w);
	directory = columnar_directory_build(&seg);
	seg.data_size = data.len;
	seg.first_block = -1;
	if (data.len <= columnar_inline_stripe_bytes)
	{
		inline_data = palloc(VARHDRSZ + data.len);
		SET_VARSIZE(inline_data, VARHDRSZ + data.len);
		memcpy(VARDATA(inline_data), data.data, data.len);
		columnar_insert_segment(storage_id, &seg, directory, inline_data, cid);
		pfree(inline_data);
	}
	else
	{
		/* VACUUM must not take these pages for free until the row is there */
		columnar_lock_page_writes(RelationGetRelid(rel), RowExclusiveLock);
		seg.first_block = columnar_write_pages(rel, data.data, data.len);
		columnar_insert_segment(storage_id, &seg, directory, NULL, cid);
		columnar_unlock_page_writes(RelationGetRelid(rel), RowExclusiveLock);
	}
	pfree(directory);
	pfree(data.data);
}

/* ---- what a backend knows of each table's dictionary (writers) ---- */

typedef struct KnownEntry
{
	uint64		id;				/* key: parca_hash64 of the value */
	uint32		check;			/* keyed_hash_bytes of the value */
	int32		entry;
	char		status;
} KnownEntry;

/* keyed: ids are hashes of what ingesting roles send (keyed_hash.h) */
#define SH_PREFIX known
#define SH_ELEMENT_TYPE KnownEntry
#define SH_KEY_TYPE uint64
#define SH_KEY id
#define SH_HASH_KEY(tb, k) keyed_hash_u64(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct KnownStacks
{
	int64		storage_id;		/* key */
	known_hash *entries;
	int64		next_entry;		/* segments from this number on: not read */
	bool		full;			/* over MAX_KNOWN_ENTRIES: not used */
} KnownStacks;

static MemoryContext known_cxt = NULL;
static HTAB *known_tables = NULL;	/* KnownStacks by storage id */
static long known_count = 0;	/* entries of all tables */
static bool known_has_own = false;	/* segments of this transaction among them */

static void
forget_known(void)
{
	if (known_cxt)
		MemoryContextReset(known_cxt);
	known_tables = NULL;
	known_count = 0;
	known_has_own = false;
}

/* Segments may roll back with the transaction that wrote them. */
static void
dictionary_xact_callback(XactEvent event, void *arg)
{
	if (!known_has_own)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		known_has_own = false;
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
			 event == XACT_EVENT_PREPARE)
		forget_known();
}

static void
dictionary_subxact_callback(SubXactEvent event, SubTransactionId sub, SubTransactionId parent,
							void *arg)
{
	if (known_has_own && event == SUBXACT_EVENT_ABORT_SUB)
		forget_known();
}

void
columnar_dictionary_init(void)
{
	RegisterXactCallback(dictionary_xact_callback, NULL);
	RegisterSubXactCallback(dictionary_subxact_callback, NULL);
}

/* Know entries first .. first + n - 1 with these values (and ids). */
static void
learn(KnownStacks *ks, int64 first, char *const *values, const uint32 *lens, int n)
{
	for (int i = 0; i < n; i++)
	{
		bool		found;
		KnownEntry *e = known_insert(ks->entries, parca_hash64(values[i], lens[i]), &found);

		/* a second entry of one id (two writers at once) is not needed */
		if (!found)
		{
			e->check = keyed_hash_bytes(values[i], lens[i]);
			e->entry = (int32) (first + i);
			known_count++;
		}
	}
	if (ks->entries->members > MAX_KNOWN_ENTRIES)
		ks->full = true;
}

/* Read the segments of ks's table from ks->next_entry on. */
static void
read_new_segments(Relation rel, KnownStacks *ks)
{
	List	   *segments = columnar_load_segments(ks->storage_id, ks->next_entry,
												  GetLatestSnapshot());
	ListCell   *lc;
	int64		blocks = 0;

	foreach(lc, segments)
	{
		ColumnarStripe *seg = lfirst(lc);
		MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "segment",
												  ALLOCSET_DEFAULT_SIZES);
		char	  **values;
		uint32	   *lens;

		check_segment(seg);
		values = segment_values(segment_reader(cxt), rel, seg, NULL, &blocks);
		lens = MemoryContextAlloc(cxt, sizeof(uint32) * seg->row_count);
		for (int i = 0; i < seg->row_count; i++)
		{
			lens[i] = VARSIZE_ANY_EXHDR(values[i]);
			values[i] = VARDATA_ANY(values[i]);
		}
		for (int r = 0, at = 0; r < seg->nranges; at += seg->ranges[r++].count)
			learn(ks, seg->ranges[r].first, values + at, lens + at, (int) seg->ranges[r].count);
		ks->next_entry = Max(ks->next_entry, segment_end(seg));
		MemoryContextDelete(cxt);
		CHECK_FOR_INTERRUPTS();
	}
	list_free_deep(segments);
}

static KnownStacks *
known_stacks(int64 storage_id)
{
	KnownStacks *ks;
	bool		found;

	if (known_tables == NULL)
	{
		HASHCTL		ctl;

		if (known_cxt == NULL)
			known_cxt = AllocSetContextCreate(TopMemoryContext, "parca known stacks",
											  ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(KnownStacks);
		ctl.hcxt = known_cxt;
		known_tables = hash_create("parca known stacks by storage", 16, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	ks = hash_search(known_tables, &storage_id, HASH_ENTER, &found);
	if (!found)
	{
		ks->entries = known_create(known_cxt, 1024, NULL);
		ks->next_entry = 0;
		ks->full = false;
	}
	return ks;
}

/*
 * Whether a column of type typid keeps its values in the table's stack
 * dictionary: of the extension's stacktrace type, once the extension has
 * parca.columnar_dictionary (0.2).
 */
bool
columnar_dictionary_type(Oid typid)
{
	HeapTuple	tup;
	bool		stacks = false;
	Oid			ext = get_extension_oid("parca", true);

	if (!OidIsValid(ext) || !columnar_dictionary_installed())
		return false;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	if (HeapTupleIsValid(tup))
	{
		Form_pg_type t = (Form_pg_type) GETSTRUCT(tup);

		stacks = t->typlen == -1 && strcmp(NameStr(t->typname), "stacktrace") == 0 &&
			getExtensionOfObject(TypeRelationId, typid) == ext;
		ReleaseSysCache(tup);
	}
	return stacks;
}

/* Whether the ndict values can go to a dictionary: whole 8-byte words. */
bool
columnar_dictionary_fits(const uint32 *dict_len, int ndict)
{
	if (ndict < 1)
		return false;
	for (int i = 0; i < ndict; i++)
		if (dict_len[i] % sizeof(uint64) != 0)
			return false;
	return true;
}

/*
 * The entry numbers in rel's stack dictionary (storage storage_id) of the
 * ndict values dict[i] (dict_len[i] bytes each, a varlena's data) into
 * entries; those it lacks, as far as this backend knows, are written as a
 * new segment at zstd level, in this transaction.  false (entries not
 * set): the table keeps stripe dictionaries, its dictionary being over
 * the limit of what a backend keeps.
 */
bool
columnar_dictionary_entries(Relation rel, int64 storage_id, char *const *dict,
							const uint32 *dict_len, int ndict, int level, int64 *entries)
{
	KnownStacks *ks = known_stacks(storage_id);
	char	  **missing;
	uint32	   *missing_len;
	int			nmissing = 0;
	int64		first;

	if (ks->full)
		return false;
	read_new_segments(rel, ks);
	if (ks->full)
		return false;
	missing = palloc(sizeof(char *) * ndict);
	missing_len = palloc(sizeof(uint32) * ndict);
	for (int i = 0; i < ndict; i++)
	{
		KnownEntry *e = known_lookup(ks->entries, parca_hash64(dict[i], dict_len[i]));

		if (e && e->check == keyed_hash_bytes(dict[i], dict_len[i]))
			entries[i] = e->entry;
		else
		{
			entries[i] = -1 - nmissing;
			missing[nmissing] = dict[i];
			missing_len[nmissing++] = dict_len[i];
		}
	}
	if (nmissing > 0)
	{
		ColumnarRowRange range;

		first = columnar_reserve_entries(rel, nmissing);
		range.first = first;
		range.count = nmissing;
		/* as of the first command: see the top of the file */
		write_segment(rel, storage_id, &range, 1, missing, missing_len, nmissing, level,
					  FirstCommandId);
		for (int i = 0; i < ndict; i++)
			if (entries[i] < 0)
				entries[i] = first - 1 - entries[i];
		known_has_own = true;
		learn(ks, first, missing, missing_len, nmissing);
		/* those between (others' segments) are read next time */
		if (ks->next_entry == first)
			ks->next_entry = first + nmissing;
		if (known_count > MAX_KNOWN_ENTRIES)
		{
			/* others' tables are forgotten; this one is reread next time */
			forget_known();
			known_has_own = true;
		}
	}
	pfree(missing);
	pfree(missing_len);
	return true;
}

/* ---- merging segments ---- */

/*
 * Segments are merged by size ratio, as stripes are (columnar_compaction.c):
 * from the newest back, a run takes the next older segment while that has
 * no more entries than the run so far, and each run of two or more
 * becomes one segment of the same entries under the same numbers.  An
 * entry is rewritten only into a segment at least twice the size of the
 * one it was in; a table into which each profile brought a few new stacks
 * keeps a handful of segments, not one per profile.  Segments of
 * SEGMENT_FINAL_ENTRIES or more are left alone.
 */
#define SEGMENT_FINAL_ENTRIES	(256 * 1024)

typedef struct MergedEntry
{
	int64		entry;
	char	   *value;			/* a varlena's data */
	uint32		len;
} MergedEntry;

static int
merged_entry_cmp(const void *a, const void *b)
{
	const MergedEntry *x = a;
	const MergedEntry *y = b;

	return x->entry < y->entry ? -1 : (x->entry > y->entry ? 1 : 0);
}

/* Replace the segments of run by one, at zstd level. */
static void
merge_run(Relation rel, int64 storage_id, List *run, int level)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "segment merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	SegmentReader *reader = segment_reader(cxt);
	int64		n = 0;
	int64		blocks = 0;
	int			nranges = 0;
	MergedEntry *all;
	ColumnarRowRange *ranges;
	char	  **values;
	uint32	   *lens;
	ListCell   *lc;

	foreach(lc, run)
		n += ((ColumnarStripe *) lfirst(lc))->row_count;
	all = palloc(sizeof(MergedEntry) * n);
	n = 0;
	foreach(lc, run)
	{
		ColumnarStripe *seg = lfirst(lc);
		char	  **segment = segment_values(reader, rel, seg, NULL, &blocks);

		for (int r = 0, at = 0; r < seg->nranges; at += seg->ranges[r++].count)
			for (int k = 0; k < seg->ranges[r].count; k++)
			{
				all[n].entry = seg->ranges[r].first + k;
				all[n].value = VARDATA_ANY(segment[at + k]);
				all[n++].len = VARSIZE_ANY_EXHDR(segment[at + k]);
			}
		CHECK_FOR_INTERRUPTS();
	}
	qsort(all, n, sizeof(MergedEntry), merged_entry_cmp);
	ranges = palloc(sizeof(ColumnarRowRange) * n);
	values = palloc(sizeof(char *) * n);
	lens = palloc(sizeof(uint32) * n);
	for (int64 i = 0; i < n; i++)
	{
		if (i > 0 && all[i].entry == all[i - 1].entry)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("columnar stack dictionary segments of \"%s\" overlap at entry " INT64_FORMAT,
							RelationGetRelationName(rel), all[i].entry)));
		if (i > 0 && all[i].entry == all[i - 1].entry + 1)
			ranges[nranges - 1].count++;
		else
		{
			ranges[nranges].first = all[i].entry;
			ranges[nranges++].count = 1;
		}
		values[i] = all[i].value;
		lens[i] = all[i].len;
	}
	/* the merged segment replaces them at the same command: never both */
	foreach(lc, run)
		columnar_delete_segment(&((ColumnarStripe *) lfirst(lc))->meta_tid);
	write_segment(rel, storage_id, ranges, nranges, values, lens, (int) n, level,
				  GetCurrentCommandId(true));
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/* The runs (lists of segments by first entry) of segments to merge. */
static List *
plan_segment_runs(List *segments)
{
	List	   *runs = NIL;
	List	   *run = NIL;
	int64		run_entries = 0;

	/* newest first; NULL: past the oldest, where the last run ends */
	for (int i = list_length(segments) - 1; i >= -1; i--)
	{
		ColumnarStripe *seg = i >= 0 ? list_nth(segments, i) : NULL;
		bool		final;

		if (seg)
			check_segment(seg);
		final = seg == NULL || seg->row_count >= SEGMENT_FINAL_ENTRIES;
		if (run != NIL && (final || seg->row_count > run_entries ||
						   run_entries + seg->row_count > SEGMENT_FINAL_ENTRIES))
		{
			if (list_length(run) >= 2)
				runs = lappend(runs, run);
			run = NIL;
			run_entries = 0;
		}
		if (!final)
		{
			run = lcons(seg, run);
			run_entries += seg->row_count;
		}
	}
	return runs;
}

/* Whether rel's stack dictionary has segments to merge (VACUUM asks). */
bool
columnar_dictionary_merge_pending(Relation rel)
{
	List	   *segments;
	bool		pending;

	if (!columnar_dictionary_installed())
		return false;
	segments = columnar_load_segments(columnar_read_metapage(rel).storage_id, 0,
									  GetLatestSnapshot());
	pending = plan_segment_runs(segments) != NIL;
	list_free_deep(segments);
	return pending;
}

/*
 * Merge the segments of rel's stack dictionary (see SEGMENT_FINAL_ENTRIES)
 * at zstd level; the caller holds the compaction lock.  Returns how many
 * segments were merged.
 */
int
columnar_dictionary_merge(Relation rel, int level)
{
	int64		storage_id = columnar_read_metapage(rel).storage_id;
	Snapshot	snapshot;
	ListCell   *lc;
	int			merged = 0;

	if (!columnar_dictionary_installed())
		return 0;
	/* what every compactor before this one did (columnar_lock_compaction) */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	foreach(lc, plan_segment_runs(columnar_load_segments(storage_id, 0, snapshot)))
	{
		merge_run(rel, storage_id, lfirst(lc), level);
		merged += list_length(lfirst(lc));
	}
	UnregisterSnapshot(snapshot);
	return merged;
}

/* ---- a reader's view of a table's dictionary ---- */

typedef struct ViewSegment
{
	ColumnarStripe *seg;
	const uint64 *ids;			/* NULL: not read yet */
	char	  **values;			/* NULL: not decoded yet */
	StringInfoData values_space;	/* a kept buffer they may be in */
} ViewSegment;

/* A range of entry numbers of a segment: where its entries are there. */
typedef struct ViewRange
{
	int64		first;
	int64		count;
	int			segment;		/* in segments[] */
	int			index;			/* of its first entry in the segment */
} ViewRange;

struct ColumnarDictionaryView
{
	Relation	rel;
	MemoryContext cxt;
	SegmentReader *reader;
	int			nsegments;
	ViewSegment *segments;
	int			nranges;
	ViewRange  *ranges;			/* of all segments, by first entry */
	int			last;			/* the range found last */
	int64		blocks_read;
};

static int
view_range_cmp(const void *a, const void *b)
{
	const ViewRange *x = a;
	const ViewRange *y = b;

	return x->first < y->first ? -1 : (x->first > y->first ? 1 : 0);
}

/*
 * rel's stack dictionary as snapshot sees it (an MVCC snapshot: with
 * another, the latest), in memory of a new context under the current one.
 */
ColumnarDictionaryView *
columnar_dictionary_view(Relation rel, Snapshot snapshot)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "stack dictionary",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColumnarDictionaryView *v = palloc0(sizeof(ColumnarDictionaryView));
	List	   *segments = NIL;
	ListCell   *lc;
	int			i = 0;

	v->rel = rel;
	v->cxt = cxt;
	v->reader = segment_reader(cxt);
	if (columnar_dictionary_installed())
		segments = columnar_load_segments(columnar_read_metapage(rel).storage_id, 0,
										  snapshot && IsMVCCSnapshot(snapshot) ? snapshot :
										  GetLatestSnapshot());
	v->nsegments = list_length(segments);
	v->segments = palloc0(sizeof(ViewSegment) * Max(v->nsegments, 1));
	foreach(lc, segments)
	{
		ColumnarStripe *seg = lfirst(lc);

		check_segment(seg);
		v->nranges += seg->nranges;
		v->segments[i++].seg = seg;
	}
	v->ranges = palloc(sizeof(ViewRange) * Max(v->nranges, 1));
	v->nranges = 0;
	for (int g = 0; g < v->nsegments; g++)
	{
		ColumnarStripe *seg = v->segments[g].seg;

		for (int r = 0, at = 0; r < seg->nranges; at += seg->ranges[r++].count)
		{
			ViewRange  *range = &v->ranges[v->nranges++];

			range->first = seg->ranges[r].first;
			range->count = seg->ranges[r].count;
			range->segment = g;
			range->index = at;
		}
	}
	qsort(v->ranges, v->nranges, sizeof(ViewRange), view_range_cmp);
	for (int r = 1; r < v->nranges; r++)
		if (v->ranges[r].first < v->ranges[r - 1].first + v->ranges[r - 1].count)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("columnar stack dictionary segments of \"%s\" overlap at entry " INT64_FORMAT,
							RelationGetRelationName(rel), v->ranges[r].first)));
	MemoryContextSwitchTo(old);
	return v;
}

void
columnar_dictionary_view_end(ColumnarDictionaryView *v)
{
	MemoryContextDelete(v->cxt);
}

int64
columnar_dictionary_blocks_read(const ColumnarDictionaryView *v)
{
	return v->blocks_read;
}

int
columnar_dictionary_segments(const ColumnarDictionaryView *v)
{
	return v->nsegments;
}

/* The segment that holds entry, and its index there, or an error. */
static ViewSegment *
find_entry(ColumnarDictionaryView *v, int64 entry, int *index)
{
	int			lo = 0;
	int			hi = v->nranges - 1;
	ViewRange  *range;

	/* a stripe's entries are mostly runs from one range */
	if (v->last < v->nranges)
	{
		range = &v->ranges[v->last];
		if (entry >= range->first && entry - range->first < range->count)
		{
			*index = range->index + (int) (entry - range->first);
			return &v->segments[range->segment];
		}
	}
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		range = &v->ranges[mid];
		if (entry < range->first)
			hi = mid - 1;
		else if (entry - range->first >= range->count)
			lo = mid + 1;
		else
		{
			v->last = mid;
			*index = range->index + (int) (entry - range->first);
			return &v->segments[range->segment];
		}
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar table \"%s\" is damaged: a stripe refers to entry " INT64_FORMAT " of its stack dictionary, which it does not have",
					RelationGetRelationName(v->rel), entry)));
	return NULL;
}

/*
 * The ids of the n entries into ids.  A stripe's entries are mostly runs
 * of consecutive numbers in one range (its new stacks, numbered in its
 * order): such a run is copied at once.
 */
void
columnar_dictionary_ids(ColumnarDictionaryView *v, const int64 *entries, int n, uint64 *ids)
{
	int			i = 0;

	while (i < n)
	{
		int			index;
		ViewSegment *vs = find_entry(v, entries[i], &index);
		/* find_entry left the range of entries[i] in v->last */
		const ViewRange *range = &v->ranges[v->last];
		int64		left = range->count - (entries[i] - range->first);
		int			run = 1;

		if (vs->ids == NULL)
			vs->ids = segment_ids(v->rel, vs->seg, v->cxt, &v->blocks_read);
		while (i + run < n && run < left &&
			   (uint64) entries[i + run] == (uint64) entries[i] + (uint64) run)
			run++;
		memcpy(ids + i, vs->ids + index, sizeof(uint64) * run);
		i += run;
	}
}

/*
 * The values (varlena datums, valid while the view is) of the n entries
 * into values.
 */
void
columnar_dictionary_values(ColumnarDictionaryView *v, const int64 *entries, int n,
						   char **values)
{
	for (int i = 0; i < n; i++)
	{
		int			index;
		ViewSegment *vs = find_entry(v, entries[i], &index);

		if (vs->values == NULL)
		{
			vs->values = segment_values(v->reader, v->rel, vs->seg, &vs->values_space,
										&v->blocks_read);
			CHECK_FOR_INTERRUPTS();
		}
		values[i] = vs->values[index];
	}
}

static pg_noinline void
segment_damaged(ColumnarDictionaryView *v, ColumnarStripe *seg, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar table \"%s\" is damaged: %s", RelationGetRelationName(v->rel), what),
			 errdetail("In the stack dictionary segment that starts at entry " INT64_FORMAT ".",
					   seg->first_row)));
}

/*
 * parca_columnar_check() of the view's segments: entry numbers below
 * next_entry, data pages inside the relation's nblocks, every chunk's
 * checksum, every id its entry's.  Their page runs into *runs (palloc'd);
 * returns how many.
 */
int
columnar_dictionary_check(ColumnarDictionaryView *v, int64 next_entry, BlockNumber nblocks,
						  ColumnarBlockRun **runs)
{
	StringInfoData stored;
	int			nruns = 0;

	*runs = palloc(sizeof(ColumnarBlockRun) * Max(v->nsegments, 1));
	initStringInfo(&stored);
	for (int i = 0; i < v->nsegments; i++)
	{
		ColumnarStripe *seg = v->segments[i].seg;
		ColumnarChunk *chunks[2] = {&seg->columns[0].dict, &seg->dict_ids[0]};
		uint64	   *ids;

		if (segment_end(seg) > next_entry)
			segment_damaged(v, seg, "stack dictionary entries past the metapage's count");
		if (seg->first_block >= 0)
		{
			int64		npages = (seg->data_size + COLUMNAR_PAGE_PAYLOAD - 1) /
				COLUMNAR_PAGE_PAYLOAD;

			if (seg->first_block < 1 || seg->first_block + npages > nblocks)
				segment_damaged(v, seg, "data pages past the end of the relation");
			(*runs)[nruns].first = seg->first_block;
			(*runs)[nruns++].count = npages;
		}
		for (int c = 0; c < lengthof(chunks); c++)
		{
			columnar_chunk_read_stored(v->rel, seg, chunks[c], &stored, NULL);
			if (columnar_chunk_crc(stored.data, stored.len) != chunks[c]->crc)
				segment_damaged(v, seg, "chunk checksum mismatch");
		}
		ids = (uint64 *) stored.data;
		if (v->segments[i].values == NULL)
			v->segments[i].values = segment_values(v->reader, v->rel, seg,
												   &v->segments[i].values_space,
												   &v->blocks_read);
		for (int e = 0; e < seg->row_count; e++)
			if (ids[e] != columnar_chunk_entry_id(v->segments[i].values[e], -1))
				segment_damaged(v, seg, "a dictionary id is not its entry's");
		CHECK_FOR_INTERRUPTS();
	}
	pfree(stored.data);
	return nruns;
}
