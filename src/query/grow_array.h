/*
 * grow_array.h
 *		Growing an array whose new elements start filled: the parallel arrays
 *		of per-entry sums the query functions keep, grown as a stripe's
 *		dictionary or a query's list of names grows.
 */
#ifndef PARCA_QUERY_GROW_ARRAY_H
#define PARCA_QUERY_GROW_ARRAY_H

#include "postgres.h"

/*
 * array, of cap elements of elem_size bytes (none: array is not read), made
 * new_cap elements long (new_cap > cap), in cxt when cap is 0 and in its
 * own context otherwise; every byte of the new elements is fill.  Returns
 * the array, which may have moved.
 */
extern void *grow_array(MemoryContext cxt, void *array, Size elem_size, int cap,
						int new_cap, int fill);

/*
 * The number of elements to grow an array of cap elements to, so that it
 * holds need (> cap): twice cap, at least least, at most PG_INT32_MAX, as
 * an int indexes it.  An error if need is more.
 */
extern int	grow_cap(int cap, int64 need, int least);

#endif							/* PARCA_QUERY_GROW_ARRAY_H */
