/*
 * colliding_ids N BITS: prints N addresses whose locations (of no mapping,
 * without lines: parca_location_id(0, false, address, 0, ...)) have ids
 * that agree in the low BITS bits of (id ^ id >> 32), the fold a fixed
 * hash of 64-bit keys takes before it picks a bucket by the low bits.  A
 * role allowed to ingest can compute ids as the extension does, so it can
 * send such locations: test/security/run.sh checks that they still spread
 * over the hash tables that queries build from them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ids/ids.h"

int
main(int argc, char **argv)
{
	long		n;
	int			bits;
	uint64_t	mask;

	if (argc != 3 || (n = atol(argv[1])) <= 0 || (bits = atoi(argv[2])) <= 0 || bits > 32)
	{
		fprintf(stderr, "usage: colliding_ids N BITS (1-32)\n");
		return 2;
	}
	mask = (UINT64_C(1) << bits) - 1;
	for (uint64_t address = 1; n > 0; address++)
	{
		uint64_t	id = parca_location_id(0, false, address, 0, NULL, NULL);

		if (((id ^ id >> 32) & mask) == 0)
		{
			printf("%llu\n", (unsigned long long) address);
			n--;
		}
	}
	return 0;
}
