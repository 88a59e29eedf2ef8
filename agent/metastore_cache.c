/*
 * metastore_cache.c
 *		The agent's cache of the server's metastore; see metastore_cache.h.
 */
#include "metastore_cache.h"

#include <stdlib.h>
#include <string.h>

#include "ids/ids.h"
#include "util.h"

static U64Map mappings;			/* id -> MsMapping */
static U64Map functions;		/* id -> MsFunction */
static U64Map locations;		/* id -> MsLocation */
static U64Map by_address;		/* hash(mapping id, address) -> MsLocation */
static size_t total_bytes;
static uint64_t interval;		/* flush intervals so far */

/* What an entry costs besides its strings: itself and its hash slots. */
#define ENTRY_OVERHEAD(type) (sizeof(type) + 4 * sizeof(void *))

static uint64_t
address_key(uint64_t mapping_id, uint64_t address)
{
	uint64_t	k[2] = {mapping_id, address};

	return parca_hash64(k, sizeof(k));
}

/*
 * Names are repaired into valid UTF-8 before they are hashed, as the
 * extension repairs them (parca_utf8_repair): one bad name neither fails
 * a batch (the server accepts only valid text) nor gets an id of its own.
 */
uint64_t
ms_mapping(const char *raw_build_id, const char *raw_file)
{
	char	   *build_id_copy,
			   *file_copy;
	const char *build_id = parca_utf8_repair(raw_build_id, &build_id_copy);
	const char *file = parca_utf8_repair(raw_file, &file_copy);
	uint64_t	id = parca_mapping_id(build_id, file);
	MsMapping  *m = u64map_get(&mappings, id);

	if (m == NULL)
	{
		m = xcalloc(1, sizeof(MsMapping));
		m->id = id;
		m->build_id = xstrdup(build_id);
		m->file = xstrdup(file);
		u64map_put(&mappings, id, m);
		total_bytes += ENTRY_OVERHEAD(MsMapping) + strlen(build_id) + strlen(file) + 2;
	}
	free(build_id_copy);
	free(file_copy);
	return id;
}

MsLocation *
ms_find_address(uint64_t mapping_id, uint64_t address)
{
	MsLocation *loc = u64map_get(&by_address, address_key(mapping_id, address));

	if (loc)
		loc->last_used = interval;
	return loc;
}

static size_t
function_bytes(const MsFunction *f)
{
	return ENTRY_OVERHEAD(MsFunction) + strlen(f->name) + strlen(f->system_name) +
		strlen(f->filename) + 3;
}

static size_t
location_bytes(const MsLocation *l)
{
	return ENTRY_OVERHEAD(MsLocation) + l->nlines * (sizeof(uint64_t) + sizeof(int64_t));
}

static uint64_t
ms_function(const FrameLine *l)
{
	char	   *copies[3];
	const char *name = parca_utf8_repair(l->name, &copies[0]);
	const char *system_name = parca_utf8_repair(l->system_name, &copies[1]);
	const char *filename = parca_utf8_repair(l->filename, &copies[2]);
	uint64_t	id = parca_function_id(name, system_name, filename, l->start_line);
	MsFunction *f = u64map_get(&functions, id);

	if (f == NULL)
	{
		f = xcalloc(1, sizeof(MsFunction));
		f->id = id;
		f->name = xstrdup(name);
		f->system_name = xstrdup(system_name);
		f->filename = xstrdup(filename);
		f->start_line = l->start_line;
		u64map_put(&functions, id, f);
		total_bytes += function_bytes(f);
	}
	for (int i = 0; i < 3; i++)
		free(copies[i]);
	return id;
}

MsLocation *
ms_location(const char *build_id, const char *file, uint64_t address,
			int nlines, const FrameLine *lines, bool symbolized)
{
	uint64_t	mapping_id = file ? ms_mapping(build_id, file) : 0;
	uint64_t   *fids = xcalloc(nlines, sizeof(uint64_t));
	int64_t    *lns = xcalloc(nlines, sizeof(int64_t));
	uint64_t	id;
	MsLocation *loc;

	for (int i = 0; i < nlines; i++)
	{
		fids[i] = ms_function(&lines[i]);
		lns[i] = lines[i].line;
	}
	id = parca_location_id(mapping_id, file != NULL && build_id[0] != '\0',
						   address, nlines, fids, lns);
	loc = u64map_get(&locations, id);
	if (loc == NULL)
	{
		loc = xcalloc(1, sizeof(MsLocation));
		loc->id = id;
		loc->mapping_id = mapping_id;
		loc->address = address;
		loc->nlines = nlines;
		loc->function_ids = fids;
		loc->lines = lns;
		loc->symbolized = symbolized;
		u64map_put(&locations, id, loc);
		total_bytes += location_bytes(loc);
	}
	else
	{
		free(fids);
		free(lns);
	}
	loc->last_used = interval;
	u64map_put(&by_address, address_key(mapping_id, address), loc);
	return loc;
}

void
ms_set_lines(MsLocation *loc, int nlines, const FrameLine *lines)
{
	total_bytes -= location_bytes(loc);
	free(loc->function_ids);
	free(loc->lines);
	loc->function_ids = xcalloc(nlines, sizeof(uint64_t));
	loc->lines = xcalloc(nlines, sizeof(int64_t));
	for (int i = 0; i < nlines; i++)
	{
		loc->function_ids[i] = ms_function(&lines[i]);
		loc->lines[i] = lines[i].line;
	}
	loc->nlines = nlines;
	loc->symbolized = true;
	total_bytes += location_bytes(loc);
}

MsMapping *
ms_get_mapping(uint64_t id)
{
	return u64map_get(&mappings, id);
}

MsFunction *
ms_get_function(uint64_t id)
{
	return u64map_get(&functions, id);
}

MsLocation *
ms_get_location(uint64_t id)
{
	return u64map_get(&locations, id);
}

MsLocation *
ms_use_location(uint64_t id)
{
	MsLocation *loc = u64map_get(&locations, id);

	if (loc)
		loc->last_used = interval;
	return loc;
}

static void
free_location(MsLocation *l)
{
	MsLocation *indexed = u64map_get(&by_address, address_key(l->mapping_id, l->address));

	if (indexed == l)
		u64map_remove(&by_address, address_key(l->mapping_id, l->address));
	total_bytes -= location_bytes(l);
	free(l->function_ids);
	free(l->lines);
	free(l);
}

static void
free_function(MsFunction *f)
{
	total_bytes -= function_bytes(f);
	free(f->name);
	free(f->system_name);
	free(f->filename);
	free(f);
}

static void
free_mapping(MsMapping *m)
{
	total_bytes -= ENTRY_OVERHEAD(MsMapping) + strlen(m->build_id) + strlen(m->file) + 2;
	free(m->build_id);
	free(m->file);
	free(m);
}

static bool
location_unused(void *v, void *arg)
{
	return ((MsLocation *) v)->last_used != interval;
}

static bool
function_unreferenced(void *v, void *arg)
{
	return !((MsFunction *) v)->referenced;
}

static bool
mapping_unreferenced(void *v, void *arg)
{
	return !((MsMapping *) v)->referenced;
}

static bool
always(void *v, void *arg)
{
	return true;
}

static void
free_location_value(void *v, void *arg)
{
	free_location(v);
}

static void
free_function_value(void *v, void *arg)
{
	free_function(v);
}

static void
free_mapping_value(void *v, void *arg)
{
	free_mapping(v);
}

/* Forget what no location kept refers to. */
static void
remove_unreferenced(void)
{
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&functions, &pos, NULL, &v))
		((MsFunction *) v)->referenced = false;
	pos = 0;
	while (u64map_next(&mappings, &pos, NULL, &v))
		((MsMapping *) v)->referenced = false;
	pos = 0;
	while (u64map_next(&locations, &pos, NULL, &v))
	{
		MsLocation *l = v;
		MsMapping  *m = l->mapping_id ? u64map_get(&mappings, l->mapping_id) : NULL;

		if (m)
			m->referenced = true;
		for (int i = 0; i < l->nlines; i++)
		{
			MsFunction *f = u64map_get(&functions, l->function_ids[i]);

			if (f)
				f->referenced = true;
		}
	}
	u64map_remove_if(&functions, function_unreferenced, free_function_value, NULL);
	u64map_remove_if(&mappings, mapping_unreferenced, free_mapping_value, NULL);
}

void
ms_trim(size_t max_bytes)
{
	if (total_bytes > max_bytes)
	{
		u64map_remove_if(&locations, location_unused, free_location_value, NULL);
		remove_unreferenced();
	}
	if (total_bytes > max_bytes)
	{
		u64map_remove_if(&locations, always, free_location_value, NULL);
		u64map_remove_if(&functions, always, free_function_value, NULL);
		u64map_remove_if(&mappings, always, free_mapping_value, NULL);
		u64map_free(&locations);
		u64map_free(&functions);
		u64map_free(&mappings);
		u64map_free(&by_address);
	}
	interval++;
}

void
ms_forget_persisted(void)
{
	size_t		pos = 0;
	void	   *v;

	while (u64map_next(&mappings, &pos, NULL, &v))
		((MsMapping *) v)->persisted = false;
	pos = 0;
	while (u64map_next(&functions, &pos, NULL, &v))
		((MsFunction *) v)->persisted = false;
	pos = 0;
	while (u64map_next(&locations, &pos, NULL, &v))
		((MsLocation *) v)->persisted = false;
}

size_t
ms_bytes(void)
{
	return total_bytes;
}
