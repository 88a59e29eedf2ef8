/*
 * ids.c
 *		Content-derived identifiers; see ids.h.
 *
 * The hash reads the key as little-endian 64-bit words, folds each word in
 * with a multiply and rotate, and finishes with a full avalanche, so that
 * similar keys (addresses a few bytes apart) land far apart.  Words are
 * assembled byte by byte, so the result does not depend on the host.
 */
#include "ids/ids.h"

#include <stdlib.h>
#include <string.h>

#define MIX_MUL_A	UINT64_C(0x9e3779b97f4a7c15)
#define MIX_MUL_B	UINT64_C(0xbf58476d1ce4e5b9)
#define MIX_MUL_C	UINT64_C(0x94d049bb133111eb)

static inline uint64_t
rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t
avalanche(uint64_t h)
{
	h ^= h >> 30;
	h *= MIX_MUL_B;
	h ^= h >> 27;
	h *= MIX_MUL_C;
	h ^= h >> 31;
	return h;
}

/*
 * A streaming hasher: bytes are gathered into 64-bit words, each word is
 * folded into the state, and the total length goes into the final mix.
 */
typedef struct Hasher
{
	uint64_t	state;
	uint64_t	pending;		/* bytes not yet folded, little-endian */
	unsigned	npending;
	uint64_t	length;
} Hasher;

static void
hasher_init(Hasher *h, char tag)
{
	h->state = MIX_MUL_A;
	h->pending = 0;
	h->npending = 0;
	h->length = 0;
	if (tag)
	{
		unsigned char t = (unsigned char) tag;

		h->pending = t;
		h->npending = 1;
		h->length = 1;
	}
}

static inline void
hasher_fold(Hasher *h, uint64_t word)
{
	h->state = rotl64(h->state ^ (word * MIX_MUL_B), 29) * MIX_MUL_A;
}

static void
hasher_put(Hasher *h, const void *data, size_t len)
{
	const unsigned char *p = data;

	h->length += len;
	while (len > 0 && h->npending > 0)
	{
		h->pending |= (uint64_t) *p++ << (8 * h->npending);
		len--;
		if (++h->npending == 8)
		{
			hasher_fold(h, h->pending);
			h->pending = 0;
			h->npending = 0;
		}
	}
	while (len >= 8)
	{
		uint64_t	w = 0;

		for (int i = 0; i < 8; i++)
			w |= (uint64_t) p[i] << (8 * i);
		hasher_fold(h, w);
		p += 8;
		len -= 8;
	}
	while (len > 0)
	{
		h->pending |= (uint64_t) *p++ << (8 * h->npending);
		h->npending++;
		len--;
	}
}

static uint64_t
hasher_finish(Hasher *h)
{
	if (h->npending > 0)
		hasher_fold(h, h->pending);
	return avalanche(h->state ^ (h->length * MIX_MUL_C));
}

uint64_t
parca_hash64(const void *data, size_t len)
{
	Hasher		h;

	hasher_init(&h, 0);
	hasher_put(&h, data, len);
	return hasher_finish(&h);
}

/* Strings go in with their NUL, so ("ab","c") and ("a","bc") differ. */
static void
hasher_put_str(Hasher *h, const char *s)
{
	if (s == NULL)
		s = "";
	hasher_put(h, s, strlen(s) + 1);
}

static void
hasher_put_u64(Hasher *h, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char) (v >> (8 * i));
	hasher_put(h, b, 8);
}

uint64_t
parca_mapping_id(const char *build_id, const char *file)
{
	Hasher		h;

	hasher_init(&h, 'M');
	hasher_put_str(&h, build_id);
	hasher_put_str(&h, file);
	return hasher_finish(&h);
}

uint64_t
parca_function_id(const char *name, const char *system_name,
				  const char *filename, int64_t start_line)
{
	Hasher		h;

	hasher_init(&h, 'F');
	hasher_put_str(&h, name);
	hasher_put_str(&h, system_name);
	hasher_put_str(&h, filename);
	hasher_put_u64(&h, (uint64_t) start_line);
	return hasher_finish(&h);
}

uint64_t
parca_location_id(uint64_t mapping_id, bool mapping_has_build_id,
				  uint64_t address, int nlines,
				  const uint64_t *function_ids, const int64_t *lines)
{
	Hasher		h;
	bool		by_address = mapping_has_build_id && address != 0;

	hasher_init(&h, by_address ? 'A' : 'L');
	hasher_put_u64(&h, mapping_id);
	hasher_put_u64(&h, address);
	if (!by_address)
	{
		for (int i = 0; i < nlines; i++)
		{
			hasher_put_u64(&h, function_ids[i]);
			hasher_put_u64(&h, (uint64_t) lines[i]);
		}
	}
	return hasher_finish(&h);
}

/* As PostgreSQL's pg_utf8_islegal: no overlong forms, surrogates or > U+10FFFF. */
int
parca_utf8_char_length(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	int			n;
	unsigned char lo = 0x80,
				hi = 0xBF;		/* bounds of the second byte */

	if (c < 0x80)
		return c == 0 ? 0 : 1;
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
	{
		n = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	}
	else if (c >= 0xF0 && c <= 0xF4)
	{
		n = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	}
	else
		return 0;
	if ((size_t) n > len || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

const char *
parca_utf8_repair(const char *s, char **copy)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		len = strlen(s);
	size_t		valid = 0;
	char	   *out;
	size_t		o = 0;

	*copy = NULL;
	while (valid < len)
	{
		int			n = parca_utf8_char_length(p + valid, len - valid);

		if (n == 0)
			break;
		valid += n;
	}
	if (valid == len)
		return s;
	/* Each bad byte becomes 3 bytes at most. */
	out = malloc(len * 3 + 1);
	if (out == NULL)
		return s;
	memcpy(out, s, valid);
	o = valid;
	for (size_t i = valid; i < len;)
	{
		int			n = parca_utf8_char_length(p + i, len - i);

		if (n > 0)
		{
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		}
		else
		{
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	*copy = out;
	return out;
}
