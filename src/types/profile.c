/*
 * profile.c
 *		The profile type: building, serializing and reading merged profiles.
 *
 * A builder keeps one entry per distinct stack, in an array in the order
 * the stacks came, and finds them through a simplehash table of their
 * indexes; a stack not yet there is copied into an arena owned by the
 * builder's memory context, so adding millions of samples costs one hash
 * probe each and no per-sample allocation or copy.  The table holds only
 * an index and a hash per stack so that it stays in the CPU's cache: a
 * merge adds the stacks of many stripes, most already there and in much
 * the same order each time, so that the entries and the arena are then
 * read in order, and only the table at random.  finish() writes the
 * entries sorted by stack so that equal profiles serialize to equal bytes.
 */
#include "postgres.h"

#include "common/int.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "types/profile.h"
#include "types/stacktrace.h"
#include "keyed_hash/keyed_hash.h"

/*
 * A stack: its frames (unaligned as given; in the arena, 8-byte aligned)
 * and their byte length.  Lookups use the caller's bytes as they are, so
 * only a stack not yet in the table is copied.
 */
typedef struct StackKey
{
	const char *frames;
	uint32		nbytes;
} StackKey;

typedef struct StackEntry
{
	StackKey	key;			/* the frames are in the arena */
	int64		value;
	int64		value_right;
} StackEntry;

/* A bucket of the table: the index of a stack's entry, and its hash. */
typedef struct StackBucket
{
	uint32		entry;
	uint32		hash;
	char		status;
} StackBucket;

/* The index that stands for the stack being looked up (ProfileBuilder.probe). */
#define PROBE_ENTRY PG_UINT32_MAX

static inline uint64
load_frame(const char *p)
{
	uint64		v;

	memcpy(&v, p, sizeof(uint64));
	return v;
}

struct ProfileBuilder
{
	MemoryContext cxt;
	struct stackmap_hash *map;
	StackEntry *entries;		/* [nentries], in the order added */
	uint32		nentries;
	uint32		entries_cap;
	StackKey	probe;			/* the stack being looked up */
	ProfileMeta meta;
	char	   *arena;			/* free space in the current arena chunk */
	Size		arena_left;
	struct SortItem *sorted;	/* the entries in stack order, if made */
	uint32		nsorted;		/* how many entries there were then */
};

/* The stack of a bucket's index. */
static inline const StackKey *
bucket_key(const ProfileBuilder *b, uint32 entry)
{
	return entry == PROBE_ENTRY ? &b->probe : &b->entries[entry].key;
}

/* Keyed: frames are location ids, which ingesting roles choose (keyed_hash.h). */
static inline uint32
stack_hash(const StackKey *key)
{
	return keyed_hash_bytes(key->frames, key->nbytes);
}

static inline bool
stack_equal(const StackKey *a, const StackKey *b)
{
	return a->nbytes == b->nbytes && memcmp(a->frames, b->frames, a->nbytes) == 0;
}

#define SH_PREFIX stackmap
#define SH_ELEMENT_TYPE StackBucket
#define SH_KEY_TYPE uint32
#define SH_KEY entry
#define SH_HASH_KEY(tb, k) stack_hash(bucket_key((tb)->private_data, k))
#define SH_EQUAL(tb, a, b) stack_equal(bucket_key((tb)->private_data, a), \
									   bucket_key((tb)->private_data, b))
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) ((a)->hash)
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

#define ARENA_CHUNK_SIZE (64 * 1024)
#define PROFILE_HEADER_SIZE (1 + 1 + 2 + 8 + 4)

ProfileBuilder *
profile_builder_create(MemoryContext cxt)
{
	ProfileBuilder *b = MemoryContextAllocZero(cxt, sizeof(ProfileBuilder));

	b->cxt = cxt;
	b->map = stackmap_create(cxt, 1024, b);
	b->entries_cap = 1024;
	b->entries = MemoryContextAlloc(cxt, sizeof(StackEntry) * b->entries_cap);
	b->meta.profile_type = "";
	return b;
}

void
profile_builder_set_meta(ProfileBuilder *b, const ProfileMeta *meta)
{
	b->meta.profile_type = MemoryContextStrdup(b->cxt, meta->profile_type ? meta->profile_type : "");
	b->meta.period = meta->period;
	b->meta.is_diff = meta->is_diff;
}

/* A copy of frames in the builder's arena, 8-byte aligned. */
static const char *
arena_store(ProfileBuilder *b, const char *frames, uint32 nbytes)
{
	Size		size = MAXALIGN(Max(nbytes, 1));
	char	   *copy;

	if (size > b->arena_left)
	{
		Size		chunk = Max(size, ARENA_CHUNK_SIZE);

		b->arena = MemoryContextAlloc(b->cxt, chunk);
		b->arena_left = chunk;
	}
	copy = b->arena;
	b->arena += size;
	b->arena_left -= size;
	memcpy(copy, frames, nbytes);
	return copy;
}

void
profile_value_overflow(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("profile value out of range: a sum exceeds 64 bits")));
}

uint32
profile_builder_add(ProfileBuilder *b, const char *frames, int nframes,
					int64 value, int64 value_right)
{
	StackBucket *bucket;
	StackEntry *entry;
	bool		found;

	if ((Size) nframes > PG_UINT32_MAX / sizeof(uint64))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("stack of %d frames is too deep", nframes)));
	b->probe.frames = frames;
	b->probe.nbytes = (uint32) nframes * sizeof(uint64);
	bucket = stackmap_insert(b->map, PROBE_ENTRY, &found);
	if (found)
	{
		entry = &b->entries[bucket->entry];
		profile_value_add(&entry->value, value);
		profile_value_add(&entry->value_right, value_right);
		return bucket->entry;
	}
	if (b->nentries == b->entries_cap)
	{
		/* fewer entries than PROBE_ENTRY, which stands for none of them */
		if (b->entries_cap >= PROBE_ENTRY / 2)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("profile has too many distinct stacks")));
		b->entries_cap *= 2;
		b->entries = repalloc_huge(b->entries, sizeof(StackEntry) * b->entries_cap);
	}
	bucket->entry = b->nentries;
	entry = &b->entries[b->nentries++];
	entry->key.frames = arena_store(b, frames, b->probe.nbytes);
	entry->key.nbytes = b->probe.nbytes;
	entry->value = value;
	entry->value_right = value_right;
	return bucket->entry;
}

bool
profile_builder_add_to(ProfileBuilder *b, uint32 n, const char *frames, int nframes, int64 value)
{
	StackEntry *entry;

	if (n >= b->nentries || nframes < 0)
		return false;
	entry = &b->entries[n];
	if (entry->key.nbytes != (Size) nframes * sizeof(uint64) ||
		memcmp(entry->key.frames, frames, entry->key.nbytes) != 0)
		return false;
	profile_value_add(&entry->value, value);
	return true;
}

void
profile_builder_add_value(ProfileBuilder *b, uint32 n, int64 value)
{
	if (n >= b->nentries)
		elog(ERROR, "profile builder has no stack %u", n);
	profile_value_add(&b->entries[n].value, value);
}

void
profile_builder_add_profile(ProfileBuilder *b, const struct varlena *profile)
{
	ProfileReader r;
	ProfileSample s;

	profile_reader_init(&r, profile);
	if (r.meta.is_diff)
		b->meta.is_diff = true;
	if (b->meta.profile_type[0] == '\0' && r.meta.profile_type[0] != '\0')
		b->meta.profile_type = MemoryContextStrdup(b->cxt, r.meta.profile_type);
	if (b->meta.period == 0)
		b->meta.period = r.meta.period;
	while (profile_reader_next(&r, &s))
		profile_builder_add(b, s.frames, s.nframes, s.value, s.value_right);
}

int64
profile_builder_nstacks(const ProfileBuilder *b)
{
	return (int64) b->nentries;
}

const char *
profile_builder_stack(const ProfileBuilder *b, uint32 n, int *nframes, int64 *value)
{
	if (n >= b->nentries)
		elog(ERROR, "profile builder has no stack %u", n);
	*nframes = (int) (b->entries[n].key.nbytes / sizeof(uint64));
	*value = b->entries[n].value;
	return b->entries[n].key.frames;
}

/*
 * Stacks are sorted in order of their frames as unsigned 64-bit numbers,
 * then of length (a stack before the stacks it is a prefix of), one depth
 * at a time: the entries are sorted by their first frame, then each run of
 * entries with the same first frame by their second, and so on.  A stack
 * is read once per depth that does not yet tell it apart, rather than
 * once per comparison: the stacks of one program share long runs of
 * frames (of the 20,430 of google-pprof/large.cpu, 18,187 have the same
 * leaf, and the same frame under it; told apart at 3.9 frames on average).
 * A run of many entries is ordered by a radix sort of its frames, which
 * moves each entry once per byte that differs among them: a quicksort
 * compared each about 15 times there, mispredicting half (1.5 ms against
 * 0.5 for 20,000 entries).  Entries are named by their index, so that an
 * order made stays right while the entries array grows.
 */
struct SortItem
{
	uint64		frame;			/* the frame at the depth sorted on */
	uint32		entry;			/* the index of its StackEntry */
	uint32		nframes;
};
typedef struct SortItem SortItem;

#define ST_SORT sort_items
#define ST_ELEMENT_TYPE SortItem
#define ST_COMPARE(a, b) (((a)->frame > (b)->frame) - ((a)->frame < (b)->frame))
#define ST_SCOPE static
#define ST_DECLARE
#define ST_DEFINE
#include "lib/sort_template.h"

/* Runs shorter than this take the quicksort: a radix sort clears 8 kB. */
#define RADIX_SORT_MIN 256

/*
 * items[0 .. n - 1] ordered by frame, stably, 8 bits a pass from the
 * lowest; a byte equal in every item costs no pass.  tmp has room for n.
 */
static void
radix_sort_items(SortItem *items, SortItem *tmp, uint32 n)
{
	uint32		counts[8][256];
	SortItem   *from = items;
	SortItem   *to = tmp;

	memset(counts, 0, sizeof(counts));
	for (uint32 i = 0; i < n; i++)
		for (int pass = 0; pass < 8; pass++)
			counts[pass][(items[i].frame >> (pass * 8)) & 0xff]++;
	for (int pass = 0; pass < 8; pass++)
	{
		uint32	   *start = counts[pass];
		uint32		sum = 0;
		SortItem   *swap;

		if (start[(items[0].frame >> (pass * 8)) & 0xff] == n)
			continue;
		for (int d = 0; d < 256; d++)
		{
			uint32		c = start[d];

			start[d] = sum;
			sum += c;
		}
		for (uint32 i = 0; i < n; i++)
			to[start[(from[i].frame >> (pass * 8)) & 0xff]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != items)
		memcpy(items, from, sizeof(SortItem) * n);
}

/* Entries items[first .. first + n - 1], whose frames above depth are equal. */
typedef struct SortRange
{
	uint32		first;
	uint32		n;
	uint32		depth;
} SortRange;

static void
sort_stacks(const StackEntry *entries, SortItem *items, uint32 n)
{
	/* ranges of two entries or more, disjoint: at most n / 2 at once */
	SortRange  *todo = palloc_extended(sizeof(SortRange) * (n / 2 + 1), MCXT_ALLOC_HUGE);
	SortItem   *tmp = n >= RADIX_SORT_MIN ?
		palloc_extended(sizeof(SortItem) * n, MCXT_ALLOC_HUGE) : NULL;
	int			ntodo = 0;

	for (uint32 i = 0; i < n; i++)
		items[i].nframes = entries[items[i].entry].key.nbytes / sizeof(uint64);
	if (n > 1)
		todo[ntodo++] = (SortRange) {0, n, 0};
	while (ntodo > 0)
	{
		SortRange	r = todo[--ntodo];
		SortItem   *it = items + r.first;
		Size		off = (Size) r.depth * sizeof(uint64);
		uint32		first = 0;
		uint32		run;

		CHECK_FOR_INTERRUPTS();

		/*
		 * A stack that ends here goes first; the stacks are distinct, so
		 * there is at most one (more would only end the range all the same)
		 */
		for (uint32 i = 0; i < r.n; i++)
		{
			if (it[i].nframes <= r.depth)
			{
				SortItem	ended = it[i];

				it[i] = it[first];
				it[first++] = ended;
			}
		}
		for (uint32 i = first; i < r.n; i++)
			it[i].frame = load_frame(entries[it[i].entry].key.frames + off);
		if (r.n - first >= RADIX_SORT_MIN)
			radix_sort_items(it + first, tmp, r.n - first);
		else
			sort_items(it + first, r.n - first);
		/* runs of the same frame go one deeper */
		run = first;
		for (uint32 i = first + 1; i <= r.n; i++)
		{
			if (i < r.n && it[i].frame == it[run].frame)
				continue;
			if (i - run > 1)
				todo[ntodo++] = (SortRange) {r.first + run, i - run, r.depth + 1};
			run = i;
		}
	}
	pfree(todo);
	if (tmp)
		pfree(tmp);
}

/* <0, 0, >0 as entry a's stack sorts before, with, after entry b's. */
static inline int
compare_stacks(const StackEntry *a, const StackEntry *b)
{
	return stacktrace_frames_compare(a->key.frames, (int) (a->key.nbytes / sizeof(uint64)),
									 b->key.frames, (int) (b->key.nbytes / sizeof(uint64)));
}

/*
 * The first of sorted[from .. n - 1] whose stack sorts after entry x's:
 * galloping from `from`, then halving, so that k stacks placed in order
 * among n cost about k log(n / k) comparisons.
 */
static uint32
place_after(const ProfileBuilder *b, const SortItem *sorted, uint32 from, uint32 n, uint32 x)
{
	const StackEntry *stack = &b->entries[x];
	uint32		lo = from;
	uint32		hi = from;
	uint64		step = 1;

	while (hi < n && compare_stacks(&b->entries[sorted[hi].entry], stack) < 0)
	{
		lo = hi + 1;
		hi = n - hi > step ? hi + (uint32) step : n;
		step *= 2;
	}
	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (compare_stacks(&b->entries[sorted[mid].entry], stack) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The order depends only on the stacks, not on their values: it stays
 * right until a stack is added.  The stacks added since an order was made
 * are sorted alone and placed into it (a parallel leader orders the
 * stacks of its own stripes while its workers read, and then has few of
 * theirs left to place).
 */
void
profile_builder_sort(ProfileBuilder *b)
{
	uint32		nold = b->sorted ? b->nsorted : 0;
	uint32		nnew = b->nentries - nold;
	SortItem   *added;
	SortItem   *merged;
	uint32		from = 0;
	uint32		out = 0;

	if (b->sorted != NULL && nnew == 0)
		return;
	/* as many as the entries, which may pass 1 GB (repalloc_huge) */
	added = MemoryContextAllocHuge(b->cxt, Max(nnew, 1) * sizeof(SortItem));
	for (uint32 i = 0; i < nnew; i++)
		added[i].entry = nold + i;
	sort_stacks(b->entries, added, nnew);
	if (nold == 0)
	{
		if (b->sorted != NULL)
			pfree(b->sorted);
		b->sorted = added;
		b->nsorted = nnew;
		return;
	}
	merged = MemoryContextAllocHuge(b->cxt, sizeof(SortItem) * b->nentries);
	for (uint32 i = 0; i < nnew; i++)
	{
		uint32		to = place_after(b, b->sorted, from, nold, added[i].entry);

		memcpy(merged + out, b->sorted + from, sizeof(SortItem) * (to - from));
		out += to - from;
		from = to;
		merged[out++] = added[i];
	}
	memcpy(merged + out, b->sorted + from, sizeof(SortItem) * (nold - from));
	pfree(b->sorted);
	pfree(added);
	b->sorted = merged;
	b->nsorted = b->nentries;
}

struct varlena *
profile_builder_finish(ProfileBuilder *b)
{
	SortItem   *sorted;
	uint32		n = b->nentries;
	Size		type_len = strlen(b->meta.profile_type);
	Size		per_value = b->meta.is_diff ? 16 : 8;
	Size		size = VARHDRSZ + PROFILE_HEADER_SIZE + type_len;
	struct varlena *result;
	char	   *p;
	uint8		version = PROFILE_VERSION;
	uint8		flags = b->meta.is_diff ? PROFILE_FLAG_DIFF : 0;
	uint16		type_len16;

	if (type_len > PG_UINT16_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("profile type name is too long")));
	type_len16 = (uint16) type_len;

	for (uint32 i = 0; i < n; i++)
		size += 4 + per_value + b->entries[i].key.nbytes;

	if (!AllocSizeIsValid(size))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("profile too large: %u distinct stacks need %zu bytes", n, size),
				 errhint("Narrow the query by labels or time range.")));
	profile_builder_sort(b);
	sorted = b->sorted;
	result = palloc(size);
	SET_VARSIZE(result, size);
	p = VARDATA(result);
#define PUT(src, len) do { memcpy(p, (src), (len)); p += (len); } while (0)
	PUT(&version, 1);
	PUT(&flags, 1);
	PUT(&type_len16, 2);
	PUT(&b->meta.period, 8);
	PUT(&n, 4);
	PUT(b->meta.profile_type, type_len);
	for (uint32 i = 0; i < n; i++)
	{
		const StackEntry *e = &b->entries[sorted[i].entry];
		uint32		nframes = e->key.nbytes / sizeof(uint64);

		PUT(&nframes, 4);
		PUT(&e->value, 8);
		if (b->meta.is_diff)
			PUT(&e->value_right, 8);
		PUT(e->key.frames, e->key.nbytes);
	}
#undef PUT
	Assert(p == (char *) result + size);
	return result;
}

/*
 * A damaged profile value: data corruption when read, bad input when it is
 * being typed in or received (r->bad_input).
 */
static void
corrupt_profile(const ProfileReader *r, const char *what)
{
	ereport(ERROR,
			(errcode(r->bad_input ? ERRCODE_INVALID_TEXT_REPRESENTATION : ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid profile value: %s", what)));
}

static void
profile_reader_start(ProfileReader *r, const struct varlena *profile, bool bad_input)
{
	const char *p = VARDATA_ANY(profile);
	Size		len = VARSIZE_ANY_EXHDR(profile);
	uint8		version,
				flags;
	uint16		type_len;
	char	   *type;

	r->bad_input = bad_input;
	if (len < PROFILE_HEADER_SIZE)
		corrupt_profile(r, "too short");
	memcpy(&version, p, 1);
	memcpy(&flags, p + 1, 1);
	memcpy(&type_len, p + 2, 2);
	memcpy(&r->meta.period, p + 4, 8);
	memcpy(&r->remaining, p + 12, 4);
	if (version != PROFILE_VERSION)
		corrupt_profile(r, "unknown format version");
	if (len < PROFILE_HEADER_SIZE + (Size) type_len)
		corrupt_profile(r, "truncated profile type");
	type = palloc(type_len + 1);
	memcpy(type, p + PROFILE_HEADER_SIZE, type_len);
	type[type_len] = '\0';
	r->meta.profile_type = type;
	r->meta.is_diff = (flags & PROFILE_FLAG_DIFF) != 0;
	r->pos = p + PROFILE_HEADER_SIZE + type_len;
	r->end = p + len;
}

void
profile_reader_init(ProfileReader *r, const struct varlena *profile)
{
	profile_reader_start(r, profile, false);
}

bool
profile_reader_next(ProfileReader *r, ProfileSample *s)
{
	uint32		nframes;
	Size		need;

	if (r->remaining == 0)
	{
		if (r->pos != r->end)
			corrupt_profile(r, "trailing bytes");
		return false;
	}
	if (r->end - r->pos < 12)
		corrupt_profile(r, "truncated sample");
	memcpy(&nframes, r->pos, 4);
	memcpy(&s->value, r->pos + 4, 8);
	r->pos += 12;
	s->value_right = 0;
	if (r->meta.is_diff)
	{
		if (r->end - r->pos < 8)
			corrupt_profile(r, "truncated sample");
		memcpy(&s->value_right, r->pos, 8);
		r->pos += 8;
	}
	need = (Size) nframes * sizeof(uint64);
	if (nframes > (uint32) (r->end - r->pos) / sizeof(uint64))
		corrupt_profile(r, "truncated stack");
	s->nframes = (int) nframes;
	s->frames = r->pos;
	r->pos += need;
	r->remaining--;
	return true;
}

/*
 * SQL-level I/O.  The text form is the serialized bytes in hex (as bytea
 * prints them), so that profiles kept in tables survive pg_dump; the
 * query functions are how people read a profile.
 */
PG_FUNCTION_INFO_V1(profile_in);
PG_FUNCTION_INFO_V1(profile_out);
PG_FUNCTION_INFO_V1(profile_recv);
PG_FUNCTION_INFO_V1(profile_send);
PG_FUNCTION_INFO_V1(parca_profile_type);
PG_FUNCTION_INFO_V1(parca_profile_period);
PG_FUNCTION_INFO_V1(parca_profile_stacks);
PG_FUNCTION_INFO_V1(parca_profile_total);

/* Reads every sample once, so a damaged value fails on input. */
static void
profile_validate(const struct varlena *profile)
{
	ProfileReader r;
	ProfileSample s;

	profile_reader_start(&r, profile, true);
	/* the type is shown as text: it must be valid in the database encoding */
	(void) pg_verifymbstr(r.meta.profile_type, strlen(r.meta.profile_type), false);
	while (profile_reader_next(&r, &s))
		;
}

static struct varlena *
profile_from_bytes(const char *data, Size len)
{
	struct varlena *profile = palloc(VARHDRSZ + len);

	SET_VARSIZE(profile, VARHDRSZ + len);
	memcpy(VARDATA(profile), data, len);
	profile_validate(profile);
	return profile;
}

Datum
profile_in(PG_FUNCTION_ARGS)
{
	Datum		bytes = DirectFunctionCall1(byteain, PG_GETARG_DATUM(0));
	bytea	   *b = DatumGetByteaPP(bytes);

	PG_RETURN_POINTER(profile_from_bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b)));
}

Datum
profile_out(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(byteaout, PointerGetDatum(PG_GETARG_PROFILE_P(0)));
}

Datum
profile_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	int			len = buf->len - buf->cursor;
	struct varlena *profile = profile_from_bytes(buf->data + buf->cursor, len);

	buf->cursor += len;
	PG_RETURN_POINTER(profile);
}

Datum
profile_send(PG_FUNCTION_ARGS)
{
	struct varlena *profile = PG_GETARG_PROFILE_P(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendbytes(&buf, VARDATA_ANY(profile), VARSIZE_ANY_EXHDR(profile));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

Datum
parca_profile_type(PG_FUNCTION_ARGS)
{
	ProfileReader r;

	profile_reader_init(&r, PG_GETARG_PROFILE_P(0));
	if (r.meta.profile_type[0] == '\0')
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(r.meta.profile_type));
}

Datum
parca_profile_period(PG_FUNCTION_ARGS)
{
	ProfileReader r;

	profile_reader_init(&r, PG_GETARG_PROFILE_P(0));
	PG_RETURN_INT64(r.meta.period);
}

Datum
parca_profile_stacks(PG_FUNCTION_ARGS)
{
	ProfileReader r;

	profile_reader_init(&r, PG_GETARG_PROFILE_P(0));
	PG_RETURN_INT64((int64) r.remaining);
}

/* Sum of all values (the base side, for a diff). */
Datum
parca_profile_total(PG_FUNCTION_ARGS)
{
	ProfileReader r;
	ProfileSample s;
	int64		total = 0;

	profile_reader_init(&r, PG_GETARG_PROFILE_P(0));
	while (profile_reader_next(&r, &s))
		profile_value_add(&total, s.value);
	PG_RETURN_INT64(total);
}
