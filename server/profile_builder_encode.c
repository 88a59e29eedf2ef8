/* profile_builder_encode.c: a built profile encoded as a pprof protocol buffer (profile_builder.h) */
#include "profile_builder_internal.h"

#include <stdlib.h>
#include <string.h>

/*
 * Encoding.  Each put_* writes at p and returns the bytes written, or with p
 * NULL only counts them, so that one function both sizes a message (for its
 * length prefix) and writes it.
 */

enum
{
	WT_VARINT = 0,
	WT_LEN = 2
};

static size_t
put_varint(uint8_t *p, uint64_t v)
{
	size_t		n = 0;

	do
	{
		uint8_t		byte = (uint8_t) (v & 0x7f);

		v >>= 7;
		if (v)
			byte |= 0x80;
		if (p)
			p[n] = byte;
		n++;
	} while (v);
	return n;
}

static size_t
put_tag(uint8_t *p, uint32_t field, int wire)
{
	return put_varint(p, ((uint64_t) field << 3) | (uint64_t) wire);
}

/* a varint field, left out when zero as proto3 does */
static size_t
put_uint_field(uint8_t *p, uint32_t field, uint64_t v)
{
	size_t		n;

	if (v == 0)
		return 0;
	n = put_tag(p, field, WT_VARINT);
	return n + put_varint(p ? p + n : NULL, v);
}

static size_t
put_len_prefix(uint8_t *p, uint32_t field, size_t len)
{
	size_t		n = put_tag(p, field, WT_LEN);

	return n + put_varint(p ? p + n : NULL, len);
}

static size_t
put_value_type(uint8_t *p, uint32_t field, const ValueTypeIdx *vt)
{
	size_t		body = put_uint_field(NULL, 1, (uint64_t) vt->type) + put_uint_field(NULL, 2, (uint64_t) vt->unit);
	size_t		n = put_len_prefix(p, field, body);

	n += put_uint_field(p ? p + n : NULL, 1, (uint64_t) vt->type);
	n += put_uint_field(p ? p + n : NULL, 2, (uint64_t) vt->unit);
	return n;
}

static size_t
put_label(uint8_t *p, const PbLabelIdx *l)
{
	size_t		body = put_uint_field(NULL, 1, (uint64_t) l->key) + put_uint_field(NULL, 2, (uint64_t) l->str) +
		put_uint_field(NULL, 3, (uint64_t) l->num) + put_uint_field(NULL, 4, (uint64_t) l->num_unit);
	size_t		n = put_len_prefix(p, 3, body);

	n += put_uint_field(p ? p + n : NULL, 1, (uint64_t) l->key);
	n += put_uint_field(p ? p + n : NULL, 2, (uint64_t) l->str);
	n += put_uint_field(p ? p + n : NULL, 3, (uint64_t) l->num);
	n += put_uint_field(p ? p + n : NULL, 4, (uint64_t) l->num_unit);
	return n;
}

static size_t
put_sample(const ProfileBuilder *b, uint8_t *p, size_t idx)
{
	const PbSample *s = &b->samples[idx];
	/* (no locations at all leave sample_locs NULL: no pointer into it then) */
	const uint64_t *locs = s->nlocs ? &b->sample_locs[s->first_loc] : NULL;
	const int64_t *vals = &b->values[idx * b->nsample_types];
	size_t		locs_len = 0,
				vals_len = 0,
				body = 0,
				n;

	for (size_t i = 0; i < s->nlocs; i++)
		locs_len += put_varint(NULL, locs[i]);
	for (size_t i = 0; i < b->nsample_types; i++)
		vals_len += put_varint(NULL, (uint64_t) vals[i]);
	if (s->nlocs)
		body += put_len_prefix(NULL, 1, locs_len) + locs_len;
	body += put_len_prefix(NULL, 2, vals_len) + vals_len;
	for (size_t i = 0; i < s->nlabels; i++)
		body += put_label(NULL, &b->sample_labels[s->first_label + i]);

	n = put_len_prefix(p, 2, body);
	if (!p)
		return n + body;
	if (s->nlocs)
	{
		n += put_len_prefix(p + n, 1, locs_len);
		for (size_t i = 0; i < s->nlocs; i++)
			n += put_varint(p + n, locs[i]);
	}
	n += put_len_prefix(p + n, 2, vals_len);
	for (size_t i = 0; i < b->nsample_types; i++)
		n += put_varint(p + n, (uint64_t) vals[i]);
	for (size_t i = 0; i < s->nlabels; i++)
		n += put_label(p + n, &b->sample_labels[s->first_label + i]);
	return n;
}

static size_t
put_mapping(const ProfileBuilder *b, uint8_t *p, size_t idx)
{
	const PbMapping *m = &b->mappings[idx];

	/* the builder's mappings have functions (has_functions, 7) */
	size_t		body = put_uint_field(NULL, 1, idx + 1) + put_uint_field(NULL, 2, m->memory_start) +
		put_uint_field(NULL, 3, m->memory_limit) + put_uint_field(NULL, 4, m->file_offset) +
		put_uint_field(NULL, 5, (uint64_t) m->filename) + put_uint_field(NULL, 6, (uint64_t) m->build_id) +
		put_uint_field(NULL, 7, 1);
	size_t		n = put_len_prefix(p, 3, body);

	if (!p)
		return n + body;
	n += put_uint_field(p + n, 1, idx + 1);
	n += put_uint_field(p + n, 2, m->memory_start);
	n += put_uint_field(p + n, 3, m->memory_limit);
	n += put_uint_field(p + n, 4, m->file_offset);
	n += put_uint_field(p + n, 5, (uint64_t) m->filename);
	n += put_uint_field(p + n, 6, (uint64_t) m->build_id);
	n += put_uint_field(p + n, 7, 1);
	return n;
}

static size_t
put_line(uint8_t *p, const PbLine *l)
{
	size_t		body = put_uint_field(NULL, 1, l->function_id) + put_uint_field(NULL, 2, (uint64_t) l->line);
	size_t		n = put_len_prefix(p, 4, body);

	n += put_uint_field(p ? p + n : NULL, 1, l->function_id);
	n += put_uint_field(p ? p + n : NULL, 2, (uint64_t) l->line);
	return n;
}

static size_t
put_location(const ProfileBuilder *b, uint8_t *p, size_t idx)
{
	const PbLocation *l = &b->locations[idx];
	size_t		body = put_uint_field(NULL, 1, idx + 1) + put_uint_field(NULL, 2, l->mapping_id) +
		put_uint_field(NULL, 3, l->address);
	size_t		n;

	for (size_t i = 0; i < l->nlines; i++)
		body += put_line(NULL, &b->lines[l->first_line + i]);
	n = put_len_prefix(p, 4, body);
	if (!p)
		return n + body;
	n += put_uint_field(p + n, 1, idx + 1);
	n += put_uint_field(p + n, 2, l->mapping_id);
	n += put_uint_field(p + n, 3, l->address);
	for (size_t i = 0; i < l->nlines; i++)
		n += put_line(p + n, &b->lines[l->first_line + i]);
	return n;
}

static size_t
put_function(const ProfileBuilder *b, uint8_t *p, size_t idx)
{
	const PbFunction *f = &b->functions[idx];
	size_t		body = put_uint_field(NULL, 1, idx + 1) + put_uint_field(NULL, 2, (uint64_t) f->name) +
		put_uint_field(NULL, 3, (uint64_t) f->system_name) + put_uint_field(NULL, 4, (uint64_t) f->filename) +
		put_uint_field(NULL, 5, (uint64_t) f->start_line);
	size_t		n = put_len_prefix(p, 5, body);

	if (!p)
		return n + body;
	n += put_uint_field(p + n, 1, idx + 1);
	n += put_uint_field(p + n, 2, (uint64_t) f->name);
	n += put_uint_field(p + n, 3, (uint64_t) f->system_name);
	n += put_uint_field(p + n, 4, (uint64_t) f->filename);
	n += put_uint_field(p + n, 5, (uint64_t) f->start_line);
	return n;
}

static size_t
put_string(uint8_t *p, const PbString *s)
{
	size_t		n = put_len_prefix(p, 6, s->len);

	if (p && s->len)
		memcpy(p + n, s->s, s->len);
	return n + s->len;
}

/* the whole profile at p, or its size with p NULL */
static size_t
put_profile(const ProfileBuilder *b, uint8_t *p)
{
	size_t		n = 0;

#define AT (p ? p + n : NULL)
	for (size_t i = 0; i < b->nsample_types; i++)
		n += put_value_type(AT, 1, &b->sample_types[i]);
	for (size_t i = 0; i < b->nsamples; i++)
		n += put_sample(b, AT, i);
	for (size_t i = 0; i < b->nmappings; i++)
		n += put_mapping(b, AT, i);
	for (size_t i = 0; i < b->nlocations; i++)
		n += put_location(b, AT, i);
	for (size_t i = 0; i < b->nfunctions; i++)
		n += put_function(b, AT, i);
	for (size_t i = 0; i < b->nstrings; i++)
		n += put_string(AT, &b->strings[i]);
	n += put_uint_field(AT, 9, (uint64_t) b->time_nanos);
	n += put_uint_field(AT, 10, (uint64_t) b->duration_nanos);
	if (b->has_period_type)
		n += put_value_type(AT, 11, &b->period_type);
	n += put_uint_field(AT, 12, (uint64_t) b->period);
#undef AT
	return n;
}

bool
pb_encode(ProfileBuilder *b, uint8_t **out, size_t *len)
{
	size_t		size;
	uint8_t    *buf;

	if (out)
		*out = NULL;
	if (len)
		*len = 0;
	if (!b || !out || !len)
		return false;
	if (b->failed)
		return false;
	if (b->nsample_types == 0)
	{
		pb_fail(b, "a profile without sample types");
		return false;
	}
	size = put_profile(b, NULL);
	if (size > b->budget->left)
	{
		b->budget->exceeded = true;
		pb_fail(b, "the profile needs more memory than the limit (%zu bytes)", b->limit);
		return false;
	}
	buf = malloc(size ? size : 1);
	if (!buf)
	{
		pb_fail(b, "out of memory");
		return false;
	}
	b->budget->left -= size;
	if (put_profile(b, buf) != size)
	{
		/* cannot happen: the two passes are the same code */
		free(buf);
		pb_fail(b, "internal error: the profile's size changed while it was written");
		return false;
	}
	*out = buf;
	*len = size;
	return true;
}
