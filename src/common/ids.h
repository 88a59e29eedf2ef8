/*
 * ids.h
 *		Content-derived 64-bit identifiers for mappings, functions and
 *		locations.
 *
 * The metastore keys every mapping, function and location by a hash of
 * what it is, not by a sequence.  Any writer (the extension, the agent)
 * computes the same id for the same frame without asking the server, so
 * stacks can be built before the metastore is consulted and a retried
 * write registers nothing twice.  Plain C: the agent links it too.
 */
#ifndef PARCA_IDS_H
#define PARCA_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A 64-bit hash of a byte string; stable across machines and versions. */
extern uint64_t parca_hash64(const void *data, size_t len);

/* Mapping identity: build id and file name. */
extern uint64_t parca_mapping_id(const char *build_id, const char *file);

/* Function identity: all four pprof fields. */
extern uint64_t parca_function_id(const char *name, const char *system_name,
								  const char *filename, int64_t start_line);

/*
 * Location identity.  A location inside a mapping that has a build id and
 * a non-zero address is that address in that file: its lines are facts
 * about it that symbolization may add later, so they are not part of the
 * key.  Any other location is identified by its lines as well.
 * function_ids and lines have nlines entries, innermost first.
 */
extern uint64_t parca_location_id(uint64_t mapping_id, bool mapping_has_build_id,
								  uint64_t address, int nlines,
								  const uint64_t *function_ids,
								  const int64_t *lines);

#endif							/* PARCA_IDS_H */
