/*
 * symbols.h
 *		Names of the frames of a profile, read from the metastore in bulk.
 *
 * A profile's stacks are location ids.  Before drawing or ranking them
 * every distinct location is looked up once, with its mapping and its
 * functions, in one query over parca.locations/functions/mappings, and
 * every name is interned to a small integer.  A location expands to one
 * frame per line (inlined functions are frames of their own, as pprof
 * shows them).
 */
#ifndef PARCA_QUERY_SYMBOLS_H
#define PARCA_QUERY_SYMBOLS_H

#include "postgres.h"

#include "query/string_table.h"

typedef struct SymLocation
{
	uint64		id;				/* hash key */
	char		status;			/* used by the hash table */
	int			nframes;		/* >= 1 */
	int		   *frames;			/* frame names, innermost first */
	int		   *top_names;		/* the names `go tool pprof -top` gives them */
} SymLocation;

typedef struct Symbols
{
	MemoryContext cxt;			/* where everything is allocated */
	struct locmap_hash *locations;	/* uint64 id -> SymLocation */
	StringTable names;			/* frame names, numbered */
	char	  **file;			/* name number -> the function's source file, "" */
	int			file_cap;
} Symbols;

/*
 * Looks up every location of a serialized profile (connects to SPI on its
 * own).  Everything is allocated in the current memory context.
 */
extern Symbols *symbols_load(const struct varlena *profile);

/*
 * An empty table in the current memory context, and the locations of a
 * further profile added to it: only those not named already are looked
 * up, so that a function called for many profiles of one query (per
 * bucket of a time range) names each location once.  A name's file is
 * that of the first location named with it.
 */
extern Symbols *symbols_create(void);
extern void symbols_add_profile(Symbols *syms, const struct varlena *profile);

/* The same for nstacks stacktrace values (varlenas of location ids). */
extern void symbols_add_stacks(Symbols *syms, char *const *stacks, int nstacks);

/*
 * A location's entry; never NULL (unknown ids get a placeholder).  Valid
 * until the next call: the table may grow.
 */
extern const SymLocation *symbols_location(Symbols *syms, uint64 id);

/*
 * Names a frame that the metastore may not show yet (a synthetic frame
 * registered earlier in the same statement); kept for the session.
 */
extern void symbols_name_frame(uint64 id, const char *name);

/* The distinct location ids of a profile. */
extern uint64 *profile_location_ids(const struct varlena *profile, int *nids);

#endif							/* PARCA_QUERY_SYMBOLS_H */
