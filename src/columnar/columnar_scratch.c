/*
 * columnar_scratch.c
 *		Buffers that outlive a scan: the bytes of chunks (as stored and
 *		decompressed), decoded dictionaries and decoded chunk groups.
 *
 * A scan of a big stripe needs megabytes of them (a dictionary of 20,000
 * stacks is 4.5 MB raw).  Allocated with the scan and freed at its end,
 * they went back to the kernel through glibc (large blocks are mapped and
 * unmapped, the heap's top is trimmed), so that every scan, and every
 * partition of a parca_query, faulted them in afresh.  The backend keeps
 * the buffers that scans give back, up to parca.columnar_scan_cache, and
 * hands them to the next scans; what is above it is freed.
 *
 * A scan's buffers are StringInfos that it registers with its
 * ColumnarScratch, which gives them back when the scan's memory context
 * is reset or deleted: at the scan's end, and at the end of a query or
 * transaction that an error or a cancel interrupted.  A buffer is held by
 * one scan at a time, so that two scans open at once never share one.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "columnar/columnar_internal.h"

/* At most this many buffers are kept. */
#define SCRATCH_MAX_KEPT 64

struct ColumnarScratch
{
	MemoryContextCallback callback;
	StringInfo *held;			/* the buffers registered, in cxt */
	int			nheld;
	int			maxheld;
};

typedef struct KeptBuffer
{
	char	   *data;
	Size		size;
} KeptBuffer;

static MemoryContext scratch_cxt;
static KeptBuffer kept[SCRATCH_MAX_KEPT];
static int	nkept;
static Size kept_bytes;

static void
forget_kept(int i)
{
	kept_bytes -= kept[i].size;
	kept[i] = kept[--nkept];
}

/* Keep a buffer that a scan gives back, freeing the smallest above the cap. */
static void
give_back(char *data, Size size)
{
	Size		cap = (Size) columnar_scan_cache_kb * 1024;

	if (nkept == SCRATCH_MAX_KEPT || size > cap)
	{
		pfree(data);
		return;
	}
	kept[nkept].data = data;
	kept[nkept].size = size;
	nkept++;
	kept_bytes += size;
	while (kept_bytes > cap)
	{
		int			smallest = 0;

		for (int i = 1; i < nkept; i++)
			if (kept[i].size < kept[smallest].size)
				smallest = i;
		pfree(kept[smallest].data);
		forget_kept(smallest);
	}
}

/* A buffer of at least size bytes: the smallest kept one that fits, or new. */
static char *
take(Size size, Size *got)
{
	int			best = -1;
	char	   *data;

	for (int i = 0; i < nkept; i++)
		if (kept[i].size >= size && (best < 0 || kept[i].size < kept[best].size))
			best = i;
	if (best >= 0)
	{
		data = kept[best].data;
		*got = kept[best].size;
		forget_kept(best);
		return data;
	}
	if (scratch_cxt == NULL)
		scratch_cxt = AllocSetContextCreate(TopMemoryContext, "parca_columnar scan buffers",
											ALLOCSET_DEFAULT_SIZES);
	size = Max(size, COLUMNAR_SCRATCH_MIN_BYTES);
	size = TYPEALIGN(COLUMNAR_SCRATCH_MIN_BYTES, size);
	data = MemoryContextAllocHuge(scratch_cxt, size);
	*got = size;
	return data;
}

static void
give_back_held(void *arg)
{
	ColumnarScratch *sc = arg;

	for (int i = 0; i < sc->nheld; i++)
	{
		StringInfo	buf = sc->held[i];

		if (buf->data != NULL)
			give_back(buf->data, (Size) buf->maxlen);
		buf->data = NULL;
	}
	sc->nheld = 0;
}

/*
 * A scan's set of buffers, given back when cxt is reset or deleted.  The
 * StringInfos registered must live in cxt itself (not in a child, which
 * is deleted first).
 */
ColumnarScratch *
columnar_scratch_create(MemoryContext cxt)
{
	ColumnarScratch *sc = MemoryContextAllocZero(cxt, sizeof(ColumnarScratch));

	sc->maxheld = 8;
	sc->held = MemoryContextAlloc(cxt, sizeof(StringInfo) * sc->maxheld);
	sc->callback.func = give_back_held;
	sc->callback.arg = sc;
	MemoryContextRegisterResetCallback(cxt, &sc->callback);
	return sc;
}

/*
 * Make buf (zeroed before its first use) an empty buffer with room for
 * size bytes, from the buffers kept.  What it held is not kept.
 */
void
columnar_scratch_reserve(ColumnarScratch *sc, StringInfo buf, Size size)
{
	Size		got;

	if (buf->data != NULL && (Size) buf->maxlen > size)
	{
		resetStringInfo(buf);
		return;
	}
	if (size >= MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a columnar scan buffer of %zu bytes is larger than the maximum allocation size",
						size)));
	if (buf->data == NULL)
	{
		if (sc->nheld == sc->maxheld)
		{
			sc->held = repalloc(sc->held, sizeof(StringInfo) * sc->maxheld * 2);
			sc->maxheld *= 2;
		}
		sc->held[sc->nheld++] = buf;
	}
	else
	{
		give_back(buf->data, (Size) buf->maxlen);
		buf->data = NULL;
	}
	buf->data = take(size + 1, &got);
	buf->maxlen = (int) Min(got, (Size) MaxAllocSize);
	resetStringInfo(buf);
}

/*
 * Room for size bytes: in space (a kept buffer, zeroed before its first
 * use) when one is given and can hold them, else fresh memory of cxt,
 * for sizes no buffer may have.
 */
char *
columnar_scratch_alloc(ColumnarScratch *sc, StringInfo space, Size size, MemoryContext cxt)
{
	if (space == NULL || size >= MaxAllocSize)
		return MemoryContextAllocHuge(cxt, size);
	columnar_scratch_reserve(sc, space, size);
	return space->data;
}
