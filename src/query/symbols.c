/*
 * symbols.c
 *		Resolving a profile's location ids to frame names in one query.
 *
 * Names follow `go tool pprof`: a symbolized line is its function name;
 * a location without lines is "[binary]" in rankings (pprof's functions
 * granularity merges a binary's unsymbolized addresses) and
 * "[binary] 0xADDRESS" in trees, so that distinct addresses stay apart;
 * without a mapping it is "<unknown>".
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "metastore.h"
#include "profile.h"
#include "query/symbols.h"

/* id -> SymLocation: probed once per frame, so a simplehash, not dynahash */
#define SH_PREFIX locmap
#define SH_ELEMENT_TYPE SymLocation
#define SH_KEY_TYPE uint64
#define SH_KEY id
#define SH_HASH_KEY(tb, key) ((uint32) ((key) ^ ((key) >> 32)) * 0x9E3779B1U)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

typedef struct NameEntry
{
	const char *key;
	int			index;
} NameEntry;

static uint32
name_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	return hash_bytes((const unsigned char *) s, (int) strlen(s));
}

static int
name_match(const void *a, const void *b, Size keysize)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static int
intern(Symbols *syms, const char *s, const char *file)
{
	NameEntry  *e;
	bool		found;

	e = hash_search(syms->names, &s, HASH_FIND, NULL);
	if (e)
		return e->index;
	if (syms->nnames == syms->maxnames)
	{
		syms->maxnames *= 2;
		syms->name = repalloc(syms->name, sizeof(char *) * syms->maxnames);
		syms->file = repalloc(syms->file, sizeof(char *) * syms->maxnames);
	}
	syms->name[syms->nnames] = pstrdup(s);
	syms->file[syms->nnames] = pstrdup(file);
	e = hash_search(syms->names, &syms->name[syms->nnames], HASH_ENTER, &found);
	e->index = syms->nnames;
	return syms->nnames++;
}

uint64 *
profile_location_ids(const struct varlena *profile, int *nids)
{
	locmap_hash *seen = locmap_create(CurrentMemoryContext, 4096, NULL);	/* as a set */
	ProfileReader r;
	ProfileSample s;
	uint64	   *ids;
	int			n = 0;
	int			cap = 1024;
	bool		found;

	ids = palloc(sizeof(uint64) * cap);
	profile_reader_init(&r, profile);
	while (profile_reader_next(&r, &s))
	{
		for (int i = 0; i < s.nframes; i++)
		{
			uint64		id = profile_sample_frame(&s, i);

			locmap_insert(seen, id, &found);
			if (found)
				continue;
			if (n == cap)
			{
				cap *= 2;
				ids = repalloc(ids, sizeof(uint64) * cap);
			}
			ids[n++] = id;
		}
	}
	locmap_destroy(seen);
	*nids = n;
	return ids;
}

/* Last path component of a file name. */
static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void
text_array(Datum d, Datum **elems, bool **nulls, int *n)
{
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  elems, nulls, n);
}

Symbols *
symbols_load(const struct varlena *profile)
{
	MemoryContext cxt = CurrentMemoryContext;
	Symbols    *syms = palloc0(sizeof(Symbols));
	HASHCTL		ctl;
	uint64	   *ids;
	int			nids;
	Datum		arg;
	Oid			argtype = INT8ARRAYOID;
	int			ret;

	syms->locations = locmap_create(cxt, 4096, NULL);
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(NameEntry);
	ctl.hash = name_hash;
	ctl.match = name_match;
	ctl.hcxt = cxt;
	syms->names = hash_create("parca symbol names", 4096, &ctl,
							  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	syms->maxnames = 1024;
	syms->name = palloc(sizeof(char *) * syms->maxnames);
	syms->file = palloc(sizeof(char *) * syms->maxnames);

	ids = profile_location_ids(profile, &nids);
	if (nids == 0)
		return syms;
	arg = metastore_id_array(ids, nids);

	SPI_connect();
	ret = SPI_execute_with_args(
								"SELECT l.id, coalesce(m.file, ''), l.address,"
								" coalesce(pg_catalog.array_agg(CASE WHEN f.name OPERATOR(pg_catalog.<>) '' THEN f.name"
								"   WHEN f.system_name OPERATOR(pg_catalog.<>) '' THEN f.system_name ELSE '<unknown>' END"
								"   ORDER BY u.o) FILTER (WHERE u.o IS NOT NULL), '{}'),"
								" coalesce(pg_catalog.array_agg(coalesce(f.filename, '') ORDER BY u.o) FILTER (WHERE u.o IS NOT NULL), '{}')"
								" FROM parca.locations l"
								" LEFT JOIN parca.mappings m ON m.id OPERATOR(pg_catalog.=) l.mapping_id"
								" LEFT JOIN LATERAL pg_catalog.unnest(l.function_ids) WITH ORDINALITY u(fid, o) ON true"
								" LEFT JOIN parca.functions f ON f.id OPERATOR(pg_catalog.=) u.fid"
								" WHERE l.id OPERATOR(pg_catalog.=) ANY($1)"
								" GROUP BY l.id, m.file, l.address",
								1, &argtype, &arg, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(ret));

	for (uint64 row = 0; row < SPI_processed; row++)
	{
		HeapTuple	tup = SPI_tuptable->vals[row];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		uint64		id = (uint64) DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		char	   *file = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
		int64		address = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		Datum	   *names;
		Datum	   *files;
		bool	   *nulls;
		int			nnames;
		int			nfiles;
		MemoryContext spi_cxt;
		SymLocation *loc;
		bool		found;

		text_array(SPI_getbinval(tup, desc, 4, &isnull), &names, &nulls, &nnames);
		text_array(SPI_getbinval(tup, desc, 5, &isnull), &files, &nulls, &nfiles);

		spi_cxt = MemoryContextSwitchTo(cxt);
		loc = locmap_insert(syms->locations, id, &found);
		if (nnames > 0)
		{
			loc->nframes = nnames;
			loc->frames = palloc(sizeof(int) * nnames);
			for (int i = 0; i < nnames; i++)
			{
				char	   *name = TextDatumGetCString(names[i]);
				char	   *fname = TextDatumGetCString(files[i]);

				loc->frames[i] = intern(syms, name, fname);
			}
			loc->top_names = loc->frames;
		}
		else
		{
			const char *bin = base_name(file);
			char	   *tree_name;
			char	   *top_name;

			if (*bin)
			{
				top_name = psprintf("[%s]", bin);
				tree_name = psprintf("[%s] 0x%llx", bin, (unsigned long long) address);
			}
			else
			{
				top_name = "<unknown>";
				tree_name = psprintf("<unknown> 0x%llx", (unsigned long long) address);
			}
			loc->nframes = 1;
			loc->frames = palloc(sizeof(int));
			loc->top_names = palloc(sizeof(int));
			loc->frames[0] = intern(syms, tree_name, "");
			loc->top_names[0] = intern(syms, top_name, "");
		}
		MemoryContextSwitchTo(spi_cxt);
	}
	SPI_finish();
	return syms;
}

/* Frames named by this backend: id -> name (in TopMemoryContext). */
typedef struct NamedFrame
{
	uint64		id;
	char	   *name;
} NamedFrame;

static HTAB *named_frames = NULL;

void
symbols_name_frame(uint64 id, const char *name)
{
	NamedFrame *f;
	bool		found;

	if (named_frames == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(NamedFrame);
		named_frames = hash_create("parca named frames", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS);
	}
	f = hash_search(named_frames, &id, HASH_ENTER, &found);
	if (!found)
		f->name = MemoryContextStrdup(TopMemoryContext, name);
}

const SymLocation *
symbols_location(Symbols *syms, uint64 id)
{
	SymLocation *loc;
	bool		found;

	loc = locmap_lookup(syms->locations, id);
	if (loc == NULL)
	{
		NamedFrame *named = named_frames ?
			hash_search(named_frames, &id, HASH_FIND, NULL) : NULL;

		loc = locmap_insert(syms->locations, id, &found);
		loc->nframes = 1;
		loc->frames = palloc(sizeof(int));
		if (named)
			loc->frames[0] = intern(syms, named->name, "");
		else					/* not in the metastore: show the id */
			loc->frames[0] = intern(syms, psprintf("<unknown location %016llx>",
												   (unsigned long long) id), "");
		loc->top_names = loc->frames;
	}
	return loc;
}
