/*
 * metastore.c
 *		The metastore: mappings, functions, locations and series.
 *
 * Ids of mappings, functions and locations are content hashes
 * (ids/ids.c), so registering is "insert what is missing"; what this
 * backend knows to be stored already is in metastore_cache.c.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"

#include "ids/ids.h"
#include "metastore/metastore.h"
#include "metastore/metastore_internal.h"
#include "metastore/samples_table.h"
#include "types/keyed_table.h"
#include "types/valid_text.h"

/*
 * Whoever registers or looks up ids is about to write rows that refer to
 * them: it holds parca.samples as a writer until it commits, so that the
 * metastore's garbage collection (which takes it in SHARE mode) either
 * waits for its rows or ran entirely before.  Taking the lock also reads
 * the invalidations such a collection sent at its commit, so that the
 * caches, checked next (metastore_cache_begin), forget the removed ids.
 * Readers (metastore_stacktrace_type) do not lock: they may run on a
 * standby.
 */
static void
lock_for_writing(void)
{
	LockRelationOid(samples_table_relid(), RowExclusiveLock);
}

/* --- SPI helpers -------------------------------------------------------- */

typedef struct SavedPlan
{
	const char *sql;
	int			nargs;
	Oid			argtypes[8];
	SPIPlanPtr	plan;
} SavedPlan;

static SPIPlanPtr
plan_of(SavedPlan *sp)
{
	if (sp->plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare(sp->sql, sp->nargs, sp->argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for \"%s\": %s", sp->sql,
				 SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		sp->plan = plan;
	}
	return sp->plan;
}

static void
run_plan(SavedPlan *sp, Datum *values, const char *nulls, int expected)
{
	int			rc = SPI_execute_plan(plan_of(sp), values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "metastore statement failed (%s): %s", SPI_result_code_string(rc), sp->sql);
}

Datum
metastore_id_array(const uint64 *v, int n)
{
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));

	for (int i = 0; i < n; i++)
		d[i] = Int64GetDatum((int64) v[i]);
	return PointerGetDatum(construct_array(d, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static Datum
text_array(const char *const *v, int n)
{
	Datum	   *d = palloc(Max(n, 1) * sizeof(Datum));

	for (int i = 0; i < n; i++)
		d[i] = PointerGetDatum(cstring_to_text(v[i]));
	return PointerGetDatum(construct_array(d, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Of ids[0..n), which are stored?  Sets stored[i]; for locations also
 * has_lines[i].
 */
static SavedPlan select_mappings = {
	"SELECT id, false FROM parca.mappings WHERE id OPERATOR(pg_catalog.=) ANY ($1)", 1, {INT8ARRAYOID}
};
static SavedPlan select_functions = {
	"SELECT id, false FROM parca.functions WHERE id OPERATOR(pg_catalog.=) ANY ($1)", 1, {INT8ARRAYOID}
};
static SavedPlan select_locations = {
	"SELECT id, pg_catalog.cardinality(function_ids) OPERATOR(pg_catalog.>) 0 "
	"FROM parca.locations WHERE id OPERATOR(pg_catalog.=) ANY ($1)",
	1, {INT8ARRAYOID}
};

typedef struct FoundId
{
	uint64		id;
	bool		has_lines;
} FoundId;

static HTAB *
find_stored(SavedPlan *sp, const uint64 *ids, int n)
{
	Datum		arg = metastore_id_array(ids, n);
	HTAB	   *found = keyed_table_create("parca stored ids", Max(n, 16), sizeof(uint64),
											  sizeof(FoundId), CurrentMemoryContext);

	run_plan(sp, &arg, NULL, SPI_OK_SELECT);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		uint64		id = (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r],
															  SPI_tuptable->tupdesc, 1, &isnull));
		FoundId    *f = hash_search(found, &id, HASH_ENTER, NULL);

		f->has_lines = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[r],
												  SPI_tuptable->tupdesc, 2, &isnull));
	}
	return found;
}

static int
compare_u64(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/* --- mappings, functions, locations ------------------------------------- */

/*
 * New rows are inserted in ascending id order.  An INSERT that meets an
 * uncommitted row with its id waits for that transaction; two writers
 * inserting overlapping new ids in different orders would each wait for
 * the other (a deadlock), in the same order they queue instead.
 */
typedef struct IdPosition
{
	uint64		id;
	int			pos;
} IdPosition;

/* By id, then by position: the first of repeated ids stays first. */
static int
compare_id_positions(const void *a, const void *b)
{
	const IdPosition *x = a;
	const IdPosition *y = b;
	int			c = compare_u64(&x->id, &y->id);

	return c != 0 ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/*
 * The positions i of ids[0..n) with insert[i] set, ordered by id; their
 * count in *nnew.
 */
static int *
insertion_order(const uint64 *ids, const bool *insert, int n, int *nnew)
{
	IdPosition *sorted = palloc(Max(n, 1) * sizeof(IdPosition));
	int		   *order;
	int			k = 0;

	for (int i = 0; i < n && insert; i++)
		if (insert[i])
		{
			sorted[k].id = ids[i];
			sorted[k].pos = i;
			k++;
		}
	qsort(sorted, k, sizeof(IdPosition), compare_id_positions);
	order = palloc(Max(k, 1) * sizeof(int));
	for (int i = 0; i < k; i++)
		order[i] = sorted[i].pos;
	pfree(sorted);
	*nnew = k;
	return order;
}

static SavedPlan insert_mappings = {
	"INSERT INTO parca.mappings (id, build_id, file) "
	"SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) ON CONFLICT (id) DO NOTHING",
	3, {INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID}
};

/*
 * Which of ids (item i has ids[i]) must be inserted: those neither known
 * to the cache nor stored (select finds them), each once.  All are
 * remembered.  NULL when there is nothing to insert.
 */
static bool *
ids_to_insert(SavedPlan *select, const uint64 *ids, int n)
{
	uint64	   *cand = palloc(Max(n, 1) * sizeof(uint64));
	bool	   *insert = palloc0(Max(n, 1) * sizeof(bool));
	int			ncand = 0;
	bool		any = false;
	HTAB	   *stored;

	for (int i = 0; i < n; i++)
		if (!metastore_cache_known(ids[i], false))
			cand[ncand++] = ids[i];
	if (ncand == 0)
		return NULL;
	stored = find_stored(select, cand, ncand);
	for (int i = 0; i < n; i++)
	{
		bool		seen;

		if (metastore_cache_known(ids[i], false))
			continue;
		hash_search(stored, &ids[i], HASH_ENTER, &seen);
		metastore_cache_remember_id(ids[i], false);
		/* not stored already, nor twice in this call */
		insert[i] = !seen;
		any |= !seen;
	}
	return any ? insert : NULL;
}

static void
register_mappings(const MetaMapping *m, int n)
{
	uint64	   *ids = palloc(Max(n, 1) * sizeof(uint64));
	const char **build_ids = palloc(Max(n, 1) * sizeof(char *));
	const char **files = palloc(Max(n, 1) * sizeof(char *));
	int			nnew;
	int		   *order;

	for (int i = 0; i < n; i++)
		ids[i] = m[i].id;
	order = insertion_order(ids, ids_to_insert(&select_mappings, ids, n), n, &nnew);
	for (int k = 0; k < nnew; k++)
	{
		ids[k] = m[order[k]].id;
		build_ids[k] = m[order[k]].build_id;
		files[k] = m[order[k]].file;
	}
	if (nnew > 0)
	{
		Datum		args[3] = {metastore_id_array(ids, nnew), text_array(build_ids, nnew),
		text_array(files, nnew)};

		run_plan(&insert_mappings, args, NULL, SPI_OK_INSERT);
	}
}

static SavedPlan insert_functions = {
	"INSERT INTO parca.functions (id, name, system_name, filename, start_line) "
	"SELECT * FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5)) ON CONFLICT (id) DO NOTHING",
	5, {INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID}
};

static void
register_functions(const MetaFunction *f, int n)
{
	uint64	   *ids = palloc(Max(n, 1) * sizeof(uint64));
	const char **names = palloc(Max(n, 1) * sizeof(char *));
	const char **system_names = palloc(Max(n, 1) * sizeof(char *));
	const char **filenames = palloc(Max(n, 1) * sizeof(char *));
	uint64	   *start_lines = palloc(Max(n, 1) * sizeof(uint64));
	int			nnew;
	int		   *order;

	for (int i = 0; i < n; i++)
		ids[i] = f[i].id;
	order = insertion_order(ids, ids_to_insert(&select_functions, ids, n), n, &nnew);
	for (int k = 0; k < nnew; k++)
	{
		const MetaFunction *fk = &f[order[k]];

		ids[k] = fk->id;
		names[k] = fk->name;
		system_names[k] = fk->system_name;
		filenames[k] = fk->filename;
		start_lines[k] = (uint64) fk->start_line;
	}
	if (nnew > 0)
	{
		Datum		args[5] = {metastore_id_array(ids, nnew), text_array(names, nnew),
			text_array(system_names, nnew), text_array(filenames, nnew),
		metastore_id_array(start_lines, nnew)};

		run_plan(&insert_functions, args, NULL, SPI_OK_INSERT);
	}
}

/*
 * Locations travel as parallel arrays; each one's lines are the slice
 * [lo, hi] (1-based, empty when hi < lo) of two flat arrays.
 */
static SavedPlan insert_locations = {
	"INSERT INTO parca.locations (id, mapping_id, address, function_ids, line_numbers, is_folded) "
	"SELECT u.id, u.mapping_id, u.address, $7[u.lo:u.hi], $8[u.lo:u.hi], u.folded "
	"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3), pg_catalog.unnest($4), pg_catalog.unnest($5), pg_catalog.unnest($6)) AS u(id, mapping_id, address, lo, hi, folded) "
	"ON CONFLICT (id) DO NOTHING",
	8, {INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID, INT4ARRAYOID, INT4ARRAYOID, BOOLARRAYOID,
	INT8ARRAYOID, INT8ARRAYOID}
};
/*
 * (the slices are taken in a subquery: Citus 13.2's deparser crashes on a
 * subscripted expression assigned by an UPDATE of a reference table)
 */
static SavedPlan symbolize_locations = {
	"UPDATE parca.locations AS l SET function_ids = u.function_ids, line_numbers = u.line_numbers "
	"FROM (SELECT r.id, $4[r.lo:r.hi] AS function_ids, $5[r.lo:r.hi] AS line_numbers "
	"  FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) AS r(id, lo, hi)) AS u "
	"WHERE l.id OPERATOR(pg_catalog.=) u.id AND pg_catalog.cardinality(l.function_ids) OPERATOR(pg_catalog.=) 0",
	5, {INT8ARRAYOID, INT4ARRAYOID, INT4ARRAYOID, INT8ARRAYOID, INT8ARRAYOID}
};

typedef struct LocationBatch
{
	int			n;
	uint64	   *ids;
	Datum	   *mapping_ids;
	bool	   *mapping_nulls;
	uint64	   *addresses;
	Datum	   *lo;
	Datum	   *hi;
	Datum	   *folded;
	int			nflat;
	uint64	   *flat_functions;
	uint64	   *flat_lines;
} LocationBatch;

static void
batch_init(LocationBatch *b, int n, int total_lines)
{
	memset(b, 0, sizeof(*b));
	b->ids = palloc(Max(n, 1) * sizeof(uint64));
	b->mapping_ids = palloc(Max(n, 1) * sizeof(Datum));
	b->mapping_nulls = palloc(Max(n, 1) * sizeof(bool));
	b->addresses = palloc(Max(n, 1) * sizeof(uint64));
	b->lo = palloc(Max(n, 1) * sizeof(Datum));
	b->hi = palloc(Max(n, 1) * sizeof(Datum));
	b->folded = palloc(Max(n, 1) * sizeof(Datum));
	b->flat_functions = palloc(Max(total_lines, 1) * sizeof(uint64));
	b->flat_lines = palloc(Max(total_lines, 1) * sizeof(uint64));
}

static void
batch_add(LocationBatch *b, const MetaLocation *l)
{
	int			i = b->n++;

	b->ids[i] = l->id;
	b->mapping_ids[i] = Int64GetDatum((int64) l->mapping_id);
	b->mapping_nulls[i] = !l->has_mapping;
	b->addresses[i] = l->address;
	b->folded[i] = BoolGetDatum(l->is_folded);
	b->lo[i] = Int32GetDatum(b->nflat + 1);
	for (int j = 0; j < l->nlines; j++)
	{
		b->flat_functions[b->nflat] = l->function_ids[j];
		b->flat_lines[b->nflat] = (uint64) l->lines[j];
		b->nflat++;
	}
	b->hi[i] = Int32GetDatum(b->nflat);
}

static Datum
datum_array(Datum *d, bool *nulls, int n, Oid type)
{
	int			dims[1] = {n};
	int			lbs[1] = {1};

	if (type == INT4OID)
		return PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs, INT4OID, 4, true, TYPALIGN_INT));
	if (type == BOOLOID)
		return PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs, BOOLOID, 1, true, TYPALIGN_CHAR));
	return PointerGetDatum(construct_md_array(d, nulls, 1, dims, lbs, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

static void
register_locations(const MetaLocation *l, int n)
{
	IdPosition *cand = palloc(Max(n, 1) * sizeof(IdPosition));
	uint64	   *cand_ids = palloc(Max(n, 1) * sizeof(uint64));
	int			ncand = 0,
				total_lines = 0;
	HTAB	   *stored;
	LocationBatch ins,
				upd;

	for (int i = 0; i < n; i++)
	{
		if (!metastore_cache_known(l[i].id, l[i].nlines > 0))
		{
			cand[ncand].id = l[i].id;
			cand[ncand].pos = i;
			ncand++;
			total_lines += l[i].nlines;
		}
	}
	if (ncand == 0)
		return;
	/* in id order: see insertion_order */
	qsort(cand, ncand, sizeof(IdPosition), compare_id_positions);
	for (int k = 0; k < ncand; k++)
		cand_ids[k] = cand[k].id;
	stored = find_stored(&select_locations, cand_ids, ncand);
	batch_init(&ins, ncand, total_lines);
	batch_init(&upd, ncand, total_lines);
	for (int k = 0; k < ncand; k++)
	{
		const MetaLocation *lk = &l[cand[k].pos];
		bool		have_lines = lk->nlines > 0;
		bool		seen;
		FoundId    *f;

		if (metastore_cache_known(lk->id, have_lines))
			continue;
		f = hash_search(stored, &lk->id, HASH_ENTER, &seen);
		metastore_cache_remember_id(lk->id, have_lines || (seen && f->has_lines));
		if (!seen)
		{
			f->has_lines = have_lines;
			batch_add(&ins, lk);
		}
		else if (have_lines && !f->has_lines)
		{
			f->has_lines = true;
			batch_add(&upd, lk);
		}
	}
	if (ins.n > 0)
	{
		Datum		args[8] = {
			metastore_id_array(ins.ids, ins.n),
			datum_array(ins.mapping_ids, ins.mapping_nulls, ins.n, INT8OID),
			metastore_id_array(ins.addresses, ins.n),
			datum_array(ins.lo, NULL, ins.n, INT4OID),
			datum_array(ins.hi, NULL, ins.n, INT4OID),
			datum_array(ins.folded, NULL, ins.n, BOOLOID),
			metastore_id_array(ins.flat_functions, ins.nflat),
			metastore_id_array(ins.flat_lines, ins.nflat)
		};

		run_plan(&insert_locations, args, NULL, SPI_OK_INSERT);
	}
	if (upd.n > 0)
	{
		Datum		args[5] = {
			metastore_id_array(upd.ids, upd.n),
			datum_array(upd.lo, NULL, upd.n, INT4OID),
			datum_array(upd.hi, NULL, upd.n, INT4OID),
			metastore_id_array(upd.flat_functions, upd.nflat),
			metastore_id_array(upd.flat_lines, upd.nflat)
		};

		run_plan(&symbolize_locations, args, NULL, SPI_OK_UPDATE);
	}
}

void
metastore_register(const MetaMapping *mappings, int nmappings,
				   const MetaFunction *functions, int nfunctions,
				   const MetaLocation *locations, int nlocations)
{
	lock_for_writing();
	metastore_cache_begin();
	register_mappings(mappings, nmappings);
	register_functions(functions, nfunctions);
	register_locations(locations, nlocations);
}

/* --- series ------------------------------------------------------------- */

static SavedPlan select_series = {
	"SELECT id FROM parca.series WHERE profile_type OPERATOR(pg_catalog.=) $1 AND labels OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, JSONBOID}
};
static SavedPlan insert_series = {
	"INSERT INTO parca.series (profile_type, labels) VALUES ($1, $2) "
	"ON CONFLICT (profile_type, labels) DO NOTHING RETURNING id",
	2, {TEXTOID, JSONBOID}
};

int64
metastore_series_id(const char *profile_type, Jsonb *labels)
{
	char	   *labels_text = JsonbToCString(NULL, &labels->root, VARSIZE(labels));
	Size		type_len = strlen(profile_type);
	Size		key_len = type_len + 1 + strlen(labels_text);
	char	   *key = palloc(key_len + 1);
	uint64		key_hash;
	Datum		args[2];
	bool		isnull;
	int64		id;

	lock_for_writing();
	metastore_cache_begin();
	memcpy(key, profile_type, type_len + 1);
	strcpy(key + type_len + 1, labels_text);
	key_hash = parca_hash64(key, key_len);
	if (metastore_cache_series(key_hash, key, key_len, &id))
		return id;

	args[0] = CStringGetTextDatum(profile_type);
	args[1] = JsonbPGetDatum(labels);
	run_plan(&select_series, args, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
	{
		run_plan(&insert_series, args, NULL, SPI_OK_INSERT_RETURNING);
		if (SPI_processed == 0)	/* a concurrent writer won */
			run_plan(&select_series, args, NULL, SPI_OK_SELECT);
	}
	if (SPI_processed != 1)
		elog(ERROR, "series for profile type %s could not be stored", message_quote_cstring(profile_type));
	id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));

	metastore_cache_remember_series(key_hash, key, key_len, id);
	return id;
}

static SavedPlan select_stacktrace_type = {
	"SELECT t.oid, t.typarray FROM pg_catalog.pg_type t "
	"JOIN pg_catalog.pg_extension e ON t.typnamespace OPERATOR(pg_catalog.=) e.extnamespace "
	"WHERE e.extname OPERATOR(pg_catalog.=) 'parca' AND t.typname OPERATOR(pg_catalog.=) 'stacktrace'",
	0, {InvalidOid}
};

Oid
metastore_stacktrace_type(bool array)
{
	metastore_cache_begin();
	if (!OidIsValid(metastore_cache_stacktrace_type(false)))
	{
		bool		isnull;

		run_plan(&select_stacktrace_type, NULL, NULL, SPI_OK_SELECT);
		if (SPI_processed != 1)
			elog(ERROR, "type stacktrace of extension parca not found");
		metastore_cache_set_stacktrace_type(DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
																		   SPI_tuptable->tupdesc, 1, &isnull)),
											DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
																		   SPI_tuptable->tupdesc, 2, &isnull)));
	}
	return metastore_cache_stacktrace_type(array);
}
