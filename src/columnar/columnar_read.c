/*
 * columnar_read.c
 *		Reading stripes: the stripes a snapshot sees, chunk groups decoded
 *		into datums (chunk by chunk, columnar_chunk.c), scans (sequential,
 *		with chunk group skipping (columnar_predicate.c) and only the
 *		columns asked for), fetch by row number (indexes) and by ordinal
 *		(ANALYZE).
 *
 * A scan decodes one chunk group at a time, only for the columns it
 * needs; the values it returns point into that decoded group and stay
 * valid until the next group is decoded.  Dictionaries are decoded once
 * per stripe; of a column read by ids (columnar_read_by_ids), the ids of
 * its dictionary's entries are read instead, and the dictionary only when
 * asked (columnar_read_dictionary).  The chunks' bytes, the dictionaries
 * and the decoded groups are in buffers kept from one scan to the next
 * (columnar_scratch.c).
 */
#include "postgres.h"

#include "access/tupdesc_details.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "columnar/columnar_internal.h"

typedef struct RowMapEntry
{
	int64		first;			/* first row number of a range */
	int64		count;
	int			stripe;			/* index in rs->stripes */
	int64		index;			/* position of the range's first row in it */
} RowMapEntry;

struct ColumnarReadState
{
	Relation	rel;
	TupleDesc	desc;
	int			natts;
	Snapshot	snapshot;
	int			nstripes;
	ColumnarStripe **stripes;
	bool	   *needed;			/* [natts] */
	bool	   *filter_only;	/* [natts] (columnar_read_filter_only), NULL: none */
	bool	   *att_pass;		/* [natts] the current group's rows all pass
								 * the predicates on that column */
	bool	   *constant_ok;	/* [natts] (columnar_read_constant_ok), NULL:
								 * none */
	Datum	   *constants;		/* [natts] the current group's one value of
								 * such a column, when not decoded */
	List	   *predicates;
	MemoryContext cxt;
	ColumnarScratch *scratch;	/* the buffers below, given back with cxt */
	StringInfoData *dict_space; /* [natts] dictionaries of dict_stripe */
	MemoryContext dict_cxt;		/* dictionaries too big for a buffer */
	MemoryContext group_cxt;	/* the decoded group's plain values */
	/* columns read by ids (columnar_read_by_ids) */
	bool	   *by_ids;			/* [natts], NULL: none */
	int			ids_stripe;		/* the stripe of dict_ids */
	const uint64 **dict_ids;	/* [natts] its ids, NULL if not read */
	StringInfoData *ids_space;	/* [natts] where they are */
	const int64 **dict_entries; /* [natts] of a stripe whose dictionary is
								 * the table's: its entries' numbers there,
								 * NULL if not read */
	StringInfoData *by_ids_entries_space;	/* [natts] where they are */
	int			asked_stripe;	/* the dictionary that columnar_read_dictionary */
	int			asked_att;		/* decoded: its stripe and column */
	char	  **asked_dict;
	StringInfoData asked_space;
	MemoryContext asked_cxt;	/* one too big for a buffer */
	StringInfoData *group_space;	/* [natts] the decoded group's columns */
	ColumnarDictionaryView *table_dict; /* the table's stack dictionary, NULL:
										 * not read yet */
	bool		own_table_dict; /* read here (not given) */
	StringInfoData entries_space;	/* a stripe dictionary's entry numbers */
	/* position */
	int			cur_stripe;
	int			cur_group;		/* -1: before the first */
	int			group_nrows;
	int			group_row;		/* next row to return */
	int			range_idx;		/* row number cursor */
	int64		range_off;
	/* decoded data */
	int			dict_stripe;
	char	 ***dicts;			/* [natts], NULL if not loaded */
	int		   *dict_sizes;		/* [natts] entries of dicts[] */
	int			loaded_stripe;	/* stripe/group in vals, or -1 */
	int			loaded_group;
	bool		loaded_partial; /* of it, columns filter_only or constant_ok
								 * were not decoded */
	Datum	  **vals;			/* [natts][group rows] */
	bool	  **nulls;
	int64	  **dict_index;		/* [natts] dictionary chunks without NULLs: indexes */
	StringInfoData raw;			/* a chunk's bytes, decompressed */
	StringInfoData stored;		/* and as stored */
	/* fetch by row number */
	RowMapEntry *map;
	int			nmap;
	int64	   *cumulative;		/* [nstripes + 1] rows before stripe i */
	bool		keep_dicts;		/* dictionaries live until the end */
	bool		filter_rows;	/* return only rows the predicates pass */
	bool	   *window_ok;		/* [natts] (columnar_read_row_window), NULL:
								 * none: a column whose chunks can be read
								 * for some rows */
	AttrNumber	window_by;		/* the column whose predicates make the
								 * window, 0: all predicates */
	bool		group_all_pass; /* the current group passes as a whole */
	/* a share of the stripes (columnar_read_share_stripes) */
	int			ncommitted;		/* stripes[0 .. ncommitted - 1] are in the catalog */
	ColumnarStripeClaim claim;
	void	   *claim_arg;
	bool		read_pending;
	int64		share_rows;		/* rows of a share of a stripe, at least */
	bool		share_ours;		/* the current share is this read's */
	/* statistics */
	int64		groups_read;
	int64		groups_skipped;
	int64		blocks_read;
	int64		seen_first_block;	/* the stripe of pages_seen (0: none) */
	Bitmapset  *pages_seen;		/* its pages read (columnar_read_pages) */
};

static void
set_stripes(ColumnarReadState *rs, List *stripes)
{
	ListCell   *lc;
	int			i = 0;

	rs->nstripes = list_length(stripes);
	rs->stripes = palloc(sizeof(ColumnarStripe *) * Max(rs->nstripes, 1));
	rs->cumulative = palloc(sizeof(int64) * (rs->nstripes + 1));
	rs->cumulative[0] = 0;
	foreach(lc, stripes)
	{
		rs->stripes[i] = lfirst(lc);
		rs->cumulative[i + 1] = rs->cumulative[i] + rs->stripes[i]->row_count;
		i++;
	}
}

static ColumnarReadState *
read_state_create(Relation rel, Bitmapset *attrs)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "parca_columnar read",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ColumnarReadState *rs = palloc0(sizeof(ColumnarReadState));

	rs->rel = rel;
	rs->desc = RelationGetDescr(rel);
	rs->natts = rs->desc->natts;
	rs->cxt = cxt;
	rs->scratch = columnar_scratch_create(cxt);
	rs->dict_space = palloc0(sizeof(StringInfoData) * Max(rs->natts, 1));
	rs->group_space = palloc0(sizeof(StringInfoData) * Max(rs->natts, 1));
	rs->dict_cxt = AllocSetContextCreate(cxt, "dictionaries", ALLOCSET_DEFAULT_SIZES);
	rs->group_cxt = AllocSetContextCreate(cxt, "chunk group", ALLOCSET_DEFAULT_SIZES);
	rs->needed = palloc0(sizeof(bool) * Max(rs->natts, 1));
	for (int i = 0; i < rs->natts; i++)
		rs->needed[i] = bms_is_member(i + 1, attrs) &&
			!TupleDescAttr(rs->desc, i)->attisdropped;
	rs->dicts = palloc0(sizeof(char **) * Max(rs->natts, 1));
	rs->vals = palloc0(sizeof(Datum *) * Max(rs->natts, 1));
	rs->nulls = palloc0(sizeof(bool *) * Max(rs->natts, 1));
	rs->dict_index = palloc0(sizeof(int64 *) * Max(rs->natts, 1));
	rs->dict_sizes = palloc0(sizeof(int) * Max(rs->natts, 1));
	rs->dict_stripe = -1;
	rs->loaded_stripe = -1;
	rs->ids_stripe = -1;
	rs->asked_stripe = -1;
	MemoryContextSwitchTo(old);
	columnar_read_rescan(rs);
	return rs;
}

/*
 * Start reading rel as snapshot sees it: its stripes, and for the
 * writing backend its buffered rows of earlier commands.  attrs: the
 * attribute numbers to decode (others read as NULL).
 */
ColumnarReadState *
columnar_read_begin(Relation rel, Snapshot snapshot, Bitmapset *attrs, List *predicates)
{
	ColumnarReadState *rs = read_state_create(rel, attrs);
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);
	List	   *stripes;

	rs->snapshot = snapshot;
	rs->predicates = predicates;
	stripes = columnar_load_stripes(columnar_read_metapage(rel).storage_id, snapshot, false);
	rs->ncommitted = list_length(stripes);
	stripes = list_concat(stripes,
						  columnar_pending_stripes(rel, IsMVCCSnapshot(snapshot) ?
												   snapshot->curcid : InvalidCommandId));
	set_stripes(rs, stripes);
	MemoryContextSwitchTo(old);
	return rs;
}

/*
 * Read the given stripes of rel (compaction, integrity check), whose stack
 * dictionary is table_dict (a view the caller ends after the read).
 */
ColumnarReadState *
columnar_read_stripes(Relation rel, List *stripes, Bitmapset *attrs,
					  ColumnarDictionaryView *table_dict)
{
	ColumnarReadState *rs = read_state_create(rel, attrs);
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);

	rs->table_dict = table_dict;
	rs->ncommitted = list_length(stripes);
	set_stripes(rs, stripes);
	MemoryContextSwitchTo(old);
	return rs;
}

/*
 * Decode for desc (the caller's slot) rather than the relation's current
 * descriptor: a table rewrite reads the old rows with the old types and
 * defaults of added columns.
 */
void
columnar_read_set_desc(ColumnarReadState *rs, TupleDesc desc)
{
	if (desc == rs->desc || desc->natts != rs->natts)
		return;
	rs->desc = desc;
	rs->loaded_stripe = -1;
	rs->dict_stripe = -1;
	rs->ids_stripe = -1;
	rs->asked_stripe = -1;
}

void
columnar_read_rescan(ColumnarReadState *rs)
{
	rs->cur_stripe = 0;
	rs->cur_group = -1;
	rs->group_nrows = 0;
	rs->group_row = 0;
}

void
columnar_read_end(ColumnarReadState *rs)
{
	MemoryContextDelete(rs->cxt);
}

void
columnar_read_stats(ColumnarReadState *rs, int64 *groups_read,
					int64 *groups_skipped, int64 *blocks_read)
{
	*groups_read = rs->groups_read;
	*groups_skipped = rs->groups_skipped;
	*blocks_read = rs->blocks_read;
	if (rs->own_table_dict)
		*blocks_read += columnar_dictionary_blocks_read(rs->table_dict);
}

/*
 * Keep every stripe's dictionaries until the end of the scan, so that the
 * values returned from them stay valid (and equal values from one stripe
 * share one pointer).
 */
void
columnar_read_keep_dicts(ColumnarReadState *rs)
{
	rs->keep_dicts = true;
}

/*
 * Read a share of the stripes: the chunk groups of a stripe of the catalog
 * go in shares of share_rows rows or more (a stripe's first groups, its
 * next, ...), and a share is read only when claim(arg), asked once per
 * share in their order as the read reaches it, says so; this backend's
 * buffered rows only when read_pending (no other backend sees them).
 */
void
columnar_read_share_stripes(ColumnarReadState *rs, ColumnarStripeClaim claim, void *arg,
							bool read_pending, int64 share_rows)
{
	rs->claim = claim;
	rs->claim_arg = arg;
	rs->read_pending = read_pending;
	rs->share_rows = Max(share_rows, 1);
}

/* How many chunk groups of stripe s go in one share of share_rows rows. */
static int64
groups_per_share(const ColumnarStripe *s, int64 share_rows)
{
	return Max(share_rows / Max((int64) s->group_rows, 1), 1);
}

/*
 * How many shares of share_rows rows the stripes of the catalog make that
 * a read of rel with snapshot meets: how many times a read shared so asks
 * its claim.  Only the stripe list is read, not a read's state.
 */
int64
columnar_share_count(Relation rel, Snapshot snapshot, int64 share_rows)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "parca_columnar share count",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	List	   *stripes = columnar_load_stripes(columnar_read_metapage(rel).storage_id, snapshot,
												false);
	ListCell   *lc;
	int64		count = 0;

	share_rows = Max(share_rows, 1);
	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);
		int64		per_share = groups_per_share(s, share_rows);

		count += (s->ngroups + per_share - 1) / per_share;
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return count;
}

/* Whether the current group of stripe s is this read's to read. */
static bool
group_is_ours(ColumnarReadState *rs, ColumnarStripe *s)
{
	if (rs->claim == NULL)
		return true;
	if (rs->cur_stripe >= rs->ncommitted)
		return rs->read_pending;
	if (rs->cur_group % groups_per_share(s, rs->share_rows) == 0)
		rs->share_ours = rs->claim(rs->claim_arg);
	return rs->share_ours;
}

/*
 * Read column attno (of a pass-by-reference type) by ids: of a stripe
 * whose dictionary of it has ids (a word dictionary, format version 3), a
 * chunk group without NULLs in it gives its dictionary indexes
 * (ColumnarGroup.dict_index) and the ids of the dictionary's entries
 * (ColumnarGroup.dict_ids; of a stripe whose dictionary is the table's,
 * their numbers there, ColumnarGroup.dict_entries, and the ids when asked
 * by columnar_read_dictionary_ids()), and neither its values nor the
 * dictionary (ColumnarGroup.values and dicts of the column are not set):
 * columnar_read_dictionary() decodes the dictionary when the caller meets
 * an id it does not know.  Other groups and stripes read as without.
 * Before the first group is read.
 */
void
columnar_read_by_ids(ColumnarReadState *rs, AttrNumber attno)
{
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);

	if (attno < 1 || attno > rs->natts)
		elog(ERROR, "columnar_read_by_ids: no column %d", attno);
	if (rs->by_ids == NULL)
	{
		rs->by_ids = palloc0(sizeof(bool) * rs->natts);
		rs->dict_ids = palloc0(sizeof(uint64 *) * rs->natts);
		rs->ids_space = palloc0(sizeof(StringInfoData) * rs->natts);
		rs->dict_entries = palloc0(sizeof(int64 *) * rs->natts);
		rs->by_ids_entries_space = palloc0(sizeof(StringInfoData) * rs->natts);
	}
	rs->by_ids[attno - 1] = true;
	MemoryContextSwitchTo(old);
}

/* Column attno only to filter: see columnar.h. */
void
columnar_read_filter_only(ColumnarReadState *rs, AttrNumber attno)
{
	if (attno < 1 || attno > rs->natts)
		elog(ERROR, "columnar_read_filter_only: no column %d", attno);
	if (rs->filter_only == NULL)
	{
		rs->filter_only = MemoryContextAllocZero(rs->cxt, sizeof(bool) * rs->natts);
		rs->att_pass = MemoryContextAllocZero(rs->cxt, sizeof(bool) * rs->natts);
	}
	rs->filter_only[attno - 1] = true;
}

/* Column attno given whole when its rows hold one value: see columnar.h. */
void
columnar_read_constant_ok(ColumnarReadState *rs, AttrNumber attno)
{
	if (attno < 1 || attno > rs->natts)
		elog(ERROR, "columnar_read_constant_ok: no column %d", attno);
	if (rs->constant_ok == NULL)
	{
		rs->constant_ok = MemoryContextAllocZero(rs->cxt, sizeof(bool) * rs->natts);
		rs->constants = MemoryContextAllocZero(rs->cxt, sizeof(Datum) * rs->natts);
	}
	rs->constant_ok[attno - 1] = true;
}

/* Return only the rows that pass every predicate (their columns are read). */
void
columnar_read_filter_rows(ColumnarReadState *rs)
{
	ListCell   *lc;

	rs->filter_rows = true;
	foreach(lc, rs->predicates)
	{
		ColumnarPredicate *p = lfirst(lc);

		rs->needed[p->attno - 1] = true;
	}
	columnar_read_row_window(rs, InvalidAttrNumber);
}

/*
 * Of a chunk group that the predicates do not pass whole, decode the
 * predicates' columns, and of the other columns only the rows from the
 * first to the last that pass: a row before or after may be returned
 * with those columns NULL.  For callers that drop the rows the predicates
 * fail (columnar_read_filter_rows, or a scan all of whose quals are
 * predicates) and read with columnar_read_next().  What it saves: the
 * pages of a column of high entropy, bit-packed (columnar_chunk_read_rows),
 * outside the rows of a narrow time range in a group of rows ordered by
 * series first; and every other column of a group none of whose rows
 * passes.  With by (an attribute number), for columnar_read_next_group():
 * the window is that of the predicates on column by (when they do not
 * pass the group whole, the column is decoded), and only the integer
 * columns that columnar_chunk_read_rows can read in part are read for
 * it, the others whole.  Before the first group is read.
 */
void
columnar_read_row_window(ColumnarReadState *rs, AttrNumber by)
{
	MemoryContext old;
	ListCell   *lc;

	foreach(lc, rs->predicates)
	{
		AttrNumber	attno = ((ColumnarPredicate *) lfirst(lc))->attno;

		if ((by == InvalidAttrNumber || attno == by) && !rs->needed[attno - 1])
			return;
	}
	if (by != InvalidAttrNumber && (by < 1 || by > rs->natts || !rs->needed[by - 1]))
		return;
	rs->window_by = by;
	old = MemoryContextSwitchTo(rs->cxt);
	rs->window_ok = palloc0(sizeof(bool) * Max(rs->natts, 1));
	for (int a = 0; a < rs->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(rs->desc, a);
		TypeCacheEntry *tce;

		if (!rs->needed[a] || !att->attbyval)
			continue;
		tce = lookup_type_cache(att->atttypid, TYPECACHE_CMP_PROC);
		rs->window_ok[a] = columnar_order_is_signed(tce->cmp_proc) && a + 1 != by;
	}
	MemoryContextSwitchTo(old);
}

/* Whether the value of attno in the row last returned is a dictionary entry. */
bool
columnar_read_value_is_dict(ColumnarReadState *rs, AttrNumber attno)
{
	ColumnarStripe *s = rs->stripes[rs->cur_stripe];

	return attno <= s->natts &&
		COLUMNAR_CHUNK(s, attno - 1, rs->cur_group)->encoding == ENC_DICT;
}

int64
columnar_read_total_rows(ColumnarReadState *rs)
{
	return rs->cumulative[rs->nstripes];
}

/*
 * The pages of stripe s that this read has read, for columnar_read_pages
 * to count each page once however many chunks it holds (the 10,000 times
 * of a chunk group can take 35 bytes).  The caller reads in rs->cxt, where
 * the set grows.
 */
static Bitmapset **
pages_seen(ColumnarReadState *rs, ColumnarStripe *s)
{
	if (rs->seen_first_block != s->first_block)
	{
		bms_free(rs->pages_seen);
		rs->pages_seen = NULL;
		rs->seen_first_block = s->first_block;
	}
	return &rs->pages_seen;
}

/* The bytes of chunk ch of stripe s, decompressed, into rs->raw. */
static void
read_chunk(ColumnarReadState *rs, ColumnarStripe *s, ColumnarChunk *ch)
{
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);

	rs->blocks_read += columnar_chunk_read_scratch(rs->scratch, rs->rel, s, ch, &rs->raw,
												   &rs->stored, pages_seen(rs, s));
	MemoryContextSwitchTo(old);
}

/* The table's stack dictionary, as the scan's snapshot sees it. */
static ColumnarDictionaryView *
table_dictionary(ColumnarReadState *rs)
{
	if (rs->table_dict == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(rs->cxt);

		rs->table_dict = columnar_dictionary_view(rs->rel, rs->snapshot);
		rs->own_table_dict = true;
		MemoryContextSwitchTo(old);
	}
	return rs->table_dict;
}

/*
 * The entry numbers in the table's stack dictionary of stripe s's
 * dictionary of column att (ENC_ENTRIES), into space.
 */
static const int64 *
read_entries(ColumnarReadState *rs, ColumnarStripe *s, int att, StringInfo space)
{
	ColumnarChunk *ch = &s->columns[att].dict;
	int			ndict = s->columns[att].ndict;

	if (ndict < 1 || TupleDescAttr(rs->desc, att)->attlen != -1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar table \"%s\" is damaged: a stripe's dictionary of column \"%s\" has bad entry numbers",
						RelationGetRelationName(rs->rel),
						NameStr(TupleDescAttr(rs->desc, att)->attname))));
	read_chunk(rs, s, ch);
	columnar_scratch_reserve(rs->scratch, space, sizeof(int64) * ndict);
	columnar_decode_ints(ch->index_encoding, rs->raw.data, rs->raw.len, (int64 *) space->data,
						 ndict);
	return (const int64 *) space->data;
}

/*
 * Stripe s's dictionary of column att, decoded into the buffer space, or
 * if too big for a buffer into memory of cxt.  (Of a stripe whose values
 * are in the table's stack dictionary: pointers to them in the space.)
 */
static char **
decode_dictionary(ColumnarReadState *rs, ColumnarStripe *s, int att, StringInfo space,
				  MemoryContext cxt)
{
	ColumnarChunk *ch = &s->columns[att].dict;
	int			ndict = s->columns[att].ndict;
	int16		typlen = TupleDescAttr(rs->desc, att)->attlen;
	Size		size;
	char	   *dst;

	if (ch->encoding == ENC_ENTRIES)
	{
		const int64 *entries = read_entries(rs, s, att, &rs->entries_space);

		columnar_scratch_reserve(rs->scratch, space, sizeof(char *) * ndict);
		columnar_dictionary_values(table_dictionary(rs), entries, ndict, (char **) space->data);
		return (char **) space->data;
	}
	read_chunk(rs, s, ch);
	size = columnar_chunk_dictionary_size(ch, rs->raw.data, rs->raw.len, ndict, typlen);
	dst = columnar_scratch_alloc(rs->scratch, space, size, cxt);
	return columnar_chunk_decode_dictionary(ch, rs->raw.data, rs->raw.len, ndict, typlen, dst);
}

static void
load_dict(ColumnarReadState *rs, ColumnarStripe *s, int att)
{
	if (rs->dict_stripe != rs->cur_stripe)
	{
		if (rs->keep_dicts)
		{
			/* registered buffers live in rs->cxt itself (columnar_scratch_create) */
			rs->dicts = MemoryContextAllocZero(rs->cxt, sizeof(char **) * rs->natts);
			rs->dict_space = MemoryContextAllocZero(rs->cxt, sizeof(StringInfoData) * rs->natts);
		}
		else
		{
			MemoryContextReset(rs->dict_cxt);
			memset(rs->dicts, 0, sizeof(char **) * rs->natts);
		}
		rs->dict_stripe = rs->cur_stripe;
	}
	if (rs->dicts[att] == NULL)
	{
		rs->dicts[att] = decode_dictionary(rs, s, att, &rs->dict_space[att], rs->dict_cxt);
		rs->dict_sizes[att] = s->columns[att].ndict;
	}
}

static pg_noinline void
bad_dict_ids(ColumnarReadState *rs, ColumnarStripe *s, int att)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar table \"%s\" is damaged: the dictionary ids of column \"%s\" do not match its dictionary",
					RelationGetRelationName(rs->rel),
					NameStr(TupleDescAttr(rs->desc, att)->attname)),
			 errdetail("In the stripe that starts at row number " INT64_FORMAT ".",
					   s->first_row)));
}

/*
 * The ids of the entries of stripe s's dictionary of column att into
 * rs->dict_ids[att], once per stripe; false if the stripe has none.  Of a
 * stripe whose dictionary is the table's, its entries' numbers there into
 * rs->dict_entries[att] instead: their ids are looked up only when asked
 * (columnar_read_dictionary_ids).
 */
static bool
load_ids(ColumnarReadState *rs, ColumnarStripe *s, int att)
{
	ColumnarChunk *ch;
	MemoryContext old;
	int			ndict = s->columns[att].ndict;

	if (s->columns[att].has_dict && s->columns[att].dict.encoding == ENC_ENTRIES)
	{
		if (rs->dict_entries[att] == NULL)
		{
			rs->dict_entries[att] = read_entries(rs, s, att, &rs->by_ids_entries_space[att]);
			rs->dict_sizes[att] = ndict;
		}
		return true;
	}
	if (s->dict_ids == NULL || s->dict_ids[att].size == 0)
		return false;
	if (rs->dict_ids[att] != NULL)
		return true;
	ch = &s->dict_ids[att];
	if (ch->encoding != ENC_IDS || ch->rawsize != 0 || ndict <= 0 ||
		(uint64) ch->size != (uint64) ndict * sizeof(uint64))
		bad_dict_ids(rs, s, att);
	columnar_scratch_reserve(rs->scratch, &rs->ids_space[att], ch->size);
	old = MemoryContextSwitchTo(rs->cxt);
	rs->blocks_read += columnar_chunk_read_stored(rs->rel, s, ch, &rs->ids_space[att],
												  pages_seen(rs, s));
	MemoryContextSwitchTo(old);
	rs->dict_ids[att] = (const uint64 *) rs->ids_space[att].data;
	rs->dict_sizes[att] = ndict;
	return true;
}

/*
 * The ids of the entries of the current stripe's dictionary of column
 * attno, read by ids, whose dictionary is the table's
 * (ColumnarGroup.dict_entries set); stripe is ColumnarGroup.stripe.  Valid
 * until the next stripe's group is read.
 */
const uint64 *
columnar_read_dictionary_ids(ColumnarReadState *rs, AttrNumber attno, int stripe)
{
	int			att = attno - 1;
	int			ndict;

	if (rs->by_ids == NULL || att < 0 || att >= rs->natts || stripe != rs->ids_stripe ||
		rs->dict_entries[att] == NULL)
		elog(ERROR, "columnar_read_dictionary_ids: no entries of stripe %d column %d", stripe,
			 attno);
	if (rs->dict_ids[att] != NULL)
		return rs->dict_ids[att];
	ndict = rs->stripes[stripe]->columns[att].ndict;
	columnar_scratch_reserve(rs->scratch, &rs->ids_space[att], sizeof(uint64) * ndict);
	columnar_dictionary_ids(table_dictionary(rs), rs->dict_entries[att], ndict,
							(uint64 *) rs->ids_space[att].data);
	rs->dict_ids[att] = (const uint64 *) rs->ids_space[att].data;
	return rs->dict_ids[att];
}

/*
 * The dictionary of column attno of the stripe numbered stripe
 * (ColumnarGroup.stripe; for a column read by ids, or the integrity
 * check): decoded here, valid until the next call for another stripe or
 * column, or the scan's end.  Its number of entries in *nentries, unless
 * NULL.
 */
char	  **
columnar_read_dictionary(ColumnarReadState *rs, AttrNumber attno, int stripe, int *nentries)
{
	ColumnarStripe *s;
	int			att = attno - 1;

	if (stripe < 0 || stripe >= rs->nstripes || att < 0 || att >= rs->natts)
		elog(ERROR, "columnar_read_dictionary: no stripe %d column %d", stripe, attno);
	s = rs->stripes[stripe];
	if (att >= s->natts || !s->columns[att].has_dict)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk refers to a missing dictionary")));
	if (nentries)
		*nentries = s->columns[att].ndict;
	if (rs->asked_stripe == stripe && rs->asked_att == att)
		return rs->asked_dict;
	rs->asked_stripe = -1;
	if (rs->asked_cxt == NULL)
		rs->asked_cxt = AllocSetContextCreate(rs->cxt, "dictionary", ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(rs->asked_cxt);
	rs->asked_dict = decode_dictionary(rs, s, att, &rs->asked_space, rs->asked_cxt);
	rs->asked_stripe = stripe;
	rs->asked_att = att;
	return rs->asked_dict;
}

/*
 * Rows lo .. hi of chunk ch (n rows) of stripe s into ints[lo .. hi], if
 * its format lets them be read alone (columnar_chunk_read_rows).
 */
static bool
read_rows(ColumnarReadState *rs, ColumnarStripe *s, ColumnarChunk *ch, int n, int lo, int hi,
		  int64 *ints)
{
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);
	bool		done;

	columnar_scratch_reserve(rs->scratch, &rs->stored,
							 (Size) Max(Min(ch->size, s->data_size), 0));
	done = columnar_chunk_read_rows(rs->rel, s, ch, true, n, lo, hi, ints, &rs->stored,
									&rs->blocks_read, pages_seen(rs, s));
	MemoryContextSwitchTo(old);
	return done;
}

/*
 * Decode column a of chunk group g (n rows) of stripe s into rs->vals[a]
 * and rs->nulls[a], in the column's buffer (and plain values in the
 * group's memory).  Rows lo .. hi at least (columnar_read_row_window):
 * those outside may read as NULL.
 */
static void
decode_column(ColumnarReadState *rs, ColumnarStripe *s, int g, int a, int n, int lo, int hi)
{
	Form_pg_attribute att = TupleDescAttr(rs->desc, a);
	Datum	   *vals;
	bool	   *nulls;
	ColumnarChunk *ch;
	int64	   *ints;
	char	  **values;
	int			k = 0;
	int			rows = Max(n, 1);

	/* datums, decoded integers and NULL flags, each MAXALIGNed */
	columnar_scratch_reserve(rs->scratch, &rs->group_space[a],
							 (sizeof(Datum) + sizeof(int64)) * rows + MAXALIGN(rows));
	vals = rs->vals[a] = (Datum *) rs->group_space[a].data;
	ints = (int64 *) (vals + rows);
	nulls = rs->nulls[a] = (bool *) (ints + rows);
	rs->dict_index[a] = NULL;
	if (a >= s->natts)
	{
		/* a column added after the stripe was written */
		bool		isnull;
		Datum		d = getmissingattr(rs->desc, a + 1, &isnull);

		for (int r = 0; r < n; r++)
		{
			vals[r] = d;
			nulls[r] = isnull;
		}
		return;
	}
	if (s->columns[a].kind != (att->attbyval ? COLUMNAR_KIND_INT : COLUMNAR_KIND_BYTES))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("column \"%s\" of a columnar stripe was written for another type",
						NameStr(att->attname))));
	ch = COLUMNAR_CHUNK(s, a, g);
	if (ch->encoding == ENC_ALL_NULL)
	{
		memset(nulls, true, sizeof(bool) * n);
		memset(vals, 0, sizeof(Datum) * n);
		return;
	}
	if (ch->encoding == ENC_DICT && !s->columns[a].has_dict)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk refers to a missing dictionary")));
	if (lo > hi && (rs->window_by == InvalidAttrNumber || rs->window_ok[a]))
	{
		/* no row asked for: nothing read */
		memset(nulls, true, sizeof(bool) * n);
		memset(vals, 0, sizeof(Datum) * n);
		return;
	}
	if (lo <= hi && (lo > 0 || hi < n - 1) && rs->window_ok[a] &&
		read_rows(rs, s, ch, n, lo, hi, ints))
	{
		memset(nulls, true, sizeof(bool) * n);
		memset(nulls + lo, false, sizeof(bool) * (hi - lo + 1));
		memset(vals, 0, sizeof(Datum) * n);
		for (int r = lo; r <= hi; r++)
			vals[r] = columnar_int_to_datum(ints[r], att->attlen);
		return;
	}
	read_chunk(rs, s, ch);
	/* dictionary indexes are checked against the dictionary's size */
	columnar_chunk_decode(ch, rs->raw.data, rs->raw.len, n, att->attlen, s->columns[a].ndict,
						  nulls, ints, &values);
	if (ch->encoding == ENC_PLAIN)
	{
		for (int r = 0; r < n; r++)
			vals[r] = nulls[r] ? (Datum) 0 : PointerGetDatum(values[k++]);
		return;
	}
	if (ch->encoding == ENC_DICT)
	{
		char	  **dict;

		if (rs->by_ids && rs->by_ids[a] && ch->nnulls == 0 && load_ids(rs, s, a))
		{
			rs->dict_index[a] = ints;
			return;
		}
		load_dict(rs, s, a);
		dict = rs->dicts[a];
		if (ch->nnulls == 0)
		{
			for (int r = 0; r < n; r++)
				vals[r] = PointerGetDatum(dict[ints[r]]);
			rs->dict_index[a] = ints;
			return;
		}
		for (int r = 0; r < n; r++)
			vals[r] = nulls[r] ? (Datum) 0 : PointerGetDatum(dict[ints[k++]]);
	}
#ifdef USE_FLOAT8_BYVAL
	else if (ch->nnulls == 0 && att->attlen == sizeof(int64))
	{
		/* 8-byte integers passed by value are their own datums: no copy */
		rs->vals[a] = (Datum *) ints;
		return;
	}
#endif
	else
	{
		for (int r = 0; r < n; r++)
			vals[r] = nulls[r] ? (Datum) 0 : columnar_int_to_datum(ints[k++], att->attlen);
	}
}

/*
 * Whether a column of the type holds one value when its min and max (by
 * the type's order) are equal: types ordered as their integers.  Not
 * float4 and float8, whose -0 and 0 are equal and differ.
 */
static bool
equal_is_identical(Oid type)
{
	switch (type)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		default:
			return false;
	}
}

/*
 * Whether column a of group g holds one value in every row, none NULL, as
 * its min and max show: that value into *value.
 */
static bool
constant_chunk(ColumnarReadState *rs, ColumnarStripe *s, int g, int a, Datum *value)
{
	Form_pg_attribute att = TupleDescAttr(rs->desc, a);
	ColumnarChunk *ch;

	if (a >= s->natts || !att->attbyval || s->columns[a].kind != COLUMNAR_KIND_INT ||
		!equal_is_identical(att->atttypid))
		return false;
	ch = COLUMNAR_CHUNK(s, a, g);
	if (ch->encoding == ENC_ALL_NULL || ch->encoding == ENC_DICT || ch->nnulls != 0 ||
		!ch->has_minmax || ch->min != ch->max)
		return false;
	*value = columnar_int_to_datum(ch->min, att->attlen);
	return true;
}

/*
 * Does the row at r of the decoded group pass every predicate (on column
 * by, when not 0)?
 */
static bool
row_passes_on(ColumnarReadState *rs, int r, AttrNumber by)
{
	ListCell   *lc;

	foreach(lc, rs->predicates)
	{
		ColumnarPredicate *p = lfirst(lc);
		int			a = p->attno - 1;

		if (by != InvalidAttrNumber && p->attno != by)
			continue;
		if (rs->nulls[a][r] || !columnar_predicate_passes(p, rs->vals[a][r]))
			return false;
	}
	return true;
}

static inline bool
row_passes(ColumnarReadState *rs, int r)
{
	return row_passes_on(rs, r, InvalidAttrNumber);
}

/*
 * The first and last of the group's n rows that pass the predicates that
 * make the window (columnar_read_row_window), whose columns are decoded;
 * *lo > *hi: none.
 */
static void
passing_rows(ColumnarReadState *rs, int n, int *lo, int *hi)
{
	int			r = 0;

	while (r < n && !row_passes_on(rs, r, rs->window_by))
		r++;
	*lo = r;
	r = n - 1;
	while (r > *lo && !row_passes_on(rs, r, rs->window_by))
		r--;
	*hi = r;
}

/*
 * Decode group g of the current stripe for the needed columns; for
 * columnar_read_next_group (whole_group), not those read only to filter
 * whose rows all pass (columnar_read_filter_only), nor those given whole
 * when they hold one value (columnar_read_constant_ok); with window, of
 * a group the predicates do not pass whole, the predicates' columns
 * first, then the others for the rows that pass (columnar_read_row_window).
 */
static void
decode_group(ColumnarReadState *rs, int g, bool whole_group, bool window)
{
	ColumnarStripe *s = rs->stripes[rs->cur_stripe];
	int			n = (int) Min((int64) s->group_rows, s->row_count - (int64) g * s->group_rows);
	int			lo = 0;
	int			hi = n - 1;
	bool	   *decoded = NULL;
	MemoryContext old;

	if (rs->loaded_stripe == rs->cur_stripe && rs->loaded_group == g && !rs->loaded_partial)
	{
		rs->group_nrows = n;
		return;
	}
	if (rs->by_ids && rs->ids_stripe != rs->cur_stripe)
	{
		for (int a = 0; a < rs->natts; a++)
		{
			rs->dict_ids[a] = NULL;
			rs->dict_entries[a] = NULL;
			/* not this stripe's: read by ids, or decoded below */
			if (rs->by_ids[a] && rs->dict_stripe != rs->cur_stripe)
				rs->dicts[a] = NULL;
		}
		rs->ids_stripe = rs->cur_stripe;
	}
	MemoryContextReset(rs->group_cxt);
	old = MemoryContextSwitchTo(rs->group_cxt);
	rs->loaded_stripe = -1;
	rs->loaded_partial = false;
	if (window && !rs->group_all_pass && rs->predicates != NIL &&
		(rs->window_by == InvalidAttrNumber || rs->att_pass == NULL ||
		 !rs->att_pass[rs->window_by - 1]))
	{
		ListCell   *lc;

		decoded = palloc0(sizeof(bool) * rs->natts);
		foreach(lc, rs->predicates)
		{
			AttrNumber	attno = ((ColumnarPredicate *) lfirst(lc))->attno;

			if (rs->window_by != InvalidAttrNumber && attno != rs->window_by)
				continue;
			if (!decoded[attno - 1])
				decode_column(rs, s, g, attno - 1, n, 0, n - 1);
			decoded[attno - 1] = true;
		}
		passing_rows(rs, n, &lo, &hi);
		rs->loaded_partial = lo > 0 || hi < n - 1;
	}
	for (int a = 0; a < rs->natts; a++)
	{
		if (!rs->needed[a] || (decoded && decoded[a]))
			continue;
		if (whole_group &&
			((rs->filter_only && rs->filter_only[a] && rs->att_pass[a]) ||
			 (rs->constant_ok && rs->constant_ok[a] &&
			  constant_chunk(rs, s, g, a, &rs->constants[a]))))
		{
			rs->vals[a] = NULL;
			rs->nulls[a] = NULL;
			rs->dict_index[a] = NULL;
			rs->loaded_partial = true;
			continue;
		}
		decode_column(rs, s, g, a, n, lo, hi);
	}
	MemoryContextSwitchTo(old);
	rs->loaded_stripe = rs->cur_stripe;
	rs->loaded_group = g;
	rs->group_nrows = n;
	rs->groups_read++;
}

/* Position the row number cursor at row index of the current stripe. */
static void
seek_row_number(ColumnarReadState *rs, int64 index)
{
	ColumnarStripe *s = rs->stripes[rs->cur_stripe];

	rs->range_idx = 0;
	while (rs->range_idx < s->nranges && index >= s->ranges[rs->range_idx].count)
	{
		index -= s->ranges[rs->range_idx].count;
		rs->range_idx++;
	}
	rs->range_off = index;
}

static int64
next_row_number(ColumnarReadState *rs)
{
	ColumnarStripe *s = rs->stripes[rs->cur_stripe];
	int64		row;

	if (rs->range_idx >= s->nranges)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar stripe has fewer row numbers than rows")));
	row = s->ranges[rs->range_idx].first + rs->range_off;
	if (++rs->range_off == s->ranges[rs->range_idx].count)
	{
		rs->range_idx++;
		rs->range_off = 0;
	}
	return row;
}

static void
emit(ColumnarReadState *rs, int r, Datum *values, bool *isnull)
{
	for (int a = 0; a < rs->natts; a++)
	{
		if (rs->needed[a])
		{
			values[a] = rs->vals[a][r];
			isnull[a] = rs->nulls[a][r];
		}
		else
		{
			values[a] = (Datum) 0;
			isnull[a] = true;
		}
	}
}

/*
 * Move to the next chunk group that the predicates do not rule out and
 * decode it (with skip_passing, not the columns read only to filter whose
 * rows all pass); false at the end.
 */
static bool
next_group(ColumnarReadState *rs, bool skip_passing)
{
	for (;;)
	{
		ColumnarStripe *s;

		CHECK_FOR_INTERRUPTS();
		if (rs->cur_stripe >= rs->nstripes)
			return false;
		s = rs->stripes[rs->cur_stripe];
		if (++rs->cur_group >= s->ngroups)
		{
			rs->cur_stripe++;
			rs->cur_group = -1;
			continue;
		}
		if (!group_is_ours(rs, s))
			continue;
		if (columnar_group_excluded(rs->predicates, rs->desc, s, rs->cur_group,
									&rs->group_all_pass, rs->att_pass))
		{
			rs->groups_skipped++;
			continue;
		}
		decode_group(rs, rs->cur_group, skip_passing,
					 rs->window_ok && skip_passing == (rs->window_by != InvalidAttrNumber));
		return true;
	}
}

/* The next row: false at the end. */
bool
columnar_read_next(ColumnarReadState *rs, Datum *values, bool *isnull, int64 *rownum)
{
next:
	while (rs->group_row >= rs->group_nrows)
	{
		if (!next_group(rs, false))
			return false;
		rs->group_row = 0;
		seek_row_number(rs, (int64) rs->cur_group * rs->stripes[rs->cur_stripe]->group_rows);
	}
	if (rs->filter_rows && !rs->group_all_pass && !row_passes(rs, rs->group_row))
	{
		next_row_number(rs);
		rs->group_row++;
		goto next;
	}
	emit(rs, rs->group_row, values, isnull);
	*rownum = next_row_number(rs);
	rs->group_row++;
	return true;
}

/*
 * The next chunk group that the predicates do not rule out, decoded, for
 * callers that loop over its columns themselves.  Its rows are not
 * filtered; group->all_pass says whether min/max show that all pass.
 * Not to be mixed with columnar_read_next().  false at the end.
 */
bool
columnar_read_next_group(ColumnarReadState *rs, ColumnarGroup *group)
{
	if (!next_group(rs, true))
		return false;
	group->nrows = rs->group_nrows;
	group->values = rs->vals;
	group->nulls = rs->nulls;
	group->dict_index = rs->dict_index;
	group->dicts = rs->dicts;
	group->dict_sizes = rs->dict_sizes;
	group->dict_ids = rs->dict_ids;
	group->dict_entries = rs->dict_entries;
	group->stripe = rs->cur_stripe;
	group->all_pass = rs->group_all_pass;
	group->constants = rs->constants;
	return true;
}

static int
map_cmp(const void *a, const void *b)
{
	const RowMapEntry *x = a;
	const RowMapEntry *y = b;

	return x->first < y->first ? -1 : (x->first > y->first ? 1 : 0);
}

static void
build_map(ColumnarReadState *rs)
{
	int			n = 0;
	int			k = 0;

	for (int i = 0; i < rs->nstripes; i++)
		n += rs->stripes[i]->nranges;
	rs->map = MemoryContextAlloc(rs->cxt, sizeof(RowMapEntry) * Max(n, 1));
	for (int i = 0; i < rs->nstripes; i++)
	{
		ColumnarStripe *s = rs->stripes[i];
		int64		index = 0;

		for (int j = 0; j < s->nranges; j++)
		{
			rs->map[k].first = s->ranges[j].first;
			rs->map[k].count = s->ranges[j].count;
			rs->map[k].stripe = i;
			rs->map[k].index = index;
			index += s->ranges[j].count;
			k++;
		}
	}
	qsort(rs->map, n, sizeof(RowMapEntry), map_cmp);
	rs->nmap = n;
}

/* Load the group holding row index of stripe si; return its offset. */
static int
load_row(ColumnarReadState *rs, int si, int64 index)
{
	ColumnarStripe *s = rs->stripes[si];
	int			g = (int) (index / s->group_rows);

	rs->cur_stripe = si;
	decode_group(rs, g, false, false);
	/* the sequential position is lost */
	rs->cur_group = g;
	rs->group_row = rs->group_nrows;
	return (int) (index - (int64) g * s->group_rows);
}

/* The row with row number rownum, if this state sees it. */
bool
columnar_read_row(ColumnarReadState *rs, int64 rownum, Datum *values, bool *isnull)
{
	int			lo = 0,
				hi;

	if (rs->map == NULL)
		build_map(rs);
	hi = rs->nmap - 1;
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		RowMapEntry *e = &rs->map[mid];

		if (rownum < e->first)
			hi = mid - 1;
		else if (rownum >= e->first + e->count)
			lo = mid + 1;
		else
		{
			int			r = load_row(rs, e->stripe, e->index + (rownum - e->first));

			emit(rs, r, values, isnull);
			return true;
		}
	}
	return false;
}

/* The ordinal-th row over all stripes (ANALYZE sampling). */
bool
columnar_read_seek_ordinal(ColumnarReadState *rs, int64 ordinal,
						   Datum *values, bool *isnull, int64 *rownum)
{
	int			lo = 0,
				hi = rs->nstripes - 1;

	if (ordinal < 0 || ordinal >= rs->cumulative[rs->nstripes])
		return false;
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (rs->cumulative[mid] <= ordinal)
			lo = mid;
		else
			hi = mid - 1;
	}
	{
		int64		index = ordinal - rs->cumulative[lo];
		int			r = load_row(rs, lo, index);

		emit(rs, r, values, isnull);
		seek_row_number(rs, index);
		*rownum = next_row_number(rs);
	}
	return true;
}
