/* pprof_scan.c: a pprof's sample types and time, without decoding it (pprof_scan.h) */
#include "pprof_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Reader
{
	const uint8_t *p;
	const uint8_t *end;
} Reader;

static bool
read_varint(Reader *r, uint64_t *v)
{
	uint64_t	x = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		uint8_t		b;

		if (r->p >= r->end)
			return false;
		b = *r->p++;
		x |= (uint64_t) (b & 0x7f) << shift;
		if (!(b & 0x80))
		{
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * The next field: its number, wire type, and its value (varints in *v,
 * length-delimited bytes in *sub).  Fixed-size fields are skipped.
 */
static bool
next_field(Reader *r, uint32_t *field, int *wire, uint64_t *v, Reader *sub)
{
	uint64_t	key;

	if (!read_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
		return false;
	*field = (uint32_t) (key >> 3);
	*wire = (int) (key & 7);
	switch (*wire)
	{
		case 0:
			return read_varint(r, v);
		case 1:
			if (r->end - r->p < 8)
				return false;
			r->p += 8;
			return true;
		case 2:
			if (!read_varint(r, v) || *v > (uint64_t) (r->end - r->p))
				return false;
			sub->p = r->p;
			sub->end = r->p + *v;
			r->p += *v;
			return true;
		case 5:
			if (r->end - r->p < 4)
				return false;
			r->p += 4;
			return true;
		default:
			return false;		/* groups are not in profile.proto */
	}
}

/* a ValueType's type and unit string indexes */
static bool
value_type(Reader sub, uint64_t *type, uint64_t *unit)
{
	uint32_t	field;
	int			wire;
	uint64_t	v;
	Reader		inner;

	*type = *unit = 0;
	while (sub.p < sub.end)
	{
		if (!next_field(&sub, &field, &wire, &v, &inner))
			return false;
		if (wire == 0 && field == 1)
			*type = v;
		else if (wire == 0 && field == 2)
			*unit = v;
	}
	return true;
}

bool
pprof_scan(const uint8_t *data, size_t len, PprofSummary *s, char *err, size_t errlen)
{
	Reader		r = {data, data + len};
	uint64_t	type_index[PPROF_MAX_SAMPLE_TYPES];
	uint64_t	unit_index[PPROF_MAX_SAMPLE_TYPES];
	uint64_t	nstrings = 0;
	uint32_t	field;
	int			wire;
	uint64_t	v;
	Reader		sub;

	memset(s, 0, sizeof(*s));
	if (!data || len == 0)
	{
		snprintf(err, errlen, "the profile is empty");
		return false;
	}
	while (r.p < r.end)
	{
		if (!next_field(&r, &field, &wire, &v, &sub))
		{
			snprintf(err, errlen, "the profile is not a pprof protocol buffer message, or a truncated one");
			return false;
		}
		if (field == 1 && wire == 2)
		{
			if (s->nsample_types == PPROF_MAX_SAMPLE_TYPES)
			{
				snprintf(err, errlen, "the profile has more than %d sample types", PPROF_MAX_SAMPLE_TYPES);
				return false;
			}
			if (!value_type(sub, &type_index[s->nsample_types], &unit_index[s->nsample_types]))
			{
				snprintf(err, errlen, "the profile's sample type %d is damaged", s->nsample_types);
				return false;
			}
			s->nsample_types++;
		}
		else if (field == 6 && wire == 2)
			nstrings++;
		else if (field == 9 && wire == 0)
			s->time_nanos = (int64_t) v;
		else if (field == 10 && wire == 0)
			s->duration_nanos = (int64_t) v;
	}
	/* the names: a second pass over the string table */
	for (int i = 0; i < s->nsample_types; i++)
		if (type_index[i] >= nstrings || unit_index[i] >= nstrings)
		{
			snprintf(err, errlen, "the profile's sample type %d refers to string %llu, but the string table has %llu entries",
					 i, (unsigned long long) (type_index[i] >= nstrings ? type_index[i] : unit_index[i]),
					 (unsigned long long) nstrings);
			return false;
		}
	r.p = data;
	for (uint64_t k = 0; r.p < r.end;)
	{
		next_field(&r, &field, &wire, &v, &sub);
		if (field != 6 || wire != 2)
			continue;
		for (int i = 0; i < s->nsample_types; i++)
		{
			size_t		n = (size_t) (sub.end - sub.p);

			if (n >= PPROF_TYPE_NAME_MAX)
				n = PPROF_TYPE_NAME_MAX - 1;
			if (type_index[i] == k)
			{
				memcpy(s->type[i], sub.p, n);
				s->type[i][n] = 0;
			}
			if (unit_index[i] == k)
			{
				memcpy(s->unit[i], sub.p, n);
				s->unit[i][n] = 0;
			}
		}
		k++;
	}
	return true;
}

bool
pprof_append_time(uint8_t **data, size_t *len, int64_t t)
{
	uint8_t    *grown;
	uint64_t	v = (uint64_t) t;
	size_t		n = *len;

	grown = realloc(*data, n + 11);
	if (!grown)
		return false;
	grown[n++] = (9 << 3) | 0;
	do
	{
		grown[n++] = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	*data = grown;
	*len = n;
	return true;
}
