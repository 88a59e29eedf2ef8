/*
 * keyed_table.c
 *		Dynahash tables hashed by keyed_hash_bytes (keyed_table.h).
 */
#include "postgres.h"

#include "keyed_hash/keyed_hash.h"
#include "types/keyed_table.h"

static uint32
key_hash(const void *key, Size keysize)
{
	return keyed_hash_bytes(key, keysize);
}

HTAB *
keyed_table_create(const char *name, long nelem, Size keysize, Size entrysize, MemoryContext cxt)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hash = key_hash;
	ctl.hcxt = cxt;
	return hash_create(name, nelem, &ctl, HASH_ELEM | HASH_FUNCTION | HASH_CONTEXT);
}
