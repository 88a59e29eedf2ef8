/*
 * metastore.c
 *		The agent's metastore cache; see metastore.h.
 */
#include "metastore.h"

#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "util.h"

static U64Map mappings;			/* id -> MsMapping */
static U64Map functions;		/* id -> MsFunction */
static U64Map locations;		/* id -> MsLocation */
static U64Map by_address;		/* hash(mapping id, address) -> MsLocation */

static uint64_t
address_key(uint64_t mapping_id, uint64_t address)
{
	uint64_t	k[2] = {mapping_id, address};

	return parca_hash64(k, sizeof(k));
}

uint64_t
ms_mapping(const char *build_id, const char *file)
{
	uint64_t	id = parca_mapping_id(build_id, file);
	MsMapping  *m = u64map_get(&mappings, id);

	if (m == NULL)
	{
		m = xcalloc(1, sizeof(MsMapping));
		m->id = id;
		m->build_id = xstrdup(build_id);
		m->file = xstrdup(file);
		u64map_put(&mappings, id, m);
	}
	return id;
}

MsLocation *
ms_find_address(uint64_t mapping_id, uint64_t address)
{
	return u64map_get(&by_address, address_key(mapping_id, address));
}

static uint64_t
ms_function(const FrameLine *l)
{
	uint64_t	id = parca_function_id(l->name, l->system_name, l->filename,
									   l->start_line);
	MsFunction *f = u64map_get(&functions, id);

	if (f == NULL)
	{
		f = xcalloc(1, sizeof(MsFunction));
		f->id = id;
		f->name = xstrdup(l->name);
		f->system_name = xstrdup(l->system_name);
		f->filename = xstrdup(l->filename);
		f->start_line = l->start_line;
		u64map_put(&functions, id, f);
	}
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
	}
	else
	{
		free(fids);
		free(lns);
	}
	u64map_put(&by_address, address_key(mapping_id, address), loc);
	return loc;
}

void
ms_set_lines(MsLocation *loc, int nlines, const FrameLine *lines)
{
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

void
ms_trim(int max_locations)
{
	size_t		pos = 0;
	void	   *v;

	if (locations.count <= (size_t) max_locations)
		return;
	while (u64map_next(&locations, &pos, NULL, &v))
	{
		MsLocation *l = v;

		free(l->function_ids);
		free(l->lines);
		free(l);
	}
	pos = 0;
	while (u64map_next(&functions, &pos, NULL, &v))
	{
		MsFunction *f = v;

		free(f->name);
		free(f->system_name);
		free(f->filename);
		free(f);
	}
	pos = 0;
	while (u64map_next(&mappings, &pos, NULL, &v))
	{
		MsMapping  *m = v;

		free(m->build_id);
		free(m->file);
		free(m);
	}
	u64map_free(&locations);
	u64map_free(&functions);
	u64map_free(&mappings);
	u64map_free(&by_address);
}
