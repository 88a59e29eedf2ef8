/*
 * string_table.c
 *		Numbering distinct strings.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "query/string_table.h"
#include "keyed_hash/keyed_hash.h"

typedef struct StringEntry
{
	const char *key;			/* points into the table's strings */
	int			number;
} StringEntry;

static uint32
string_pointer_hash(const void *key, Size keysize)
{
	const char *s = *(const char *const *) key;

	/* keyed: names are what ingesting roles send (keyed_hash.h) */
	return keyed_hash_bytes(s, strlen(s));
}

static int
string_pointer_match(const void *a, const void *b, Size keysize)
{
	return strcmp(*(const char *const *) a, *(const char *const *) b);
}

void
string_table_init(StringTable *t, const char *name)
{
	HASHCTL		ctl;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(char *);
	ctl.entrysize = sizeof(StringEntry);
	ctl.hash = string_pointer_hash;
	ctl.match = string_pointer_match;
	ctl.hcxt = CurrentMemoryContext;
	t->index = hash_create(name, 1024, &ctl,
						   HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
	t->cap = 1024;
	t->n = 0;
	t->strings = MemoryContextAlloc(ctl.hcxt, sizeof(char *) * t->cap);
}

int
string_table_add(StringTable *t, const char *s, bool *added)
{
	bool		found;
	StringEntry *e = hash_search(t->index, &s, HASH_ENTER, &found);

	if (added)
		*added = !found;
	if (found)
		return e->number;
	if (t->n == t->cap)
	{
		t->cap *= 2;
		t->strings = repalloc_huge(t->strings, sizeof(char *) * t->cap);
	}
	/* the entry's key becomes the copy: the same string, so the same hash */
	t->strings[t->n] = MemoryContextStrdup(GetMemoryChunkContext(t->strings), s);
	e->key = t->strings[t->n];
	e->number = t->n;
	return t->n++;
}

int
string_table_find(const StringTable *t, const char *s)
{
	StringEntry *e = hash_search(t->index, &s, HASH_FIND, NULL);

	return e ? e->number : -1;
}
