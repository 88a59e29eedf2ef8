/*
 * jfr_values.c: the JFR converter's arrays, maps and strings (jfr_internal.h)
 *
 * Every allocation is charged to the conversion's budget: arrays grow by
 * doubling, maps are open addressing tables kept at most half full, and
 * strings are copied into the chunk's arena, repaired to valid UTF-8.
 */
#include "jfr_internal.h"

#include <stdlib.h>
#include <string.h>

#include "ids/ids.h"

bool
jfr_grow(Jfr *j, void **arr, uint32_t *cap, size_t need, size_t elem)
{
	size_t		ncap;
	void	   *n;

	if (j->conv.failed)
		return false;
	if (need <= *cap)
		return true;
	if (need > UINT32_MAX / 2)
	{
		push_fail(&j->conv, "too many entries");
		return false;
	}
	ncap = *cap ? (size_t) *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = push_alloc(&j->conv, ncap * elem);
	if (!n)
		return false;
	if (*arr)
		memcpy(n, *arr, (size_t) *cap * elem);
	/* new elements start zeroed (frame_loc relies on it) */
	memset((char *) n + (size_t) *cap * elem, 0, (ncap - *cap) * elem);
	push_free(&j->conv, *arr);
	*arr = n;
	*cap = (uint32_t) ncap;
	return true;
}

/* maps */

/* sets key to val (a key there keeps its value unless replace) */
bool
jfr_map_put(Jfr *j, U64Map *m, uint64_t key, uint64_t val, bool replace)
{
	if ((m->n + 1) * 2 > m->cap)
	{
		size_t		ncap = m->cap ? m->cap * 2 : 64;
		uint64_t   *keys,
				   *vals;

		if (ncap > SIZE_MAX / 16)
		{
			push_fail(&j->conv, "too many entries");
			return false;
		}
		keys = push_alloc(&j->conv, ncap * sizeof(uint64_t));
		vals = push_alloc(&j->conv, ncap * sizeof(uint64_t));
		if (!keys || !vals)
		{
			push_free(&j->conv, keys);
			push_free(&j->conv, vals);
			return false;
		}
		memset(vals, 0xff, ncap * sizeof(uint64_t));
		for (size_t i = 0; i < m->cap; i++)
			if (m->vals[i] != UINT64_MAX)
				for (size_t k = pb_hash64(m->keys[i]) & (ncap - 1);; k = (k + 1) & (ncap - 1))
					if (vals[k] == UINT64_MAX)
					{
						keys[k] = m->keys[i];
						vals[k] = m->vals[i];
						break;
					}
		push_free(&j->conv, m->keys);
		push_free(&j->conv, m->vals);
		m->keys = keys;
		m->vals = vals;
		m->cap = ncap;
	}
	for (size_t i = pb_hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
	{
		if (m->vals[i] == UINT64_MAX)
		{
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return true;
		}
		if (m->keys[i] == key)
		{
			if (replace)
				m->vals[i] = val;
			return true;
		}
	}
}

void
jfr_map_free(Jfr *j, U64Map *m)
{
	push_free(&j->conv, m->keys);
	push_free(&j->conv, m->vals);
	memset(m, 0, sizeof(*m));
}


/*
 * A string value at r: NULL for null, else UTF-8 in the chunk's arena (when
 * keep; else "" and only skipped), invalid text repaired to U+FFFD.  A
 * constant pool reference is followed when allow_ref (not from inside the
 * string pool itself, so that references cannot loop).
 */
const char *
jfr_rd_string(Jfr *j, Rd *r, bool keep, bool allow_ref)
{
	uint8_t		enc = rd_u8(r);
	uint64_t	n;
	char	   *out,
			   *o;

	switch (enc)
	{
		case 0:
			return NULL;
		case 1:
			return "";
		case 2:
			n = rd_var(r);
			if (!allow_ref)
			{
				r->bad = true;
				return NULL;
			}
			return keep ? jfr_string_ref(j, n) : "";
		case 3:					/* UTF-8 */
		case 5:					/* Latin-1 */
			n = rd_var(r);
			if (n > (uint64_t) (r->end - r->p))
			{
				r->bad = true;
				return NULL;
			}
			if (!keep)
			{
				r->p += n;
				return "";
			}
			{
				size_t		take = n > MAX_STRING_BYTES ? MAX_STRING_BYTES : (size_t) n;
				const uint8_t *s = r->p;

				out = push_arena_alloc(&j->conv, j->arena, take * 3 + 1);
				if (!out)
					return NULL;
				o = out;
				for (size_t i = 0; i < take;)
				{
					size_t		l = enc == 3 ? (size_t) parca_utf8_char_length(s + i, take - i) : 0;

					if (l)
					{
						memcpy(o, s + i, l);
						o += l;
						i += l;
					}
					else
						o += push_utf8_put(o, enc == 5 ? s[i++] : (i++, 0xFFFD));
				}
				*o = 0;
				r->p += n;
				return out;
			}
		case 4:					/* UTF-16 code units, each a varint */
			n = rd_var(r);
			if (n > (uint64_t) (r->end - r->p))
			{
				r->bad = true;
				return NULL;
			}
			{
				size_t		take = n > MAX_STRING_BYTES ? MAX_STRING_BYTES : (size_t) n;
				uint32_t	pending = 0;	/* a high surrogate */

				out = keep ? push_arena_alloc(&j->conv, j->arena, take * 4 + 1) : NULL;
				if (keep && !out)
					return NULL;
				o = out;
				for (uint64_t i = 0; i < n && !r->bad; i++)
				{
					uint32_t	c = (uint32_t) (rd_var(r) & 0xFFFF);

					if (!keep || i >= take)
						continue;
					if (pending && c >= 0xDC00 && c <= 0xDFFF)
					{
						o += push_utf8_put(o, 0x10000 + ((pending - 0xD800) << 10) + (c - 0xDC00));
						pending = 0;
						continue;
					}
					if (pending)
						o += push_utf8_put(o, 0xFFFD);
					pending = 0;
					if (c >= 0xD800 && c <= 0xDBFF)
						pending = c;
					else
						o += push_utf8_put(o, c);
				}
				if (!keep)
					return "";
				if (pending)
					o += push_utf8_put(o, 0xFFFD);
				*o = 0;
				return out;
			}
		default:
			r->bad = true;
			return NULL;
	}
}
