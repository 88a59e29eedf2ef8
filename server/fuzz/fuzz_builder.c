/*
 * libFuzzer harness: the profile builder driven by the input (frames,
 * samples, labels, sample types, a small budget), its output decoded by
 * protobuf-c from common/pprof/profile.proto and checked: every sample refers
 * to locations that exist and has one value per sample type.
 */
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"
#include "profile_builder.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *p,
		   *end;

static uint8_t
next(void)
{
	return p < end ? *p++ : 0;
}

/* a short string from the input */
static void
next_str(char *buf, size_t cap)
{
	size_t		n = next() % cap;

	for (size_t i = 0; i < n; i++)
		buf[i] = (char) next();
	buf[n] = 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProfileBuilder *b;
	uint64_t	locs[64] = {0};
	size_t		nlocs_made = 0;
	int64_t		values[PB_MAX_SAMPLE_TYPES];
	size_t		ntypes;
	uint8_t    *out;
	size_t		len;
	Perftools__Profiles__Profile *prof;

	p = data;
	end = data + size;
	b = pb_create(1024 + (size_t) next() * 4096);
	if (!b)
		return 0;
	ntypes = next() % 4;
	for (size_t i = 0; i < ntypes; i++)
	{
		char		t[16],
					u[16];

		next_str(t, sizeof(t));
		next_str(u, sizeof(u));
		pb_sample_type(b, t, u);
	}
	pb_period(b, "cpu", "nanoseconds", (int64_t) next() << 20);
	while (p < end && !pb_error(b))
	{
		uint8_t		op = next() % 3;

		if (op == 0 && nlocs_made < 64)
		{
			char		fn[32],
						file[16],
						map[8];

			next_str(fn, sizeof(fn));
			next_str(file, sizeof(file));
			next_str(map, sizeof(map));
			locs[nlocs_made] = pb_frame(b, fn, file, (int8_t) next(), map);
			if (locs[nlocs_made])
				nlocs_made++;
		}
		else if (op == 1 && nlocs_made)
		{
			uint64_t	stack[16];
			size_t		n = next() % 16;
			PbLabel		labels[2];
			char		v[8];
			size_t		nl = next() % 3;

			for (size_t i = 0; i < n; i++)
				stack[i] = locs[next() % nlocs_made];
			for (size_t i = 0; i < PB_MAX_SAMPLE_TYPES; i++)
				values[i] = (int8_t) next();
			next_str(v, sizeof(v));
			labels[0] = (PbLabel) {"k", v, 0, NULL};
			labels[1] = (PbLabel) {"n", NULL, (int8_t) next(), "bytes"};
			pb_sample(b, stack, n, values, labels, nl);
		}
		else if (op == 2)
		{
			/* a hostile call: a location that does not exist */
			uint64_t	bad = 1000000;

			if (next() == 0xff && pb_sample(b, &bad, 1, values, NULL, 0))
				abort();
		}
	}
	if (pb_encode(b, &out, &len))
	{
		prof = perftools__profiles__profile__unpack(NULL, len, out);
		if (!prof || prof->n_sample_type != ntypes)
			abort();
		for (size_t i = 0; i < prof->n_sample; i++)
		{
			if (prof->sample[i]->n_value != ntypes)
				abort();
			for (size_t k = 0; k < prof->sample[i]->n_location_id; k++)
				if (prof->sample[i]->location_id[k] == 0 || prof->sample[i]->location_id[k] > prof->n_location)
					abort();
		}
		perftools__profiles__profile__free_unpacked(prof, NULL);
		free(out);
	}
	pb_destroy(b);
	return 0;
}
