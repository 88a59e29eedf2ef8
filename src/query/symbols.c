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

#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "keyed_hash/keyed_hash.h"
#include "metastore/metastore_read.h"
#include "types/profile.h"
#include "query/symbols.h"
#include "types/keyed_table.h"

/* id -> SymLocation: probed once per frame, so a simplehash, not dynahash */
#define SH_PREFIX locmap
#define SH_ELEMENT_TYPE SymLocation
#define SH_KEY_TYPE uint64
#define SH_KEY id
/* keyed: location ids are chosen by ingesting roles (keyed_hash.h) */
#define SH_HASH_KEY(tb, key) keyed_hash_u64(key)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

static int
intern(Symbols *syms, const char *s, const char *file)
{
	bool		added;
	int			number = string_table_add(&syms->names, s, &added);

	if (added)
	{
		if (syms->file_cap < syms->names.cap)
		{
			syms->file_cap = syms->names.cap;
			syms->file = repalloc_huge(syms->file, sizeof(char *) * syms->file_cap);
		}
		syms->file[number] = pstrdup(file);
	}
	return number;
}

/* Distinct location ids being collected, those of a table known left out. */
typedef struct IdList
{
	locmap_hash *known;			/* NULL: none */
	locmap_hash *seen;			/* as a set */
	uint64	   *ids;
	int			n;
	int			cap;
} IdList;

static void
id_list_init(IdList *l, locmap_hash *known)
{
	l->known = known;
	l->seen = locmap_create(CurrentMemoryContext, 4096, NULL);
	l->cap = 1024;
	l->ids = palloc(sizeof(uint64) * l->cap);
	l->n = 0;
}

static void
id_list_add(IdList *l, uint64 id)
{
	bool		found;

	if (l->known && locmap_lookup(l->known, id) != NULL)
		return;
	locmap_insert(l->seen, id, &found);
	if (found)
		return;
	if (l->n == l->cap)
	{
		l->cap *= 2;
		l->ids = repalloc_huge(l->ids, sizeof(uint64) * l->cap);
	}
	l->ids[l->n++] = id;
}

/* The distinct location ids of a profile that known (if not NULL) lacks. */
static uint64 *
location_ids_not_in(const struct varlena *profile, locmap_hash *known, int *nids)
{
	IdList		l;
	ProfileReader r;
	ProfileSample s;

	id_list_init(&l, known);
	profile_reader_init(&r, profile);
	while (profile_reader_next(&r, &s))
		for (int i = 0; i < s.nframes; i++)
			id_list_add(&l, profile_sample_frame(&s, i));
	locmap_destroy(l.seen);
	*nids = l.n;
	return l.ids;
}

uint64 *
profile_location_ids(const struct varlena *profile, int *nids)
{
	return location_ids_not_in(profile, NULL, nids);
}

/* Last path component of a file name. */
static const char *
base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A location's names: one frame per line, or for none its binary and address. */
static void
name_location(Symbols *syms, SymLocation *loc, const MetaLocation *ml,
			   const MetaFunction *fns, int nfns, const MetaMapping *maps, int nmaps)
{
	if (ml->nlines > 0)
	{
		loc->nframes = ml->nlines;
		loc->frames = palloc(sizeof(int) * ml->nlines);
		for (int i = 0; i < ml->nlines; i++)
		{
			const MetaFunction *f = metastore_find_function(fns, nfns, ml->function_ids[i]);
			const char *name = f == NULL ? "<unknown>" :
				f->name[0] ? f->name : f->system_name[0] ? f->system_name : "<unknown>";

			loc->frames[i] = intern(syms, name, f ? f->filename : "");
		}
		loc->top_names = loc->frames;
	}
	else
	{
		const MetaMapping *m = ml->has_mapping ?
			metastore_find_mapping(maps, nmaps, ml->mapping_id) : NULL;
		const char *bin = base_name(m ? m->file : "");
		char	   *tree_name;
		char	   *top_name;

		if (*bin)
		{
			top_name = psprintf("[%s]", bin);
			tree_name = psprintf("[%s] 0x%llx", bin, (unsigned long long) ml->address);
		}
		else
		{
			top_name = "<unknown>";
			tree_name = psprintf("<unknown> 0x%llx", (unsigned long long) ml->address);
		}
		loc->nframes = 1;
		loc->frames = palloc(sizeof(int));
		loc->top_names = palloc(sizeof(int));
		loc->frames[0] = intern(syms, tree_name, "");
		loc->top_names[0] = intern(syms, top_name, "");
	}
}

Symbols *
symbols_create(void)
{
	Symbols    *syms = palloc0(sizeof(Symbols));

	syms->cxt = CurrentMemoryContext;
	syms->locations = locmap_create(syms->cxt, 4096, NULL);
	string_table_init(&syms->names, "parca symbol names");
	syms->file_cap = syms->names.cap;
	syms->file = palloc(sizeof(char *) * syms->file_cap);
	return syms;
}

Symbols *
symbols_load(const struct varlena *profile)
{
	Symbols    *syms = symbols_create();

	symbols_add_profile(syms, profile);
	return syms;
}

/* Names the locations ids (nids of them, none named already). */
static void
add_locations(Symbols *syms, const uint64 *ids, int nids)
{
	MemoryContext cxt = syms->cxt;
	MemoryContext caller = MemoryContextSwitchTo(cxt);
	MetaLocation *locs;
	MetaFunction *fns = NULL;
	MetaMapping *maps = NULL;
	int			nlocs,
				nfns = 0,
				nmaps = 0;
	uint64	   *fn_ids;
	uint64	   *map_ids;
	int			nfn_ids = 0,
				nmap_ids = 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	MemoryContextSwitchTo(cxt);
	locs = metastore_read_locations(ids, nids, &nlocs);

	/*
	 * The functions of their lines, and the mappings of those without
	 * lines; repeated ids cost nothing, the index scan sorts them out.
	 */
	for (int i = 0; i < nlocs; i++)
		nfn_ids += locs[i].nlines;
	fn_ids = palloc(sizeof(uint64) * Max(nfn_ids, 1));
	map_ids = palloc(sizeof(uint64) * Max(nlocs, 1));
	nfn_ids = 0;
	for (int i = 0; i < nlocs; i++)
	{
		if (locs[i].nlines == 0 && locs[i].has_mapping)
			map_ids[nmap_ids++] = locs[i].mapping_id;
		for (int j = 0; j < locs[i].nlines; j++)
			fn_ids[nfn_ids++] = locs[i].function_ids[j];
	}
	if (nfn_ids > 0)
		fns = metastore_read_functions(fn_ids, nfn_ids, &nfns);
	if (nmap_ids > 0)
		maps = metastore_read_mappings(map_ids, nmap_ids, &nmaps);

	for (int i = 0; i < nlocs; i++)
	{
		bool		found;
		SymLocation *loc = locmap_insert(syms->locations, locs[i].id, &found);

		CHECK_FOR_INTERRUPTS();
		name_location(syms, loc, &locs[i], fns, nfns, maps, nmaps);
	}
	/* how evenly the ids spread, for test/security's crafted ids (at LOG) */
	if (message_level_is_interesting(DEBUG2))
		locmap_stat(syms->locations);
	SPI_finish();
	MemoryContextSwitchTo(caller);
}

void
symbols_add_profile(Symbols *syms, const struct varlena *profile)
{
	MemoryContext caller = MemoryContextSwitchTo(syms->cxt);
	int			nids;

	/* only the locations not named already */
	uint64	   *ids = location_ids_not_in(profile, syms->locations, &nids);

	if (nids > 0)
		add_locations(syms, ids, nids);
	pfree(ids);
	MemoryContextSwitchTo(caller);
}

void
symbols_add_stacks(Symbols *syms, char *const *stacks, int nstacks)
{
	MemoryContext caller = MemoryContextSwitchTo(syms->cxt);
	IdList		l;

	id_list_init(&l, syms->locations);
	for (int i = 0; i < nstacks; i++)
	{
		const struct varlena *stack = (const struct varlena *) stacks[i];
		const char *frames = VARDATA_ANY(stack);
		int			nframes = (int) (VARSIZE_ANY_EXHDR(stack) / sizeof(uint64));

		for (int f = 0; f < nframes; f++)
		{
			uint64		id;

			memcpy(&id, frames + (Size) f * sizeof(uint64), sizeof(uint64));
			id_list_add(&l, id);
		}
	}
	locmap_destroy(l.seen);
	if (l.n > 0)
		add_locations(syms, l.ids, l.n);
	pfree(l.ids);
	MemoryContextSwitchTo(caller);
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
		named_frames = keyed_table_create("parca named frames", 64, sizeof(uint64),
										 sizeof(NamedFrame), TopMemoryContext);
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
		MemoryContext caller = MemoryContextSwitchTo(syms->cxt);

		loc = locmap_insert(syms->locations, id, &found);
		loc->nframes = 1;
		loc->frames = palloc(sizeof(int));
		if (named)
			loc->frames[0] = intern(syms, named->name, "");
		else					/* not in the metastore: show the id */
			loc->frames[0] = intern(syms, psprintf("<unknown location %016llx>",
												   (unsigned long long) id), "");
		loc->top_names = loc->frames;
		MemoryContextSwitchTo(caller);
	}
	return loc;
}
