/*
 * columnar_check.c
 *		parca_columnar_check(): the integrity check of a columnar table (or
 *		of the parca_columnar partitions of a partitioned one), and
 *		parca_columnar_chunks(): what each chunk holds and how it is encoded.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "funcapi.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "columnar/columnar_internal.h"

PG_FUNCTION_INFO_V1(parca_columnar_check);
PG_FUNCTION_INFO_V1(parca_columnar_chunks);

/*
 * Both functions read every column of every row, so the user needs SELECT
 * on the table, checked before the lock is taken (as pgstattuple does); a
 * relation that does not exist is an error naming its OID.  (SELECT on a
 * partitioned table reads its partitions.)
 */
static void
check_select(Oid relid)
{
	AclResult	aclresult = pg_class_aclcheck(relid, GetUserId(), ACL_SELECT);

	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_TABLE, get_rel_name(relid));
}

/*
 * The parca_columnar table relid, locked.  If shows_values, the caller
 * shows values (chunk minima and maxima), which row-level security would
 * hide.
 */
static Relation
open_columnar(Oid relid, bool shows_values)
{
	Relation	rel;

	check_select(relid);
	rel = columnar_open_table(relid, AccessShareLock);
	if (shows_values && check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot show the chunks of \"%s\": row-level security applies to it",
						RelationGetRelationName(rel))));
	return rel;
}

static void
corrupt(Relation rel, ColumnarStripe *s, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("columnar table \"%s\" is damaged: %s", RelationGetRelationName(rel), what),
			 s ? errdetail("In the stripe that starts at row number " INT64_FORMAT ".",
						   s->first_row) : 0));
}

/*
 * The ids of stripe s's dictionaries (format version 3): each where a word
 * dictionary is, one per entry, as stored, and each the id of its entry
 * (rs reads s).
 */
static void
check_dict_ids(Relation rel, ColumnarStripe *s, ColumnarReadState *rs, StringInfo stored)
{
	if (s->dict_ids == NULL)
		return;
	for (int a = 0; a < s->natts; a++)
	{
		ColumnarChunk *ch = &s->dict_ids[a];
		ColumnarColumn *col = &s->columns[a];
		int16		typlen = TupleDescAttr(RelationGetDescr(rel), a)->attlen;
		char	  **dict;

		if (ch->size == 0)
			continue;
		if (!col->has_dict || col->dict.encoding != ENC_WORDS || ch->encoding != ENC_IDS ||
			ch->rawsize != 0 || col->ndict <= 0 || typlen < -1 ||
			TupleDescAttr(RelationGetDescr(rel), a)->attbyval ||
			(uint64) ch->size != (uint64) col->ndict * sizeof(uint64))
			corrupt(rel, s, "dictionary ids do not match their dictionary");
		columnar_chunk_read_stored(rel, s, ch, stored, NULL);
		if (columnar_chunk_crc(stored->data, stored->len) != ch->crc)
			corrupt(rel, s, "chunk checksum mismatch");
		dict = columnar_read_dictionary(rs, a + 1, 0, NULL);
		for (int i = 0; i < col->ndict; i++)
		{
			uint64		id;

			memcpy(&id, stored->data + (Size) i * sizeof(uint64), sizeof(id));
			if (id != columnar_chunk_entry_id(dict[i], typlen))
				corrupt(rel, s, "a dictionary id is not its entry's");
		}
		CHECK_FOR_INTERRUPTS();
	}
}

/* What parca_columnar_check() counts, of one table and in all. */
typedef struct CheckCounts
{
	int64		stripes;
	int64		inline_stripes;
	int64		rows;
	int64		data_blocks;
} CheckCounts;

/*
 * Check one parca_columnar table, opened and locked; add what it holds to
 * *counts.  Raises an error naming the first problem: a bad metapage,
 * overlapping row numbers or pages, a stripe past the end of the relation,
 * a chunk whose CRC does not match, a chunk that does not decode, a
 * dictionary id that is not its entry's, or a stripe whose decoded rows do
 * not match its count.
 */
static void
check_table(Relation rel, CheckCounts *counts)
{
	ColumnarMetaPage meta = columnar_read_metapage(rel);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	List	   *stripes = columnar_load_stripes(meta.storage_id, snapshot, false);
	int			nranges = 0;
	ColumnarRowRange *ranges;
	ColumnarRowRange *blocks;
	int			nblockranges = 0;
	int64		rows = 0;
	int64		ninline = 0;
	int64		data_blocks = 0;
	Bitmapset  *attrs = NULL;
	StringInfoData stored;
	ListCell   *lc;
	ColumnarDictionaryView *table_dict = columnar_dictionary_view(rel, snapshot);
	ColumnarBlockRun *segment_blocks;
	int			nsegment_blocks = columnar_dictionary_check(table_dict, meta.next_entry,
															nblocks, &segment_blocks);

	for (int i = 1; i <= RelationGetDescr(rel)->natts; i++)
		attrs = bms_add_member(attrs, i);
	foreach(lc, stripes)
		nranges += ((ColumnarStripe *) lfirst(lc))->nranges;
	ranges = palloc(sizeof(ColumnarRowRange) * Max(nranges, 1));
	blocks = palloc(sizeof(ColumnarRowRange) * (list_length(stripes) + nsegment_blocks + 1));
	/* the dictionary's pages are data pages, which no stripe may share */
	for (int i = 0; i < nsegment_blocks; i++)
	{
		blocks[nblockranges++] = segment_blocks[i];
		data_blocks += segment_blocks[i].count;
	}
	nranges = 0;
	initStringInfo(&stored);

	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);
		int64		count = 0;
		int64		decoded = 0;
		ColumnarReadState *rs;
		Datum	   *v = palloc(sizeof(Datum) * Max(RelationGetDescr(rel)->natts, 1));
		bool	   *n = palloc(sizeof(bool) * Max(RelationGetDescr(rel)->natts, 1));
		int64		rownum;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < s->nranges; i++)
		{
			if (s->ranges[i].count <= 0 || s->ranges[i].first < 0 ||
				s->ranges[i].first + s->ranges[i].count > meta.next_row)
				corrupt(rel, s, "row numbers out of range");
			count += s->ranges[i].count;
			ranges[nranges++] = s->ranges[i];
		}
		if (count != s->row_count)
			corrupt(rel, s, "row numbers do not add up to the row count");
		if (s->natts > RelationGetDescr(rel)->natts)
			corrupt(rel, s, "more columns than the table");
		if (s->group_rows <= 0 ||
			s->ngroups != (s->row_count + s->group_rows - 1) / s->group_rows)
			corrupt(rel, s, "chunk group count does not match the row count");
		if (s->first_block < 0)
			ninline++;
		else
		{
			int64		npages = (s->data_size + COLUMNAR_PAGE_PAYLOAD - 1) / COLUMNAR_PAGE_PAYLOAD;

			if (s->first_block < 1 || s->first_block + npages > nblocks)
				corrupt(rel, s, "data pages past the end of the relation");
			blocks[nblockranges].first = s->first_block;
			blocks[nblockranges].count = npages;
			nblockranges++;
			data_blocks += npages;
		}
		/* every chunk's bytes as written */
		for (int a = 0; a < s->natts; a++)
		{
			for (int g = -1; g < s->ngroups; g++)
			{
				ColumnarChunk *ch = g < 0 ? &s->columns[a].dict : COLUMNAR_CHUNK(s, a, g);

				if (g < 0 && !s->columns[a].has_dict)
					continue;
				if (g >= 0 && ch->encoding == ENC_ALL_NULL)
					continue;
				if (ch->encoding >= ENC_COUNT)
					corrupt(rel, s, "unknown chunk encoding");
				columnar_chunk_read_stored(rel, s, ch, &stored, NULL);
				if (columnar_chunk_crc(stored.data, stored.len) != ch->crc)
					corrupt(rel, s, "chunk checksum mismatch");
			}
		}
		/* every row decodes */
		rs = columnar_read_stripes(rel, list_make1(s), attrs, table_dict);
		check_dict_ids(rel, s, rs, &stored);
		while (columnar_read_next(rs, v, n, &rownum))
			decoded++;
		columnar_read_end(rs);
		if (decoded != s->row_count)
			corrupt(rel, s, "decoded rows do not match the row count");
		rows += decoded;
	}

	qsort(ranges, nranges, sizeof(ColumnarRowRange), columnar_range_cmp);
	for (int i = 1; i < nranges; i++)
		if (ranges[i - 1].first + ranges[i - 1].count > ranges[i].first)
			corrupt(rel, NULL, "two stripes share row numbers");
	qsort(blocks, nblockranges, sizeof(ColumnarRowRange), columnar_range_cmp);
	for (int i = 1; i < nblockranges; i++)
		if (blocks[i - 1].first + blocks[i - 1].count > blocks[i].first)
			corrupt(rel, NULL, "two stripes share data pages");
	/* the free page runs of the metapage: inside the relation, under no stripe */
	{
		ColumnarBlockRun *free;
		int			nfree = columnar_free_runs(rel, &free);
		/* VACUUM may have found pages a writer appended since */
		BlockNumber nblocks_now = RelationGetNumberOfBlocks(rel);

		for (int f = 0; f < nfree; f++)
		{
			if (free[f].first < 1 || free[f].count <= 0 ||
				free[f].first + free[f].count > nblocks_now)
				corrupt(rel, NULL, "a free page run lies outside the relation");
			for (int i = 0; i < nblockranges; i++)
				if (blocks[i].first < free[f].first + free[f].count &&
					free[f].first < blocks[i].first + blocks[i].count)
					corrupt(rel, NULL, "a free page run overlaps a stripe");
		}
	}

	columnar_dictionary_view_end(table_dict);
	UnregisterSnapshot(snapshot);
	counts->stripes += list_length(stripes);
	counts->inline_stripes += ninline;
	counts->rows += rows;
	counts->data_blocks += data_blocks;
}

/*
 * parca_columnar_check(regclass) -> (stripes, inline_stripes, rows, data_blocks)
 *
 * Of the table, or the sums over the parca_columnar partitions of a
 * partitioned table (parca.samples, its rollups), each checked in turn
 * (columnar_tables_of: other partitions are skipped with a NOTICE).
 */
Datum
parca_columnar_check(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	CheckCounts counts = {0};
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "parca_columnar_check",
											  ALLOCSET_DEFAULT_SIZES);
	ListCell   *lc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	check_select(relid);
	foreach(lc, columnar_tables_of(relid, AccessShareLock))
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		Relation	rel = columnar_open_table(lfirst_oid(lc), AccessShareLock);

		check_table(rel, &counts);
		table_close(rel, AccessShareLock);
		MemoryContextSwitchTo(old);
		MemoryContextReset(cxt);
	}
	MemoryContextDelete(cxt);
	values[0] = Int64GetDatum(counts.stripes);
	values[1] = Int64GetDatum(counts.inline_stripes);
	values[2] = Int64GetDatum(counts.rows);
	values[3] = Int64GetDatum(counts.data_blocks);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * The chunks of the segments of rel's stack dictionary as snapshot sees
 * them, as rows of parca_columnar_chunks(): stripe and column NULL, chunk
 * group -1 (the entries) or -2 (their ids), nulls the entries, min and
 * max the first and last entry numbers (of several ranges once merged).
 */
static void
put_segment_chunks(Relation rel, Snapshot snapshot, ReturnSetInfo *rsinfo)
{
	List	   *segments = columnar_load_segments(columnar_read_metapage(rel).storage_id, 0,
												  snapshot);
	ListCell   *lc;

	foreach(lc, segments)
	{
		ColumnarStripe *seg = lfirst(lc);

		if (seg->natts != 1 || seg->dict_ids == NULL || seg->nranges < 1)
			corrupt(rel, NULL, "a stack dictionary segment has a bad directory");
		for (int g = -2; g < 0; g++)
		{
			ColumnarChunk *ch = g == -2 ? &seg->dict_ids[0] : &seg->columns[0].dict;
			Datum		values[11];
			bool		nulls[11] = {0};

			nulls[0] = nulls[3] = true;
			values[1] = BoolGetDatum(seg->first_block < 0);
			values[2] = Int32GetDatum(g);
			values[4] = CStringGetTextDatum(g == -2 ? "stack dictionary ids" :
											ch->encoding == ENC_WORDS ?
											"stack dictionary(words)" : "stack dictionary");
			values[5] = BoolGetDatum(ch->rawsize > 0);
			values[6] = Int32GetDatum(ch->size);
			values[7] = Int32GetDatum(ch->rawsize > 0 ? ch->rawsize : ch->size);
			values[8] = Int32GetDatum(seg->columns[0].ndict);
			values[9] = CStringGetTextDatum(psprintf(INT64_FORMAT, seg->first_row));
			values[10] = CStringGetTextDatum(psprintf(INT64_FORMAT,
													  seg->ranges[seg->nranges - 1].first +
													  seg->ranges[seg->nranges - 1].count - 1));
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
}

/*
 * parca_columnar_chunks(regclass) -> one row per chunk: stripe, chunk group
 * (-1: the stripe dictionary; -2: the ids of its entries), column,
 * encoding, compression, sizes, nulls (of a dictionary and its ids: its
 * entries), min and max; then the chunks of the table's stack dictionary
 * (put_segment_chunks).
 */
Datum
parca_columnar_chunks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	rel = open_columnar(PG_GETARG_OID(0), true);
	TupleDesc	desc = RelationGetDescr(rel);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	List	   *stripes = columnar_load_stripes(columnar_read_metapage(rel).storage_id, snapshot, false);
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	foreach(lc, stripes)
	{
		ColumnarStripe *s = lfirst(lc);

		for (int a = 0; a < s->natts && a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (att->attisdropped)
				continue;
			for (int g = -2; g < s->ngroups; g++)
			{
				ColumnarChunk *ch = g == -2 ? (s->dict_ids ? &s->dict_ids[a] : NULL) :
					g < 0 ? &s->columns[a].dict : COLUMNAR_CHUNK(s, a, g);
				Datum		values[11];
				bool		nulls[11] = {0};
				const char *enc;

				if (g < 0 && !s->columns[a].has_dict)
					continue;
				if (g == -2 && (ch == NULL || ch->size == 0))
					continue;
				if (g == -2)
					enc = "dictionary ids";
				else if (g < 0 && ch->encoding == ENC_WORDS)
					enc = "dictionary(words)";
				else if (g < 0 && ch->encoding == ENC_ENTRIES)
					enc = psprintf("dictionary(entries %s)",
								   ch->index_encoding < ENC_COUNT ?
								   columnar_encoding_names[ch->index_encoding] : "?");
				else if (g < 0)
					enc = "dictionary";
				else if (ch->encoding == ENC_DICT)
					enc = psprintf("dict(%s)", columnar_encoding_names[ch->index_encoding]);
				else
					enc = columnar_encoding_names[ch->encoding];
				values[0] = Int64GetDatum(s->first_row);
				values[1] = BoolGetDatum(s->first_block < 0);
				values[2] = Int32GetDatum(g);
				values[3] = CStringGetTextDatum(NameStr(att->attname));
				values[4] = CStringGetTextDatum(enc);
				values[5] = BoolGetDatum(ch->rawsize > 0);
				values[6] = Int32GetDatum(ch->size);
				values[7] = Int32GetDatum(ch->rawsize > 0 ? ch->rawsize : ch->size);
				values[8] = Int32GetDatum(g < 0 ? s->columns[a].ndict : ch->nnulls);
				if (g >= 0 && ch->has_minmax)
				{
					Oid			out;
					bool		varlena;

					getTypeOutputInfo(att->atttypid, &out, &varlena);
					values[9] = CStringGetTextDatum(OidOutputFunctionCall(out,
																		  columnar_int_to_datum(ch->min, att->attlen)));
					values[10] = CStringGetTextDatum(OidOutputFunctionCall(out,
																		   columnar_int_to_datum(ch->max, att->attlen)));
				}
				else
					nulls[9] = nulls[10] = true;
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
		}
	}
	put_segment_chunks(rel, snapshot, rsinfo);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	return (Datum) 0;
}
