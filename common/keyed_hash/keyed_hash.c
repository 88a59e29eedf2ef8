/*
 * keyed_hash.c
 *		The key of the hashes of in-memory tables (keyed_hash.h).
 */
#include "keyed_hash/keyed_hash.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

uint64_t	keyed_hash_key[4];

void
keyed_hash_choose_key(void)
{
	uint64_t	key[4];

	if (getrandom(key, sizeof(key), 0) != (ssize_t) sizeof(key))
	{
		/*
		 * No getrandom (a kernel before 3.17): what an attacker outside the
		 * process cannot read, mixed; weaker, but never a crash.
		 */
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		key[0] = (uint64_t) now.tv_nsec ^ (uint64_t) now.tv_sec << 32;
		key[1] = (uint64_t) (uintptr_t) &now ^ (uint64_t) getpid() << 40;
		key[2] = (uint64_t) (uintptr_t) keyed_hash_choose_key;
		key[3] = keyed_hash_fold_mul(key[0] | 1, key[1] | 1) ^ key[2];
	}
	/* [0] == 0 means "not chosen"; odd multipliers keep every bit */
	key[0] |= 1;
	key[1] |= 1;
	key[2] |= 1;
	memcpy(keyed_hash_key, key, sizeof(key));
}
