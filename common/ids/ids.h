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

/*
 * The version of the write protocol: these ids, the names they are
 * computed from (parca_utf8_repair), and the SQL functions that store
 * rows (parca_store_mappings, ...; src/metastore/store.c).  A writer checks it
 * against parca_write_protocol() when it connects; change it with any of
 * them.
 */
#define PARCA_WRITE_PROTOCOL 1

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

/*
 * Names are UTF-8 text before their ids are computed: s itself if it is
 * valid UTF-8, else a malloc'd copy (in *copy, to free) in which each byte
 * that does not start a valid character is U+FFFD, as the extension
 * repairs text in a UTF8 database (valid_text.h).  Out of memory: s.
 */
extern const char *parca_utf8_repair(const char *s, char **copy);

/* The length of the valid UTF-8 character at s (of len bytes), or 0. */
extern int	parca_utf8_char_length(const unsigned char *s, size_t len);

#endif							/* PARCA_IDS_H */
