/* alloc_budget.c: protobuf-c allocations within a budget (alloc_budget.h) */
#include "alloc_budget.h"

#include <stdint.h>
#include <stdlib.h>

static void *
budget_alloc(void *data, size_t size)
{
	AllocBudget *b = data;
	size_t	   *p;

	if (size > b->left || size > SIZE_MAX - sizeof(size_t))
	{
		b->exceeded = true;
		return NULL;
	}
	p = malloc(size + sizeof(size_t));
	if (!p)
		return NULL;
	b->left -= size;
	p[0] = size;
	return p + 1;
}

static void
budget_free(void *data, void *ptr)
{
	AllocBudget *b = data;
	size_t	   *p = ptr;

	if (!p)
		return;
	b->left += p[-1];
	free(p - 1);
}

void
alloc_budget_init(AllocBudget *b, size_t limit)
{
	b->left = limit;
	b->exceeded = false;
	b->allocator.alloc = budget_alloc;
	b->allocator.free = budget_free;
	b->allocator.allocator_data = b;
}
