/*
 * columnar_storage.c
 *		The blocks of a columnar table's main fork: the metapage (block 0)
 *		and the data pages of stripes (blocks 1..n).
 *
 * The metapage holds the format version, the storage id, which names the
 * relation's current storage in parca.columnar_stripes (a new one on
 * TRUNCATE), and the row number counter; it is changed with generic WAL.
 * Each stripe's data is on whole consecutive pages of its own: a page
 * holds COLUMNAR_PAGE_PAYLOAD bytes of a stripe's data after its header,
 * written with generic WAL as full page images before the stripe row that
 * points at them, so no torn stripe can be read.  A stripe's pages are a
 * run taken from the metapage's list of free runs when one is long
 * enough, else appended.  Only VACUUM fills that list
 * (columnar_compaction.c), with pages no stripe row refers to any more;
 * taking a run out of it is WAL-logged before its pages are written, so
 * after a crash the list never names a page in use (a run taken by a write
 * that never committed is found again by the next VACUUM).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xloginsert.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"

#include "columnar/columnar_internal.h"

/* ---- the metapage ---- */

static ColumnarBlockRun *
metapage_free_runs(ColumnarMetaPage *meta)
{
	return (ColumnarBlockRun *) (meta + 1);
}

/* pd_lower of a metapage with nfree runs: generic WAL logs up to there */
static void
metapage_set_lower(Page page, ColumnarMetaPage *meta)
{
	((PageHeader) page)->pd_lower =
		(char *) (metapage_free_runs(meta) + meta->nfree) - (char *) page;
}

/*
 * Write the metapage of new storage srel (the relcache entry still points
 * at the old storage, so this goes through smgr).
 */
void
columnar_init_metapage(Relation rel, SMgrRelation srel, bool wal, int64 storage_id)
{
	PGAlignedBlock buf;
	Page		page = (Page) buf.data;
	ColumnarMetaPage *meta;

	PageInit(page, BLCKSZ, 0);
	meta = (ColumnarMetaPage *) PageGetContents(page);
	meta->magic = COLUMNAR_META_MAGIC;
	meta->version = COLUMNAR_FORMAT_VERSION;
	meta->storage_id = storage_id;
	meta->next_row = 0;
	meta->nfree = 0;
	metapage_set_lower(page, meta);

	if (wal)
		log_newpage(&srel->smgr_rnode.node, MAIN_FORKNUM, 0, page, true);
	PageSetChecksumInplace(page, 0);
	smgrextend(srel, MAIN_FORKNUM, 0, buf.data, true);
	smgrimmedsync(srel, MAIN_FORKNUM);
}

/*
 * The metapage on page; with check_version, an error unless this build
 * reads its format version (see COLUMNAR_FORMAT_VERSION).
 */
static ColumnarMetaPage *
metapage_contents(Relation rel, Page page, bool check_version)
{
	ColumnarMetaPage *meta = (ColumnarMetaPage *) PageGetContents(page);

	if (meta->magic != COLUMNAR_META_MAGIC || meta->version < 1 ||
		meta->nfree < 0 || meta->nfree > COLUMNAR_MAX_FREE_RUNS)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar table \"%s\" has a bad metapage",
						RelationGetRelationName(rel))));
	if (check_version && meta->version > COLUMNAR_FORMAT_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("columnar table \"%s\" has storage format version %u, newer than this build of parca reads (%d)",
						RelationGetRelationName(rel), meta->version,
						COLUMNAR_FORMAT_VERSION),
				 errhint("Read it with the version of parca that wrote it; this one can only drop or truncate it.")));
	return meta;
}

static ColumnarMetaPage
read_metapage(Relation rel, bool check_version)
{
	Buffer		buf;
	ColumnarMetaPage meta;

	if (RelationGetNumberOfBlocks(rel) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar table \"%s\" has no metapage",
						RelationGetRelationName(rel))));
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = *metapage_contents(rel, BufferGetPage(buf), check_version);
	UnlockReleaseBuffer(buf);
	return meta;
}

/* The metapage of a table this build can read (else an error). */
ColumnarMetaPage
columnar_read_metapage(Relation rel)
{
	return read_metapage(rel, true);
}

void
columnar_content_version(Relation rel, int64 *storage_id, int64 *next_row)
{
	ColumnarMetaPage meta = read_metapage(rel, true);

	*storage_id = meta.storage_id;
	*next_row = meta.next_row;
}

/*
 * The storage id of rel, whatever its format version: to forget its
 * stripes (DROP, TRUNCATE), which reads no row.
 */
int64
columnar_read_storage_id(Relation rel)
{
	return read_metapage(rel, false).storage_id;
}

/* Reserve count row numbers; returns the first. */
int64
columnar_reserve_rows(Relation rel, int64 count)
{
	Buffer		buf = ReadBuffer(rel, 0);
	GenericXLogState *state;
	ColumnarMetaPage *meta;
	int64		first;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	meta = metapage_contents(rel, GenericXLogRegisterBuffer(state, buf, 0), true);
	first = meta->next_row;
	if (first + count > COLUMNAR_MAX_ROW_NUMBER)
	{
		GenericXLogAbort(state);
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("columnar table \"%s\" has run out of row numbers",
						RelationGetRelationName(rel)),
				 errhint("Rewrite it with VACUUM FULL.")));
	}
	meta->next_row = first + count;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return first;
}

/*
 * Reserve count entry numbers of rel's stack dictionary; returns the first.
 * Raises the metapage to format version 4 in the same change, before any
 * segment or stripe refers to them.  Numbers of a write that rolls back
 * are not used again, as row numbers are not.
 */
int64
columnar_reserve_entries(Relation rel, int count)
{
	Buffer		buf = ReadBuffer(rel, 0);
	GenericXLogState *state;
	Page		page;
	ColumnarMetaPage *meta;
	int64		first;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	meta = metapage_contents(rel, page, true);
	first = meta->next_entry;
	if (count < 0 || first < 0 || first + count > PG_INT32_MAX)
	{
		GenericXLogAbort(state);
		UnlockReleaseBuffer(buf);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("columnar table \"%s\" has run out of stack dictionary entry numbers",
						RelationGetRelationName(rel)),
				 errhint("Rewrite it with VACUUM FULL.")));
	}
	meta->next_entry = (int32) (first + count);
	meta->version = Max(meta->version, COLUMNAR_VERSION_TABLE_DICTIONARY);
	/* a metapage of 0.1 ends before the counter: generic WAL logs up to pd_lower */
	metapage_set_lower(page, meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return first;
}

/*
 * Raise rel's metapage version to version (at most this build's), unless
 * it is there already: called before a stripe that needs that version is
 * written, so that older builds refuse the table from then on instead of
 * misreading the stripe.
 */
void
columnar_require_version(Relation rel, uint32 version)
{
	Buffer		buf;
	GenericXLogState *state;
	ColumnarMetaPage *meta;

	Assert(version <= COLUMNAR_FORMAT_VERSION);
	if (read_metapage(rel, true).version >= version)
		return;
	buf = ReadBuffer(rel, 0);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	meta = metapage_contents(rel, GenericXLogRegisterBuffer(state, buf, 0), true);
	if (meta->version >= version)
		GenericXLogAbort(state);
	else
	{
		meta->version = version;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(buf);
}

/* ---- data pages ---- */

/* ---- the free page runs in the metapage ---- */

/*
 * Replace the free runs of rel's metapage by runs (the longest
 * COLUMNAR_MAX_FREE_RUNS of them, kept in block order).  The caller makes
 * sure that no stripe row refers to those pages, and that no write is
 * between taking pages and recording its stripe (columnar_compaction.c).
 */
void
columnar_set_free_runs(Relation rel, ColumnarBlockRun *runs, int nruns)
{
	Buffer		buf = ReadBuffer(rel, 0);
	GenericXLogState *state;
	Page		page;
	ColumnarMetaPage *meta;
	int			kept = nruns;

	/* drop the shortest runs until they fit */
	while (kept > COLUMNAR_MAX_FREE_RUNS)
	{
		int			shortest = 0;

		for (int i = 1; i < kept; i++)
			if (runs[i].count < runs[shortest].count)
				shortest = i;
		memmove(&runs[shortest], &runs[shortest + 1], sizeof(ColumnarBlockRun) * (kept - shortest - 1));
		kept--;
	}
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	meta = metapage_contents(rel, page, true);
	meta->nfree = kept;
	memcpy(metapage_free_runs(meta), runs, sizeof(ColumnarBlockRun) * kept);
	metapage_set_lower(page, meta);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/* The free runs of rel's metapage, in *runs (palloc'd); returns how many. */
int
columnar_free_runs(Relation rel, ColumnarBlockRun **runs)
{
	Buffer		buf = ReadBuffer(rel, 0);
	ColumnarMetaPage *meta;
	int			n;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = metapage_contents(rel, BufferGetPage(buf), true);
	n = meta->nfree;
	*runs = palloc(sizeof(ColumnarBlockRun) * Max(n, 1));
	memcpy(*runs, metapage_free_runs(meta), sizeof(ColumnarBlockRun) * n);
	UnlockReleaseBuffer(buf);
	return n;
}

/*
 * Take npages consecutive free pages from the metapage's list (the first
 * run long enough); returns the first, or InvalidBlockNumber if no run is.
 */
static BlockNumber
take_free_pages(Relation rel, int64 npages)
{
	Buffer		buf = ReadBuffer(rel, 0);
	GenericXLogState *state;
	Page		page;
	ColumnarMetaPage *meta;
	ColumnarBlockRun *runs;
	BlockNumber first = InvalidBlockNumber;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	meta = metapage_contents(rel, BufferGetPage(buf), true);
	if (meta->nfree <= 0)
	{
		UnlockReleaseBuffer(buf);
		return InvalidBlockNumber;
	}
	LockBuffer(buf, BUFFER_LOCK_UNLOCK);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(rel);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	meta = metapage_contents(rel, page, true);
	runs = metapage_free_runs(meta);
	for (int i = 0; i < meta->nfree; i++)
	{
		if (runs[i].count < npages)
			continue;
		first = (BlockNumber) runs[i].first;
		runs[i].first += npages;
		runs[i].count -= npages;
		if (runs[i].count == 0)
		{
			memmove(&runs[i], &runs[i + 1], sizeof(ColumnarBlockRun) * (meta->nfree - i - 1));
			meta->nfree--;
			metapage_set_lower(page, meta);
		}
		break;
	}
	if (first == InvalidBlockNumber)
		GenericXLogAbort(state);
	else
		GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return first;
}

/*
 * Write data to rel on consecutive pages (generic WAL), free ones if a run
 * is long enough, else appended; returns the first block.
 */
int64
columnar_write_pages(Relation rel, const char *data, int64 len)
{
	int64		npages = (len + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;
	BlockNumber first = take_free_pages(rel, npages);
	bool		extend = (first == InvalidBlockNumber);
	int64		done = 0;

	if (extend)
	{
		LockRelationForExtension(rel, ExclusiveLock);
		first = RelationGetNumberOfBlocks(rel);
	}
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

			if (extend)
			{
				bufs[i] = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
				Assert(BufferGetBlockNumber(bufs[i]) == first + done + i);
				LockBuffer(bufs[i], BUFFER_LOCK_EXCLUSIVE);
			}
			else				/* its old contents do not matter */
				bufs[i] = ReadBufferExtended(rel, MAIN_FORKNUM, first + done + i,
											 RBM_ZERO_AND_LOCK, NULL);
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
	if (extend)
		UnlockRelationForExtension(rel, ExclusiveLock);
	return first;
}

/*
 * Append to out the size bytes at offset of the data that starts at
 * first_block; returns the pages read.  seen (NULL: none) holds the pages
 * of this data (numbered from first_block) read before, which are not
 * counted again: small chunks of a stripe's columns share pages.  The
 * pages read are added to it.
 */
int
columnar_read_pages(Relation rel, int64 first_block, int64 offset, int size, StringInfo out,
					Bitmapset **seen)
{
	int64		off = offset;
	int64		end = offset + size;
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	int			pages = 0;

	enlargeStringInfo(out, size);
	while (off < end)
	{
		BlockNumber blk = (BlockNumber) (first_block + off / COLUMNAR_PAGE_PAYLOAD);
		int			pos = (int) (off % COLUMNAR_PAGE_PAYLOAD);
		int			part = (int) Min(end - off, COLUMNAR_PAGE_PAYLOAD - pos);
		Buffer		b;
		Page		page;

		if (blk >= nblocks)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("columnar stripe of \"%s\" refers to block %u past the end",
							RelationGetRelationName(rel), blk)));
		b = ReadBuffer(rel, blk);
		LockBuffer(b, BUFFER_LOCK_SHARE);
		page = BufferGetPage(b);
		if (((PageHeader) page)->pd_lower < SizeOfPageHeaderData + pos + part)
		{
			UnlockReleaseBuffer(b);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("columnar data page %u of \"%s\" is short",
							blk, RelationGetRelationName(rel))));
		}
		memcpy(out->data + out->len, page + SizeOfPageHeaderData + pos, part);
		UnlockReleaseBuffer(b);
		if (seen == NULL || !bms_is_member((int) (off / COLUMNAR_PAGE_PAYLOAD), *seen))
			pages++;
		if (seen != NULL)
			*seen = bms_add_member(*seen, (int) (off / COLUMNAR_PAGE_PAYLOAD));
		out->len += part;
		off += part;
	}
	out->data[out->len] = '\0';
	return pages;
}
