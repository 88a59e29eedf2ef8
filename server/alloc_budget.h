/*
 * A protobuf-c allocator that charges what it hands out against a budget,
 * so that decoding a hostile message stops at the budget.
 */
#ifndef SERVER_ALLOC_BUDGET_H
#define SERVER_ALLOC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

typedef struct AllocBudget
{
	size_t		left;
	bool		exceeded;		/* an allocation was refused for the budget */
	ProtobufCAllocator allocator;
} AllocBudget;

/* b->allocator allocates from limit bytes */
void		alloc_budget_init(AllocBudget *b, size_t limit);

#endif
