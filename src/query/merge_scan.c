/*
 * merge_scan.c
 *		parca_query's merge, read straight from a parca_columnar samples table.
 *
 * An aggregate query hands every row to parca_merge() as a tuple, whose
 * stack is then hashed and compared: a few hundred nanoseconds a row.  A
 * parca_columnar table needs none of that.  Its chunk groups are read
 * whole (only the time, series_id, value, period and stack columns; groups
 * whose min/max exclude the time range or the series are skipped), and
 * within a stripe equal stacks share one dictionary entry, so a row costs
 * an addition into an array of sums indexed by the builder's number of
 * that entry's stack.  An entry gets its number once per stripe, when a
 * row first has it: by the stack's id (a 64-bit hash of its location ids,
 * stored beside the dictionary), which maps to its number in the builder
 * from the first stripe that had it on, for the whole merge; a stripe's
 * dictionary is decoded only when it has a stack not yet met.  A stripe
 * whose dictionary is its table's (format version 4) gives each entry's
 * number there, which keeps its stack's number from the table's first
 * stripe that had it on: its id is read once per table.  The sums reach
 * the builder once per stack at the end of the merge.  A chunk group whose
 * rows share one period (a profile's) is not decoded for it: the period
 * multiplies each value in the loop that adds it.
 *
 * The same rows as the SQL merge are counted: rows whose time is in
 * [start, stop] and whose series is one of those asked for; a NULL value,
 * period or stack adds nothing, as in SQL.  A period of 0 is unknown: the
 * row keeps its count.  Row-level security, or a user
 * who may not read the table directly, sends the caller to SQL.  Of a
 * parca.samples partitioned by time, only the partitions whose ranges
 * meet [start, stop] are read (and the default partition), each as a
 * table of its own.  A large merge is shared with parallel workers
 * (merge_scan_parallel.c).
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "installation/citus.h"
#include "columnar/columnar.h"
#include "ids/ids.h"
#include "query/grow_array.h"
#include "query/merge_scan_internal.h"
#include "metastore/samples_table.h"
#include "keyed_hash/keyed_hash.h"

/* The columns read, in this order. */
enum
{
	COL_TIME, COL_SERIES, COL_VALUE, COL_PERIOD, COL_STACK, NCOLS
};

/* The attribute numbers of the columns read, or false if one is missing. */
static bool
find_columns(Relation rel, AttrNumber *attnos)
{
	static const AttrNumber columns[NCOLS] = {SAMPLES_ATT_TIME, SAMPLES_ATT_SERIES_ID,
	SAMPLES_ATT_VALUE, SAMPLES_ATT_PERIOD, SAMPLES_ATT_STACK};

	for (int c = 0; c < NCOLS; c++)
	{
		attnos[c] = samples_table_find_column(rel, columns[c]);
		if (attnos[c] == InvalidAttrNumber)
			return false;
	}
	return true;
}

static ColumnarPredicate *
predicate(AttrNumber attno, int strategy, Oid cmpproc, Datum value)
{
	ColumnarPredicate *p = columnar_predicate_make(attno, strategy, cmpproc, InvalidOid);

	columnar_predicate_set_value(p, value, false);
	return p;
}

#define ST_SORT sort_series_ids
#define ST_ELEMENT_TYPE SeriesGroup
#define ST_COMPARE(a, b) ((a)->id < (b)->id ? -1 : (a)->id > (b)->id)
#define ST_SCOPE static
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"

/* The group of series id among the sorted series, -1 if not asked for. */
static int32
series_group(const SeriesGroup *series, int n, int64 id)
{
	int			lo = 0,
				hi = n - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (series[mid].id == id)
			return series[mid].group;
		if (series[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * The groups of the series last looked up, by series id modulo its size:
 * rows of a few series interleave (a profile's sample types), which
 * defeats remembering only the last one.
 */
#define SERIES_CACHE_SIZE 64

typedef struct SeriesCacheSlot
{
	int64		id;
	int32		group;			/* -1: not asked for; -2: empty slot */
} SeriesCacheSlot;

/* The group of series id, -1 if not asked for, through the cache. */
static inline int32
cached_series_group(const MergeScan *m, SeriesCacheSlot *series_cache, int64 id)
{
	SeriesCacheSlot *slot = &series_cache[(uint64) id % SERIES_CACHE_SIZE];

	if (slot->group == -2 || slot->id != id)
	{
		slot->id = id;
		slot->group = series_group(m->series, m->nseries, id);
	}
	return slot->group;
}

/* A stack met in the merge: its id, its number in the group's builder. */
typedef struct KnownStack
{
	uint64		id;
	uint32		number;
	char		status;
} KnownStack;

/* ids are 64-bit hashes already: their low bits pick the bucket */
#define SH_PREFIX known_stacks
#define SH_ELEMENT_TYPE KnownStack
#define SH_KEY_TYPE uint64
#define SH_KEY id
/* keyed: stack ids are chosen by ingesting roles (keyed_hash.h) */
#define SH_HASH_KEY(tb, k) keyed_hash_u64(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * The stack that a dictionary entry had in the stripe before, by id: its
 * number in the builder (PG_UINT32_MAX: none).
 */
typedef struct EntryGuess
{
	uint64		id;
	uint32		number;
} EntryGuess;

/*
 * A stack a parallel worker met, by the number its rows add into.  Of a
 * stripe with ids: its id and where its frames are, which the worker
 * leaves unread, as the leader has mostly met the same stacks in its own
 * stripes (merge_scan_add_share); of a stripe without: its number in the
 * worker's builder, which has its frames.
 */
typedef struct WorkerStack
{
	uint64		id;
	uint32		builder;		/* PG_UINT32_MAX: by id */
	uint32		table;			/* MergeScan.table */
	uint32		stripe;			/* ColumnarGroup.stripe */
	uint32		entry;			/* of its dictionary */
} WorkerStack;

/* A stack a worker sends by id (SHARE_BY_ID), where its frames are. */
typedef struct StackById
{
	uint64		id;
	int64		value;
	uint32		table;
	uint32		stripe;
	uint32		entry;
} StackById;

/*
 * A group's sums, and the builder's number of each dictionary entry of the
 * current stripe.  Rows add into the sums by the builder's number of
 * their stack, so that a stack costs one lookup per stripe that has it
 * and one addition into the builder per merge (merge_scan_sums_to_builders),
 * however many stripes and partitions have it.
 */
typedef struct StripeSums
{
	int64	   *sums;			/* [cap]: by the builder's stack number */
	int			cap;
	uint64	   *entry_number;	/* [ncap]: generation << 32 | the stack number
								 * of the stripe's entry, stale when the
								 * generation is not the current one */
	uint32		generation;		/* of the current stripe: from 1 */
	int			ncap;
	char	  **dict;			/* the stripe's stacks, or NULL (then ids) */
	int			ndict;
	const uint64 *ids;			/* their ids, or NULL (a stripe without, or
								 * not read yet) */
	const int64 *entries;		/* of a stripe whose dictionary is the
								 * table's: its entries' numbers there, or
								 * NULL */
	int			stripe;			/* the stripe (ColumnarGroup.stripe) */
	uint32	   *by_entry;		/* [by_entry_cap] of the one group of a query:
								 * the builder's number of each entry of the
								 * current table's dictionary met
								 * (PG_UINT32_MAX: none yet) */
	int			by_entry_cap;
	known_stacks_hash *known;	/* the stacks met, by id */
	EntryGuess *id_guess;		/* [ncap]: of stripes with ids */
	uint32	   *guess;			/* [ncap]: of stripes without, the builder's
								 * number of the stack that entry had in the
								 * stripe before (PG_UINT32_MAX: none) */
} StripeSums;

/* Entry e's stack in the stripe's dictionary, which is decoded then. */
static inline struct varlena *
entry_stack(StripeSums *ss, int e, ColumnarReadState *rs, AttrNumber stack_att)
{
	if (ss->dict == NULL)
		ss->dict = columnar_read_dictionary(rs, stack_att, ss->stripe, NULL);
	return (struct varlena *) ss->dict[e];
}

static inline int
stack_nframes(const struct varlena *stack)
{
	return (int) (VARSIZE_ANY_EXHDR(stack) / sizeof(uint64));
}

/* A new number of a worker's, for a stack by id or by the builder's number. */
static uint32
worker_stack(MergeScan *m, uint64 id, uint32 builder, uint32 stripe, uint32 entry)
{
	WorkerStack *w;

	if (m->nwstacks == m->wstacks_cap)
	{
		int			cap = grow_cap(m->wstacks_cap, (int64) m->nwstacks + 1, 1024);

		m->wstacks = grow_array(CurrentMemoryContext, m->wstacks, sizeof(WorkerStack),
								m->wstacks_cap, cap, 0);
		m->wstacks_cap = cap;
	}
	w = &m->wstacks[m->nwstacks];
	w->id = id;
	w->builder = builder;
	w->table = (uint32) m->table;
	w->stripe = stripe;
	w->entry = entry;
	return (uint32) m->nwstacks++;
}

/* A worker's number of the stack its builder numbers builder. */
static uint32
worker_number_of_builder(MergeScan *m, uint32 builder)
{
	if (builder >= (uint32) m->wnumber_cap)
	{
		int			cap = grow_cap(m->wnumber_cap, (int64) builder + 1, 0);

		/* PG_UINT32_MAX: none yet */
		m->wnumber = grow_array(CurrentMemoryContext, m->wnumber, sizeof(uint32),
								m->wnumber_cap, cap, 0xff);
		m->wnumber_cap = cap;
	}
	if (m->wnumber[builder] == PG_UINT32_MAX)
		m->wnumber[builder] = worker_stack(m, 0, builder, 0, 0);
	return m->wnumber[builder];
}

/*
 * Entries of a table's dictionary numbered past this take their stacks'
 * numbers by id in every stripe, not from StripeSums.by_entry: a query
 * keeps 4 bytes for every entry up to the highest one met.
 */
#define BY_ENTRY_LIMIT (1 << 22)

/* Room in ss->by_entry for entry (below BY_ENTRY_LIMIT). */
static pg_noinline void
by_entry_grow(StripeSums *ss, int64 entry)
{
	int			cap = grow_cap(ss->by_entry_cap, entry + 1, 1024);

	/* PG_UINT32_MAX: none yet */
	ss->by_entry = grow_array(CurrentMemoryContext, ss->by_entry, sizeof(uint32),
							  ss->by_entry_cap, cap, 0xff);
	ss->by_entry_cap = cap;
}

/* The builder's number of the table's entry, as met in a stripe before. */
static inline void
by_entry_set(StripeSums *ss, int64 entry, uint32 number)
{
	if (entry < 0 || entry >= BY_ENTRY_LIMIT)
		return;
	if (unlikely(entry >= ss->by_entry_cap))
		by_entry_grow(ss, entry);
	ss->by_entry[entry] = number;
}

/*
 * The builder's number of entry e's stack, the first time a row of the
 * current stripe has it.
 *
 * A stripe with ids: a stack met before (in any stripe or partition of
 * the merge) has the number its id maps to; the first unknown id has the
 * stripe's dictionary decoded (m->rs, column m->stack_att), and its stack
 * is added by its frames.  Stripes of similar rows mostly have the same
 * stack at the same entry (a dictionary lists stacks in the order its
 * rows first had them), so an entry whose id is the one it had in the
 * stripe before takes the number it had then: the table of ids, read at
 * random (a cache miss a stack), is asked only when it differs.  A stripe
 * without (of an older format) keeps each entry's stack number likewise,
 * and the next stripe's stack at that entry is first compared with it,
 * which costs a memcmp where a lookup costs a hash and reads at random.
 * A stripe whose dictionary is the table's has its entries' numbers
 * there: the number an entry took in a stripe before, of the same table,
 * is kept (by_entry, taken in one pass per stripe by sums_take_entries),
 * and its id is read only when the table's entry is met the first time.
 * A stack enters the builder with nothing added (a row's sum may be 0).
 * A parallel worker numbers stacks itself (worker_stack): one of a stripe
 * with ids is not read at all.
 */
static pg_noinline uint32
entry_number(MergeScan *m, StripeSums *ss, ProfileBuilder *b, int e)
{
	uint32		number;

	if (ss->entries && ss->by_entry && ss->entries[e] >= 0 &&
		ss->entries[e] < ss->by_entry_cap && ss->by_entry[ss->entries[e]] != PG_UINT32_MAX)
		number = ss->by_entry[ss->entries[e]];
	else if (ss->ids || ss->entries)
	{
		EntryGuess *guess;
		uint64		id;

		if (ss->ids == NULL)
			ss->ids = columnar_read_dictionary_ids(m->rs, m->stack_att, ss->stripe);
		guess = &ss->id_guess[e];
		id = ss->ids[e];

		if (guess->id != id || guess->number == PG_UINT32_MAX)
		{
			bool		found;
			KnownStack *known = known_stacks_insert(ss->known, id, &found);

			if (!found && m->worker)
				known->number = worker_stack(m, id, PG_UINT32_MAX, (uint32) ss->stripe, (uint32) e);
			else if (!found)
			{
				struct varlena *stack = entry_stack(ss, e, m->rs, m->stack_att);

				known->number = profile_builder_add(b, VARDATA_ANY(stack), stack_nframes(stack),
													0, 0);
			}
			guess->id = id;
			guess->number = known->number;
		}
		number = guess->number;
		if (ss->entries && ss->by_entry)
			by_entry_set(ss, ss->entries[e], number);
	}
	else
	{
		struct varlena *stack = (struct varlena *) ss->dict[e];
		const char *frames = VARDATA_ANY(stack);
		int			nframes = stack_nframes(stack);

		if (ss->guess[e] == PG_UINT32_MAX ||
			!profile_builder_add_to(b, ss->guess[e], frames, nframes, 0))
			ss->guess[e] = profile_builder_add(b, frames, nframes, 0, 0);
		number = m->worker ? worker_number_of_builder(m, ss->guess[e]) : ss->guess[e];
	}
	if (number >= (uint32) ss->cap)
	{
		int			cap = grow_cap(ss->cap, (int64) number + 1, 0);

		ss->sums = grow_array(CurrentMemoryContext, ss->sums, sizeof(int64), ss->cap, cap, 0);
		ss->cap = cap;
	}
	ss->entry_number[e] = ((uint64) ss->generation << 32) | number;
	return number;
}

/* The builder's number of entry e's stack, of the current stripe. */
static pg_attribute_always_inline uint32
entry_number_of(MergeScan *m, StripeSums *ss, ProfileBuilder *b, int64 e)
{
	uint64		known = ss->entry_number[e];

	if (likely((uint32) (known >> 32) == ss->generation))
		return (uint32) known;
	return entry_number(m, ss, b, (int) e);
}

/* A new stripe's dictionary is set in ss: every entry's number is stale. */
static void
sums_new_stripe(StripeSums *ss)
{
	if (++ss->generation == 0)
	{
		/* after 2^32 stripes: no entry may look current */
		if (ss->ncap > 0)
			memset(ss->entry_number, 0, sizeof(uint64) * ss->ncap);
		ss->generation = 1;
	}
}

/*
 * The numbers of the new stripe's entries whose ids are those they had in
 * the stripe before, in one pass over its ids (for the one group of a
 * query, whose rows read most entries; groups of a group_by take theirs
 * as their rows meet them).  Of a stripe whose dictionary is the table's,
 * noted by their entries there too (by_entry).
 */
static void
sums_take_guesses(StripeSums *ss)
{
	uint64		generation = (uint64) ss->generation << 32;
	int			n = Min(ss->ndict, ss->ncap);

	for (int e = 0; e < n; e++)
	{
		const EntryGuess *guess = &ss->id_guess[e];

		if (guess->id == ss->ids[e] && guess->number != PG_UINT32_MAX)
		{
			ss->entry_number[e] = generation | guess->number;
			if (ss->entries)
				by_entry_set(ss, ss->entries[e], guess->number);
		}
	}
}

/*
 * The numbers of the new stripe's entries that the stripes before, of the
 * same table, met (a stripe whose dictionary is the table's, of the one
 * group of a query), in one pass over its entries; returns how many.
 */
static int
sums_take_entries(StripeSums *ss)
{
	uint64		generation = (uint64) ss->generation << 32;
	const int64 *entries = ss->entries;
	const uint32 *by_entry = ss->by_entry;
	int64		cap = ss->by_entry_cap;
	int			taken = 0;

	for (int e = 0; e < ss->ndict; e++)
	{
		int64		entry = entries[e];

		if (entry >= 0 && entry < cap && by_entry[entry] != PG_UINT32_MAX)
		{
			ss->entry_number[e] = generation | by_entry[entry];
			taken++;
		}
	}
	return taken;
}

/*
 * Makes ss ready for rows of the current stripe's dictionary: made when a
 * group's first row is seen, as a group_by may have many groups of few
 * stacks.
 */
static inline void
sums_prepare(StripeSums *ss)
{
	int			n = ss->ndict;

	if (likely(n <= ss->ncap))
		return;
	ss->entry_number = grow_array(CurrentMemoryContext, ss->entry_number, sizeof(uint64), ss->ncap,
								  n, 0);
	/* PG_UINT32_MAX: no guess */
	ss->guess = grow_array(CurrentMemoryContext, ss->guess, sizeof(uint32), ss->ncap, n, 0xff);
	ss->id_guess = grow_array(CurrentMemoryContext, ss->id_guess, sizeof(EntryGuess), ss->ncap, n,
							  0xff);
	ss->ncap = n;
}

/*
 * The sums of the merge to its builders, once each stack: the rows added
 * them by the builders' numbers.
 */
void
merge_scan_sums_to_builders(MergeScan *m)
{
	for (int k = 0; k < m->ngroups && !m->sink; k++)
	{
		StripeSums *ss = &m->ss[k];

		for (int n = 0; n < ss->cap; n++)
			if (ss->sums[n] != 0)
			{
				profile_builder_add_value(m->builders[k], (uint32) n, ss->sums[n]);
				ss->sums[n] = 0;
			}
	}
}

/* How a worker sends a stack (merge_scan_share_out). */
enum
{
	SHARE_BY_ID, SHARE_BY_FRAMES
};

/*
 * A parallel worker's merge, for the leader (merge_scan_add_share): each
 * stack it numbered with its value, by id (a StackById) when a stripe
 * with ids had it, else by its frames (the value, the number of frames,
 * the frames), each after a byte saying which.  After the count of
 * stacks.
 */
void
merge_scan_share_out(MergeScan *m, StringInfo out)
{
	StripeSums *ss = &m->ss[0];
	ProfileBuilder *b = m->builders[0];
	uint32		nstacks = (uint32) m->nwstacks;

	Assert(m->worker && m->ngroups == 1 && !m->sink);
	appendBinaryStringInfo(out, (const char *) &nstacks, sizeof(nstacks));
	for (uint32 n = 0; n < nstacks; n++)
	{
		const WorkerStack *w = &m->wstacks[n];
		int64		value = n < (uint32) ss->cap ? ss->sums[n] : 0;

		if (w->builder == PG_UINT32_MAX)
		{
			StackById	s;

			/* its padding too: no byte sent is left unset */
			memset(&s, 0, sizeof(s));
			s.id = w->id;
			s.value = value;
			s.table = w->table;
			s.stripe = w->stripe;
			s.entry = w->entry;
			appendStringInfoChar(out, SHARE_BY_ID);
			appendBinaryStringInfo(out, (const char *) &s, sizeof(s));
		}
		else
		{
			int			nframes;
			int64		unused;
			const char *frames = profile_builder_stack(b, w->builder, &nframes, &unused);
			uint32		nframes32 = (uint32) nframes;

			appendStringInfoChar(out, SHARE_BY_FRAMES);
			appendBinaryStringInfo(out, (const char *) &value, sizeof(value));
			appendBinaryStringInfo(out, (const char *) &nframes32, sizeof(nframes32));
			appendBinaryStringInfo(out, frames, (Size) nframes32 * sizeof(uint64));
		}
	}
}

static pg_noinline void
damaged_share(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("parallel merge worker sent a damaged share")));
}

/*
 * A worker's merge (merge_scan_share_out) added to the leader's: a stack
 * by id that the leader has met by one lookup, one by frames by them.
 * Those by id it has not met wait for merge_scan_add_unmet.
 */
void
merge_scan_add_share(MergeScan *m, const char *data, Size len)
{
	ProfileBuilder *b = m->builders[0];
	known_stacks_hash *known_ids = m->ss[0].known;
	const char *end = data + len;
	uint32		nstacks;

	if (len < sizeof(nstacks))
		damaged_share();
	memcpy(&nstacks, data, sizeof(nstacks));
	data += sizeof(nstacks);
	for (uint32 n = 0; n < nstacks; n++)
	{
		char		kind;

		if (end - data < 1)
			damaged_share();
		kind = *data++;
		if (kind == SHARE_BY_ID)
		{
			StackById	s;
			KnownStack *known;

			if ((Size) (end - data) < sizeof(s))
				damaged_share();
			memcpy(&s, data, sizeof(s));
			data += sizeof(s);
			known = known_stacks_lookup(known_ids, s.id);
			if (known)
				profile_builder_add_value(b, known->number, s.value);
			else
			{
				if (m->nunmet == m->unmet_cap)
				{
					int			cap = grow_cap(m->unmet_cap, (int64) m->nunmet + 1, 256);

					m->unmet = grow_array(CurrentMemoryContext, m->unmet, sizeof(StackById),
										  m->unmet_cap, cap, 0);
					m->unmet_cap = cap;
				}
				m->unmet[m->nunmet++] = s;
			}
		}
		else if (kind == SHARE_BY_FRAMES)
		{
			int64		value;
			uint32		nframes;

			if ((Size) (end - data) < sizeof(value) + sizeof(nframes))
				damaged_share();
			memcpy(&value, data, sizeof(value));
			memcpy(&nframes, data + sizeof(value), sizeof(nframes));
			data += sizeof(value) + sizeof(nframes);
			if ((Size) (end - data) / sizeof(uint64) < nframes)
				damaged_share();
			profile_builder_add(b, data, (int) nframes, value, 0);
			data += (Size) nframes * sizeof(uint64);
		}
		else
			damaged_share();
	}
	if (data != end)
		damaged_share();
}

static int
stack_by_id_cmp(const void *a, const void *b)
{
	const StackById *x = a;
	const StackById *y = b;

	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	if (x->stripe != y->stripe)
		return x->stripe < y->stripe ? -1 : 1;
	if (x->entry != y->entry)
		return x->entry < y->entry ? -1 : 1;
	return 0;
}

/*
 * The stacks workers sent by id that the leader had not met: their frames
 * read from the dictionaries of the stripes that had them (tables: the
 * merge's, in the order its processes read them), each decoded once.  The
 * leader's snapshot is the workers', so its stripes are theirs, in the
 * same order; an entry whose bytes do not hash to the id sent is a damaged
 * share, not a wrong answer.
 */
void
merge_scan_add_unmet(MergeScan *m, List *tables)
{
	ProfileBuilder *b = m->builders[0];
	known_stacks_hash *known_ids = m->ss[0].known;
	int			i = 0;

	elog(DEBUG1, "parallel merge: %d stacks the workers sent by id read by the leader", m->nunmet);
	if (m->nunmet == 0)
		return;
	qsort(m->unmet, m->nunmet, sizeof(StackById), stack_by_id_cmp);
	while (i < m->nunmet)
	{
		uint32		table = m->unmet[i].table;
		Relation	rel;
		AttrNumber	att[NCOLS];
		ColumnarReadState *rs;

		if (table >= (uint32) list_length(tables))
			damaged_share();
		rel = list_nth(tables, (int) table);
		if (!find_columns(rel, att))
			damaged_share();
		rs = columnar_read_begin(rel, GetActiveSnapshot(), bms_make_singleton(att[COL_STACK]), NIL);
		for (; i < m->nunmet && m->unmet[i].table == table; i++)
		{
			const StackById *s = &m->unmet[i];
			int			ndict;
			char	  **dict;
			struct varlena *stack;
			bool		found;
			KnownStack *known;

			CHECK_FOR_INTERRUPTS();
			if (s->stripe > (uint32) PG_INT32_MAX)
				damaged_share();
			dict = columnar_read_dictionary(rs, att[COL_STACK], (int) s->stripe, &ndict);
			if (s->entry >= (uint32) ndict)
				damaged_share();
			stack = (struct varlena *) dict[s->entry];
			if (parca_hash64(VARDATA_ANY(stack), VARSIZE_ANY_EXHDR(stack)) != s->id)
				damaged_share();
			known = known_stacks_insert(known_ids, s->id, &found);
			if (found)
				profile_builder_add_value(b, known->number, s->value);
			else
				known->number = profile_builder_add(b, VARDATA_ANY(stack), stack_nframes(stack),
													s->value, 0);
		}
		columnar_read_end(rs);
	}
	m->nunmet = 0;
}

/* The columns of a chunk group that merge_scan_table reads. */
typedef struct GroupColumns
{
	int			nrows;
	const Datum *time;			/* NULL: every row's time is in the range */
	const Datum *series;		/* NULL: every row's series is asked for */
	const Datum *value;
	const Datum *period;
	const Datum *stack;
	const bool *time_null;
	const bool *series_null;
	const bool *value_null;
	const bool *period_null;	/* NULL: the group has no NULL period */
	bool		period_shared;	/* every row has period_value (not NULL) */
	int64		period_value;
	const bool *stack_null;
	const int64 *entry;			/* the stacks' dictionary entries, or NULL */
} GroupColumns;

/* Whether any of n flags is set. */
static inline bool
any_set(const bool *flags, int n)
{
	return memchr(flags, true, n) != NULL;
}

/*
 * The rows of a chunk group that count, into m->sel and their groups into
 * m->sel_group; returns how many.  A row counts when its series is asked
 * for (check_series), its time is in [start, stop] (check_time), its
 * value is not NULL, and, when scaling, its period is not NULL.  Inlined
 * into callers whose constant arguments leave a loop without their
 * branches.
 */
static pg_attribute_always_inline int
select_rows_where(MergeScan *m, const GroupColumns *c, SeriesCacheSlot *series_cache,
				  bool check_series, bool check_time)
{
	const Datum *series = c->series;
	const Datum *time = c->time;
	const bool *series_null = c->series_null;
	const bool *time_null = c->time_null;
	const bool *value_null = c->value_null;
	const bool *period_null = m->scale ? c->period_null : NULL;
	int		   *sel = m->sel;
	int32	   *sel_group = m->sel_group;
	int			n = 0;

	/* start <= t <= stop as one unsigned comparison (start <= stop) */
	uint64		start = (uint64) m->start;
	uint64		range = (uint64) m->stop - start;

	/* the series of the run of rows before (rows come in runs of one series) */
	int64		run_sid = 0;
	int32		run_grp = -2;

	for (int r = 0; r < c->nrows; r++)
	{
		int32		grp = 0;

		if (check_series)
		{
			int64		sid = DatumGetInt64(series[r]);

			if (unlikely(run_grp == -2 || sid != run_sid))
			{
				run_sid = sid;
				run_grp = cached_series_group(m, series_cache, sid);
			}
			grp = run_grp;
			if (grp < 0 || series_null[r])
				continue;
		}
		/* after the series: in a group of several, most rows end there */
		if (check_time &&
			(time_null[r] || (uint64) DatumGetTimestampTz(time[r]) - start > range))
			continue;
		if (value_null[r] || (period_null && period_null[r]))
			continue;
		sel[n] = r;
		sel_group[n++] = grp;
	}
	return n;
}

/* Room in m->sel, m->sel_group and m->values for a chunk group's rows. */
static void
row_space(MergeScan *m, int nrows)
{
	if (m->sel_cap >= nrows)
		return;
	if (m->sel_cap > 0)
	{
		pfree(m->sel);
		pfree(m->sel_group);
		pfree(m->values);
		pfree(m->periods);
	}
	m->sel = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int) * nrows);
	m->sel_group = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * nrows);
	m->values = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * nrows);
	m->periods = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(Datum) * nrows);
	m->sel_cap = nrows;
}

static int
select_rows(MergeScan *m, const GroupColumns *c, bool all_pass, SeriesCacheSlot *series_cache)
{
	bool		check_series;
	bool		check_time;

	if (m->start > m->stop)
		return 0;
	/* a group that passes whole still needs each row's group */
	check_series = c->series && (!all_pass || m->ngroups > 1);
	check_time = c->time && !all_pass;
	if (check_series && check_time)
		return select_rows_where(m, c, series_cache, true, true);
	if (check_series)
		return select_rows_where(m, c, series_cache, true, false);
	if (check_time)
		return select_rows_where(m, c, series_cache, false, true);
	return select_rows_where(m, c, series_cache, false, false);
}

/*
 * The values of n rows (rows sel[i], rows 0 to n - 1 when sel is NULL)
 * into m->values, times their periods when scaling; notes the periods
 * met.  An overflow is raised after the loop, which then has no branch.
 */
static pg_attribute_always_inline void
row_values(MergeScan *m, const GroupColumns *c, const int *sel, int n, bool scale)
{
	const Datum *value = c->value;
	const Datum *period = c->period;
	const bool *period_nulls = c->period_null;
	int64	   *values = m->values;
	int64		known_min = m->known_min;
	bool		unknown_seen = m->unknown_seen;
	bool		overflow = false;

	for (int i = 0; i < n; i++)
	{
		int			r = sel ? sel[i] : i;
		bool		period_null = period_nulls && period_nulls[r];
		int64		v = DatumGetInt64(value[r]);
		int64		p = period_null ? 0 : DatumGetInt64(period[r]);

		known_min = p > 0 && p < known_min ? p : known_min;
		unknown_seen |= p <= 0 && !period_null;
		if (scale)
			overflow |= pg_mul_s64_overflow(v, p > 0 ? p : 1, &v);
		values[i] = v;
	}
	if (unlikely(overflow))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	m->known_min = known_min;
	m->unknown_seen = unknown_seen;
}

/* row_values() in a loop of its own for each case. */
static void
rows_values(MergeScan *m, const GroupColumns *c, const int *sel, int n)
{
	if (sel && m->scale)
		row_values(m, c, sel, n, true);
	else if (sel)
		row_values(m, c, sel, n, false);
	else if (m->scale)
		row_values(m, c, NULL, n, true);
	else
		row_values(m, c, NULL, n, false);
}

/*
 * Adds n rows of a chunk group: rows sel[i] of groups sel_group[i] (of
 * group 0, rows 0 to n - 1 when sel is NULL, without a stack dictionary:
 * add_rows_one_group() takes the others).
 */
static void
add_rows(MergeScan *m, const GroupColumns *c, const int *sel, const int32 *sel_group, int n)
{
	rows_values(m, c, sel, n);
	for (int i = 0; i < n; i++)
	{
		int			r = sel ? sel[i] : i;
		int32		grp = sel_group ? sel_group[i] : 0;

		if (c->entry)
		{
			StripeSums *ss = &m->ss[grp];
			uint32		number;

			sums_prepare(ss);
			number = entry_number_of(m, ss, m->builders[grp], c->entry[r]);
			profile_value_add(&ss->sums[number], m->values[i]);
		}
		else if (!c->stack_null[r])
		{
			struct varlena *st = (struct varlena *) DatumGetPointer(c->stack[r]);

			profile_builder_add(m->builders[grp], VARDATA_ANY(st),
								(int) (VARSIZE_ANY_EXHDR(st) / sizeof(uint64)), m->values[i], 0);
		}
	}
}

/*
 * Adds n rows (rows sel[i], rows first to first + n - 1 when sel is NULL)
 * of a group whose rows share the period, each its value times factor
 * into the sum of its stack, in one pass: the value's product and the
 * sum's overflow are raised after the loop, the product's first, as
 * row_values() would.
 */
static pg_attribute_always_inline void
add_rows_times(MergeScan *m, const GroupColumns *c, const int *sel, int first, int n,
			   int64 factor)
{
	StripeSums *ss = &m->ss[0];
	ProfileBuilder *b = m->builders[0];
	const Datum *value = c->value;
	const int64 *entry = c->entry;
	bool		product_overflow = false;
	bool		sum_overflow = false;

	for (int i = 0; i < n; i++)
	{
		int			r = sel ? sel[i] : first + i;
		uint32		number = entry_number_of(m, ss, b, entry[r]);
		int64		v;

		product_overflow |= pg_mul_s64_overflow(DatumGetInt64(value[r]), factor, &v);
		sum_overflow |= pg_add_s64_overflow(ss->sums[number], v, &ss->sums[number]);
	}
	if (unlikely(product_overflow))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("bigint out of range")));
	if (unlikely(sum_overflow))
		profile_value_overflow();
}

/* The notes of row_values(), once for rows that share their period. */
static inline void
note_shared_period(MergeScan *m, int64 period)
{
	if (period > 0 && period < m->known_min)
		m->known_min = period;
	m->unknown_seen |= period <= 0;
}

/*
 * The rows of a chunk group of several series, of which the query asks
 * for some, whose other filters pass whole: for the one group of a query,
 * of a stack dictionary and one period, none NULL.  Rows come in runs of
 * one series (a profile's samples of a type; stripes are sorted by
 * series): each run is asked for once and added whole, with no list of
 * its rows.
 */
static void
add_series_runs(MergeScan *m, const GroupColumns *c, SeriesCacheSlot *series_cache)
{
	const Datum *series = c->series;
	int64		period = c->period_value;
	int64		factor = m->scale && period > 0 ? period : 1;
	bool		added = false;
	int			r = 0;

	sums_prepare(&m->ss[0]);
	while (r < c->nrows)
	{
		int64		sid = DatumGetInt64(series[r]);
		int			end = r + 1;

		while (end < c->nrows && DatumGetInt64(series[end]) == sid)
			end++;
		if (cached_series_group(m, series_cache, sid) >= 0)
		{
			add_rows_times(m, c, NULL, r, end - r, factor);
			added = true;
		}
		r = end;
	}
	if (added)
		note_shared_period(m, period);
}

/*
 * add_rows() for the one group of a query without group_by: the values
 * first (row_values), then each added into the sum of its stack, in loops
 * of their own for each case; rows that share their period in one pass.
 */
static void
add_rows_one_group(MergeScan *m, const GroupColumns *c, const int *sel, int n)
{
	StripeSums *ss = &m->ss[0];
	ProfileBuilder *b = m->builders[0];
	const int64 *values = m->values;
	bool		overflow = false;
	int64		period = c->period_value;

	if (!c->entry)
	{
		add_rows(m, c, sel, NULL, n);
		return;
	}
	if (n == 0)
		return;
	sums_prepare(ss);
	if (c->period_shared)
	{
		note_shared_period(m, period);
		if (sel)
			add_rows_times(m, c, sel, 0, n, m->scale && period > 0 ? period : 1);
		else
			add_rows_times(m, c, NULL, 0, n, m->scale && period > 0 ? period : 1);
		return;
	}
	rows_values(m, c, sel, n);
	if (sel)
		for (int i = 0; i < n; i++)
		{
			uint32		number = entry_number_of(m, ss, b, c->entry[sel[i]]);

			overflow |= pg_add_s64_overflow(ss->sums[number], values[i], &ss->sums[number]);
		}
	else
		for (int i = 0; i < n; i++)
		{
			uint32		number = entry_number_of(m, ss, b, c->entry[i]);

			overflow |= pg_add_s64_overflow(ss->sums[number], values[i], &ss->sums[number]);
		}
	if (unlikely(overflow))
		profile_value_overflow();
}

/*
 * The n rows of m->sel to the sink, each with its value (times its period
 * when scaling and the period is known).
 */
static void
sink_rows(MergeScan *m, const GroupColumns *c, bool new_stripe, char **dict, int ndict, int n)
{
	rows_values(m, c, m->sel, n);
	if (!c->entry)
	{
		/* rows whose stack is NULL add nothing, as in SQL */
		int			kept = 0;

		for (int i = 0; i < n; i++)
			if (!c->stack_null[m->sel[i]])
			{
				m->sel[kept] = m->sel[i];
				m->values[kept++] = m->values[i];
			}
		n = kept;
	}
	m->sink->rows(m->sink, c->time, m->sel, m->values, n, c->entry, new_stripe, dict, ndict,
				  c->stack);
}

static bool
claim_share(void *arg)
{
	MergeScan  *m = arg;
	bool		ours = m->share_seen == m->share_claimed;

	if (ours)
		m->share_claimed = pg_atomic_fetch_add_u32(m->next_share, 1);
	m->share_seen++;
	return ours;
}

/*
 * How many shares each table of a parallel merge makes (plus 1, as
 * m->table_shares keeps them), counted by the leader as its workers start.
 */
void
merge_scan_count_shares(MergeScan *m, List *tables)
{
	ListCell   *lc;
	int			i = 0;

	foreach(lc, tables)
	{
		int64		count = columnar_share_count(lfirst(lc), GetActiveSnapshot(), MERGE_SHARE_ROWS);

		pg_atomic_write_u32(&m->table_shares[i++], (uint32) Min(count, PG_UINT32_MAX - 1) + 1);
	}
}

/*
 * Whether a worker can pass over table m->table unopened, its shares
 * counted as met: their count is known, and they all come before the share
 * it holds, so they are others'.  A worker's open of a table, its catalog
 * entries read into a new process, cost it 75 us or more (1.4 ms of its
 * 10 over 30 day partitions, of which it read 13 and opened all).
 */
bool
merge_scan_table_skipped(MergeScan *m)
{
	uint32		known = pg_atomic_read_u32(&m->table_shares[m->table]);

	if (known == 0 || (uint64) m->share_seen + (known - 1) > m->share_claimed)
		return false;
	m->share_seen += known - 1;
	return true;
}

/* Whether rel can be read here: columnar, with every column read. */
static bool
readable(Relation rel)
{
	AttrNumber	att[NCOLS];

	return columnar_is_columnar(rel) && find_columns(rel, att);
}

void
merge_scan_table(MergeScan *m, Relation rel)
{
	AttrNumber	att[NCOLS];
	List	   *preds;
	Bitmapset  *attrs = NULL;
	ColumnarReadState *rs;
	ColumnarGroup g;
	StripeSums *ss = m->ss;
	int			ngroups = m->ngroups;
	int			stripe = -1;
	bool		new_stripe = false;
	SeriesCacheSlot series_cache[SERIES_CACHE_SIZE];
	uint32		shares_before = m->share_seen;

	(void) find_columns(rel, att);
	preds = list_make3(predicate(att[COL_TIME], BTGreaterEqualStrategyNumber, F_TIMESTAMP_CMP,
								 TimestampTzGetDatum(m->start)),
					   predicate(att[COL_TIME], BTLessEqualStrategyNumber, F_TIMESTAMP_CMP,
								 TimestampTzGetDatum(m->stop)),
					   predicate(att[COL_SERIES], COLUMNAR_STRATEGY_ANY, F_BTINT8CMP,
								 PointerGetDatum(m->id_array)));
	for (int c = 0; c < NCOLS; c++)
		attrs = bms_add_member(attrs, att[c]);
	for (int i = 0; i < SERIES_CACHE_SIZE; i++)
	{
		series_cache[i].id = 0;
		series_cache[i].group = -2;
	}

	rs = columnar_read_begin(rel, GetActiveSnapshot(), attrs, preds);
	/* the sink reads the stacks themselves, and the times */
	if (!m->sink)
	{
		columnar_read_by_ids(rs, att[COL_STACK]);
		columnar_read_filter_only(rs, att[COL_TIME]);
	}
	/* several groups need each row's series */
	if (ngroups == 1)
		columnar_read_filter_only(rs, att[COL_SERIES]);
	/* a group's rows mostly share a period: taken once (add_rows_times) */
	if (ngroups == 1 && !m->sink)
		columnar_read_constant_ok(rs, att[COL_PERIOD]);
	/*
	 * of a group that the range cuts, the values and periods of the rows
	 * in it (the rows outside are NULL there, and select_rows drops them)
	 */
	columnar_read_row_window(rs, att[COL_TIME]);
	if (m->next_share)
		columnar_read_share_stripes(rs, claim_share, m, m->leader, MERGE_SHARE_ROWS);
	m->rs = rs;
	m->stack_att = att[COL_STACK];
	/* entry numbers are the table's own */
	if (ngroups == 1 && !m->sink)
	{
		if (ss[0].by_entry == NULL)
			by_entry_set(&ss[0], 0, PG_UINT32_MAX);
		memset(ss[0].by_entry, 0xff, sizeof(uint32) * ss[0].by_entry_cap);
	}
	while (columnar_read_next_group(rs, &g))
	{
		GroupColumns c;

		c.nrows = g.nrows;
		c.time = g.values[att[COL_TIME] - 1];
		c.series = g.values[att[COL_SERIES] - 1];
		c.value = g.values[att[COL_VALUE] - 1];
		c.period = g.values[att[COL_PERIOD] - 1];
		c.stack = g.values[att[COL_STACK] - 1];
		c.time_null = g.nulls[att[COL_TIME] - 1];
		c.series_null = g.nulls[att[COL_SERIES] - 1];
		c.value_null = g.nulls[att[COL_VALUE] - 1];
		c.period_null = g.nulls[att[COL_PERIOD] - 1];
		c.stack_null = g.nulls[att[COL_STACK] - 1];
		c.entry = g.dict_index[att[COL_STACK] - 1];
		row_space(m, c.nrows);
		c.period_shared = c.period == NULL;
		c.period_value = c.period_shared ? DatumGetInt64(g.constants[att[COL_PERIOD] - 1]) : 0;
		if (c.period_shared && !c.entry)
		{
			/* rows without a stack dictionary read an array */
			for (int r = 0; r < c.nrows; r++)
				m->periods[r] = g.constants[att[COL_PERIOD] - 1];
			c.period = m->periods;
		}
		if (c.period_null && !any_set(c.period_null, c.nrows))
			c.period_null = NULL;

		if (c.entry)
		{
			for (int k = 0; k < ngroups; k++)
			{
				ss[k].dict = g.dicts[att[COL_STACK] - 1];
				ss[k].ndict = g.dict_sizes[att[COL_STACK] - 1];
				ss[k].ids = g.dict_ids ? g.dict_ids[att[COL_STACK] - 1] : NULL;
				ss[k].entries = g.dict_entries ? g.dict_entries[att[COL_STACK] - 1] : NULL;
				ss[k].stripe = g.stripe;
			}
		}
		if (g.stripe != stripe)
		{
			for (int k = 0; k < ngroups && !m->sink; k++)
				sums_new_stripe(&ss[k]);
			if (ngroups == 1 && !m->sink && c.entry && ss[0].entries)
			{
				sums_prepare(&ss[0]);

				/*
				 * none met: a table's first stripe, whose rows read its
				 * ids anyway, and whose stacks are mostly, entry by entry,
				 * those of the table before (days of the same programs)
				 */
				if (sums_take_entries(&ss[0]) == 0)
				{
					ss[0].ids = columnar_read_dictionary_ids(rs, att[COL_STACK], g.stripe);
					sums_take_guesses(&ss[0]);
				}
			}
			else if (ngroups == 1 && !m->sink && c.entry && ss[0].ids)
				sums_take_guesses(&ss[0]);
			stripe = g.stripe;
			new_stripe = true;
		}

		if (m->sink)
		{
			int			n = select_rows(m, &c, g.all_pass, series_cache);

			sink_rows(m, &c, new_stripe, c.entry ? g.dicts[att[COL_STACK] - 1] : NULL,
					  c.entry ? g.dict_sizes[att[COL_STACK] - 1] : 0, n);
			new_stripe = false;
		}
		else if (ngroups == 1 && g.all_pass && !any_set(c.value_null, c.nrows) &&
			!(m->scale && c.period_null))
		{
			/* every row counts: no list of them */
			add_rows_one_group(m, &c, NULL, c.nrows);
		}
		else if (ngroups == 1 && c.entry && c.period_shared && c.series && !c.time &&
				 !any_set(c.series_null, c.nrows) && !any_set(c.value_null, c.nrows) &&
				 m->start <= m->stop)
			add_series_runs(m, &c, series_cache);
		else
		{
			int			n = select_rows(m, &c, g.all_pass, series_cache);

			if (ngroups == 1)
				add_rows_one_group(m, &c, m->sel, n);
			else
				add_rows(m, &c, m->sel, m->sel_group, n);
		}
	}
	columnar_read_end(rs);
	m->rs = NULL;
	/* a process that passed the table by its count met as many shares */
	if (m->next_share)
	{
		uint32		counted = pg_atomic_read_u32(&m->table_shares[m->table]);

		if (counted != 0 && m->share_seen - shares_before != counted - 1)
			elog(ERROR, "parallel merge: table %d has %u shares, counted %u", m->table,
				 m->share_seen - shares_before, counted - 1);
	}
}

/* m's series, time range and sums, for reading rows of those series. */
void
merge_scan_setup(MergeScan *m, const int64 *series_ids, const int32 *groups, int nseries,
		   TimestampTz start, TimestampTz stop, bool scale)
{
	SeriesGroup *series;
	Datum	   *id_datums;

	/* the series, sorted for lookups; as an array for chunk skipping */
	series = palloc(sizeof(SeriesGroup) * Max(nseries, 1));
	for (int i = 0; i < nseries; i++)
	{
		series[i].id = series_ids[i];
		series[i].group = groups ? groups[i] : 0;
	}
	sort_series_ids(series, nseries);
	id_datums = palloc(sizeof(Datum) * Max(nseries, 1));
	for (int i = 0; i < nseries; i++)
		id_datums[i] = Int64GetDatum(series[i].id);

	m->series = series;
	m->nseries = nseries;
	m->id_array = construct_array(id_datums, nseries, INT8OID, 8, FLOAT8PASSBYVAL,
								  TYPALIGN_DOUBLE);
	m->start = start;
	m->stop = stop;
	m->scale = scale;
	m->known_min = PG_INT64_MAX;
	m->ss = palloc0(sizeof(StripeSums) * m->ngroups);
	/* small at first: a group_by may have many groups of few stacks */
	for (int k = 0; k < m->ngroups && !m->sink; k++)
		m->ss[k].known = known_stacks_create(CurrentMemoryContext, 256, NULL);
}

/*
 * merge_scan_samples() and merge_scan_rows(): m's builders or its sink
 * given, the rest set here.
 */
static bool
merge_scan(MergeScan *m, Oid relid, const int64 *series_ids, const int32 *groups, int nseries,
		   TimestampTz start, TimestampTz stop, bool scale, MergePeriods *periods)
{
	Relation	rel;
	List	   *tables = NIL;
	ListCell   *lc;
	bool		ok;
	int			nworkers;

	/* a Citus table's rows are in its shards: SQL, which Citus distributes */
	if (citus_table(relid))
		return false;
	rel = try_table_open(relid, AccessShareLock);
	/* dropped since its OID was looked up: the SQL merge says so by name */
	if (rel == NULL)
		return false;
	ok = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK &&
		!samples_table_rls_hides_rows(rel);
	if (ok && rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/*
		 * The partitions whose time ranges meet [start, stop]: all of them
		 * read here, or none (the SQL merge then reads them all).  Rights
		 * and row-level security are those of parca.samples, as for a query
		 * through it.  Listed under the parent's lock, which a partition's
		 * DROP waits for; one detached (CONCURRENTLY) and dropped since has
		 * no rows left to read.
		 */
		bool		routable;
		List	   *oids = samples_table_partitions_between(rel, start, stop, &routable);

		ok = routable;
		foreach(lc, oids)
		{
			Relation	part = try_table_open(lfirst_oid(lc), AccessShareLock);

			if (part == NULL)
				continue;
			tables = lappend(tables, part);
			ok = ok && readable(part);
		}
	}
	else if (ok)
	{
		ok = readable(rel);
		tables = list_make1(rel);
	}

	/*
	 * Every table is closed keeping its lock until the transaction ends, as
	 * the executor keeps a scan's: a partition read here is not dropped
	 * (by retention) under a REPEATABLE READ transaction that reads it
	 * again, and the SQL merge would take the same locks.
	 */
	if (!ok)
	{
		foreach(lc, tables)
			if (lfirst(lc) != rel)
				table_close(lfirst(lc), NoLock);
		table_close(rel, NoLock);
		return false;
	}

	merge_scan_setup(m, series_ids, groups, nseries, start, stop, scale);
	nworkers = merge_scan_parallel_workers(m, tables);
	if (nworkers > 0)
		merge_scan_parallel(m, tables, nworkers);
	else
	{
		foreach(lc, tables)
			merge_scan_table(m, lfirst(lc));
		merge_scan_sums_to_builders(m);
	}
	foreach(lc, tables)
		if (lfirst(lc) != rel)
			table_close(lfirst(lc), NoLock);
	table_close(rel, NoLock);
	if (m->known_min != PG_INT64_MAX &&
		(periods->min_known == 0 || m->known_min < periods->min_known))
		periods->min_known = m->known_min;
	periods->unknown_seen |= m->unknown_seen;
	return true;
}

bool
merge_scan_samples(ProfileBuilder **builders, int ngroups, Oid relid, const int64 *series_ids,
				   const int32 *groups, int nseries, TimestampTz start, TimestampTz stop,
				   bool scale, MergePeriods *periods, struct ParallelContext **exiting)
{
	MergeScan	m;

	memset(&m, 0, sizeof(m));
	m.builders = builders;
	m.ngroups = ngroups;
	m.exiting = exiting;
	return merge_scan(&m, relid, series_ids, groups, nseries, start, stop, scale, periods);
}

bool
merge_scan_rows(MergeRowSink *sink, Oid relid, const int64 *series_ids, int nseries,
				TimestampTz start, TimestampTz stop, bool scale, MergePeriods *periods)
{
	MergeScan	m;

	memset(&m, 0, sizeof(m));
	m.sink = sink;
	m.ngroups = 1;
	return merge_scan(&m, relid, series_ids, NULL, nseries, start, stop, scale, periods);
}
