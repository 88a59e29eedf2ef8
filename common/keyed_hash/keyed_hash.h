/*
 * keyed_hash.h
 *		Hashes for the in-memory hash tables keyed by what users send.
 *
 * Stack ids, location ids, stacks, names and stored values are content
 * that a role allowed to ingest chooses, and it can compute the ids as we
 * do (ids.h).  Under a fixed hash it can pick content whose keys share a
 * bucket (hash flooding), and every query that reads it then probes a
 * chain as long as the table: quadratic time.  These hashes are keyed by a
 * secret random key chosen once per process, and each 64-bit word goes
 * through a 64x64->128-bit multiply by a keyed word whose halves are
 * folded together, so that no difference between two inputs passes
 * through the same way for every key (as a top-bit difference passes a
 * multiply by a constant).
 *
 * They live only in memory and differ from process to process: never store
 * one, send one to another process, or show the order of a table iterated
 * by them.  Stored ids are parca_hash64 (ids.h).  Plain C: the agent and
 * the server may link it too.
 */
#ifndef PARCA_KEYED_HASH_H
#define PARCA_KEYED_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern uint64_t keyed_hash_key[4];	/* [0] == 0: not chosen yet */

/* Chooses keyed_hash_key, once per process. */
extern void keyed_hash_choose_key(void);

/* The two halves of a 128-bit product, folded. */
static inline uint64_t
keyed_hash_fold_mul(uint64_t a, uint64_t b)
{
	unsigned __int128 p = (unsigned __int128) a * b;

	return (uint64_t) p ^ (uint64_t) (p >> 64);
}

static inline void
keyed_hash_ensure_key(void)
{
	if (__builtin_expect(keyed_hash_key[0] == 0, 0))
		keyed_hash_choose_key();
}

/* The hash of a 64-bit key. */
static inline uint32_t
keyed_hash_u64(uint64_t k)
{
	keyed_hash_ensure_key();
	return (uint32_t) keyed_hash_fold_mul(keyed_hash_fold_mul(k ^ keyed_hash_key[0],
															  keyed_hash_key[1]),
										  keyed_hash_key[2]);
}

/* The hash of len bytes. */
static inline uint32_t
keyed_hash_bytes(const void *data, size_t len)
{
	const char *p = data;
	uint64_t	h;
	size_t		i = 0;

	keyed_hash_ensure_key();
	h = keyed_hash_key[3] ^ len;
	for (; i + 16 <= len; i += 16)
	{
		uint64_t	a,
					b;

		memcpy(&a, p + i, sizeof(a));
		memcpy(&b, p + i + 8, sizeof(b));
		h = keyed_hash_fold_mul(a ^ keyed_hash_key[0], b ^ h ^ keyed_hash_key[1]);
	}
	if (i < len)
	{
		uint64_t	a = 0,
					b = 0;
		size_t		rest = len - i;

		memcpy(&a, p + i, rest < sizeof(a) ? rest : sizeof(a));
		if (rest > sizeof(a))
			memcpy(&b, p + i + 8, rest - sizeof(a));
		h = keyed_hash_fold_mul(a ^ keyed_hash_key[0], b ^ h ^ keyed_hash_key[1]);
	}
	return (uint32_t) keyed_hash_fold_mul(h ^ keyed_hash_key[2], len ^ keyed_hash_key[3]);
}

#endif							/* PARCA_KEYED_HASH_H */
