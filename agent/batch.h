/*
 * batch.h
 *		One flush interval's aggregated samples, ready to be written, with
 *		the metastore rows they need that the server may not have yet.
 *
 * A batch owns copies of everything it needs, so it can wait in the
 * writer's backlog while the agent's caches move on.
 */
#ifndef AGENT_BATCH_H
#define AGENT_BATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct Batch
{
	struct Batch *next;			/* in the writer's queue */
	uint64_t	batch_id;		/* unique per node, increasing */
	uint64_t	time_ns;		/* end of the window, Unix time */
	uint64_t	duration_ns;	/* length of the window */
	int			nseries;
	char	   *series;			/* label sets: text[] literal of JSON objects */
	int		   *series_kind;	/* SAMPLE_ON_CPU or SAMPLE_OFF_CPU, per series */
	int			nsamples;
	int		   *sample_series;	/* index into series */
	int64_t    *values;
	int		   *stack_start;	/* nsamples + 1 offsets into frames */
	uint64_t   *frames;			/* location ids, leaf first */

	/*
	 * Metastore rows not known to be on the server, as PostgreSQL array
	 * literals, one per column.
	 */
	char	   *mappings[3];	/* id, build_id, file */
	char	   *functions[5];	/* id, name, system_name, filename, start_line */
	char	   *locations[6];	/* id, mapping_id, address, line_count, and
								 * function_ids, line_numbers of all their
								 * lines (parca_store_locations) */
	/* Their ids, to mark them known once the batch is committed. */
	uint64_t   *new_ids[3];		/* mappings, functions, locations */
	int			nnew_ids[3];

	/*
	 * The server's metastore generation (parca_metastore_generation())
	 * under which the rows left out were known to be there; -1 if none
	 * was left out.  The writer writes the batch only under that
	 * generation: after a collection the rows are chosen again
	 * (batch_rebuild).  committed_generation: the one it was written under.
	 */
	int64_t		generation;
	int64_t		committed_generation;

	size_t		bytes;			/* memory held, for the backlog bound */
} Batch;

extern void batch_free(Batch *b);

/* Note in the agent's metastore that the server has b's rows now. */
extern void batch_mark_persisted(const Batch *b);

/*
 * The server's metastore generation is now this one: if it is newer than
 * the one the agent's marks of what the server has were made under, a
 * collection ran since and the marks are forgotten.
 */
extern void batch_note_generation(int64_t generation);

/*
 * Choose b's metastore rows again, under the current marks (after
 * batch_note_generation).  A sample with a frame the agent's metastore
 * has forgotten since the batch was built cannot be completed and is
 * dropped; returns the sum of the values dropped.
 */
extern int64_t batch_rebuild(Batch *b);

#endif							/* AGENT_BATCH_H */
