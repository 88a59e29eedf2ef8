/*
 * keyed_table.h
 *		Dynahash tables whose keys users choose (ids, hashes of labels),
 *		hashed by keyed_hash_bytes (keyed_hash.h) rather than by a fixed
 *		hash that crafted keys could make share a bucket.
 */
#ifndef PARCA_TYPES_KEYED_TABLE_H
#define PARCA_TYPES_KEYED_TABLE_H

#include "postgres.h"

#include "utils/hsearch.h"

/* A table in cxt of entries of entrysize bytes led by a key of keysize. */
extern HTAB *keyed_table_create(const char *name, long nelem, Size keysize, Size entrysize,
								MemoryContext cxt);

#endif							/* PARCA_TYPES_KEYED_TABLE_H */
