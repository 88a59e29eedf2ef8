/*
 * gen_samples.c
 *		Deterministic generator of realistic CPU profile samples, written as
 *		PostgreSQL binary COPY data for a table shaped like parca.samples:
 *		(time timestamptz, series_id bigint, stack stacktrace, value bigint,
 *		 period bigint, duration bigint, num_labels jsonb).
 *
 * usage: gen_samples ROWS [SERIES [SECONDS [SAMPLES [PROFILES]]]] > file
 *
 * The program's call graph is a set of STACKS stacks (depth 5 to 60, leaf
 * first) built by extending earlier stacks, so stacks share their root
 * frames as real ones do; location ids are 64-bit hashes.  Every 10
 * seconds each of SERIES series takes one profile: SAMPLES_PER_PROFILE
 * samples drawn from a Zipf distribution over the stacks, aggregated to
 * one row per distinct stack with its count as value.  Which stacks are
 * popular drifts over time and differs by series, so no two profiles are
 * the same.  Output stops at ROWS rows, or after PROFILES profiles of
 * each series if given.  SECONDS (default 10) and SAMPLES (default
 * SAMPLES_PER_PROFILE) change the interval and the samples per profile.
 * The same arguments always give the same bytes.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACKS 4000
#define LOCATIONS 30000
#define MIN_DEPTH 5
#define MAX_DEPTH 60
#define SAMPLES_PER_PROFILE 2000
#define ZIPF_S 1.1
#define PROFILE_SECONDS 10
#define PERIOD_NS 10000000		/* 100 Hz */
/* 2026-01-01 00:00:00 UTC in microseconds since 2000-01-01 */
#define START_US INT64_C(820540800000000)

static uint64_t rng_state = 0x5eed5eed12345678ULL;

static uint64_t
next_rand(void)
{
	uint64_t	z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double
next_unit(void)
{
	return (next_rand() >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t locations[LOCATIONS];
static int	depth[STACKS];
static uint64_t frames[STACKS][MAX_DEPTH];	/* root first */
static double cdf[STACKS];
static uint32_t counts[STACKS];
static int	touched[STACKS];

static unsigned char out[1 << 20];
static size_t outlen;

static void
flush_out(void)
{
	fwrite(out, 1, outlen, stdout);
	outlen = 0;
}

static void
put32(uint32_t v)
{
	if (outlen + 4 > sizeof(out))
		flush_out();
	out[outlen++] = v >> 24;
	out[outlen++] = v >> 16;
	out[outlen++] = v >> 8;
	out[outlen++] = v;
}

static void
put64(uint64_t v)
{
	put32((uint32_t) (v >> 32));
	put32((uint32_t) v);
}

static void
put16(uint16_t v)
{
	if (outlen + 2 > sizeof(out))
		flush_out();
	out[outlen++] = v >> 8;
	out[outlen++] = v;
}

static void
field64(uint64_t v)
{
	put32(8);
	put64(v);
}

int
main(int argc, char **argv)
{
	long long	rows = argc > 1 ? atoll(argv[1]) : 10000000;
	int			series = argc > 2 ? atoi(argv[2]) : 50;
	long long	seconds = argc > 3 ? atoll(argv[3]) : PROFILE_SECONDS;
	int			samples = argc > 4 ? atoi(argv[4]) : SAMPLES_PER_PROFILE;
	long long	profiles = argc > 5 ? atoll(argv[5]) : 0;
	long long	written = 0;
	double		total = 0;

	if (rows <= 0 || series <= 0 || seconds <= 0 || samples <= 0 || profiles < 0)
	{
		fprintf(stderr, "usage: gen_samples ROWS [SERIES [SECONDS [SAMPLES [PROFILES]]]]\n");
		return 2;
	}

	for (int i = 0; i < LOCATIONS; i++)
		locations[i] = next_rand();
	/* stacks: a prefix of an earlier stack, then new frames */
	for (int s = 0; s < STACKS; s++)
	{
		int			d = MIN_DEPTH + (int) (next_rand() % (MAX_DEPTH - MIN_DEPTH + 1));
		int			keep = 0;

		if (s > 0)
		{
			int			parent = (int) (next_rand() % s);

			keep = depth[parent] < d ? depth[parent] : d;
			keep = keep * 3 / 4;
			memcpy(frames[s], frames[parent], sizeof(uint64_t) * keep);
		}
		for (int f = keep; f < d; f++)
			frames[s][f] = locations[next_rand() % LOCATIONS];
		depth[s] = d;
	}
	for (int r = 0; r < STACKS; r++)
	{
		total += 1.0 / pow(r + 1, ZIPF_S);
		cdf[r] = total;
	}

	memcpy(out, "PGCOPY\n\377\r\n\0", 11);
	outlen = 11;
	put32(0);
	put32(0);
	for (long long p = 0; written < rows && (profiles == 0 || p < profiles); p++)
	{
		for (int sr = 0; sr < series && written < rows; sr++)
		{
			int			ntouched = 0;
			/* popularity drifts: one rank step per profile, per series offset */
			int			shift = (int) ((p + (long long) sr * 37) % STACKS);

			for (int i = 0; i < samples; i++)
			{
				double		u = next_unit() * total;
				int			lo = 0,
							hi = STACKS - 1;
				int			st;

				while (lo < hi)
				{
					int			mid = (lo + hi) / 2;

					if (cdf[mid] < u)
						lo = mid + 1;
					else
						hi = mid;
				}
				st = (lo * 7 + shift) % STACKS;
				if (counts[st]++ == 0)
					touched[ntouched++] = st;
			}
			for (int i = 0; i < ntouched; i++)
			{
				int			st = touched[i];

				if (written == rows)
				{
					counts[st] = 0;
					continue;
				}
				put16(7);
				field64((uint64_t) (START_US + p * seconds * INT64_C(1000000)));
				field64((uint64_t) (sr + 1));
				put32(4 + 8 * depth[st]);
				put32((uint32_t) depth[st]);
				for (int f = depth[st] - 1; f >= 0; f--)
					put64(frames[st][f]);
				field64(counts[st]);
				field64(PERIOD_NS);
				field64((uint64_t) seconds * 1000000000ULL);
				put32((uint32_t) -1);
				counts[st] = 0;
				written++;
			}
		}
	}
	put16((uint16_t) -1);
	flush_out();
	fflush(stdout);
	fprintf(stderr, "gen_samples: %lld rows\n", written);
	return 0;
}
