/*
 * grow_array.c
 *		Growing an array whose new elements start filled (grow_array.h).
 */
#include "postgres.h"

#include "query/grow_array.h"

void *
grow_array(MemoryContext cxt, void *array, Size elem_size, int cap, int new_cap, int fill)
{
	char	   *grown;

	Assert(cap >= 0 && new_cap > cap);
	/* huge: a stripe's dictionary may pass MaxAllocSize / elem_size entries */
	if (cap == 0)
		grown = MemoryContextAllocHuge(cxt, elem_size * new_cap);
	else
		grown = repalloc_huge(array, elem_size * new_cap);
	memset(grown + elem_size * cap, fill, elem_size * (new_cap - cap));
	return grown;
}

int
grow_cap(int cap, int64 need, int least)
{
	Assert(cap >= 0 && need > cap);
	if (need > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a query's array would pass %d elements", PG_INT32_MAX)));
	return (int) Min(Max(Max((int64) cap * 2, need), least), PG_INT32_MAX);
}
