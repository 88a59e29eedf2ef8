/*
 * columnar_encode.c
 *		Integer encodings of column chunks, varints, and zstd: the codecs
 *		that the chunk format (columnar_chunk.c) is made of.
 *
 * Values of pass-by-value columns (and dictionary indexes) are int64.
 * Each chunk is encoded every way that fits and the smallest wins:
 *	FOR		frame of reference: the minimum, then (value - min) bit-packed
 *			at the width of the largest difference;
 *	RLE		runs of (zigzag varint value, varint count);
 *	DELTA_*	the first value, then the differences to the previous value,
 *			FOR or RLE (times of profiles: runs of equal stamps, steps);
 *	DOD_FOR	the first value and delta, then delta-of-delta, FOR (regular
 *			intervals).
 * The encoded chunk is then compressed with zstd.
 */
#include "postgres.h"

#include <zstd.h>

#include "lib/stringinfo.h"
#include "port/pg_bswap.h"

#include "columnar/columnar_internal.h"

const char *const columnar_encoding_names[ENC_COUNT] = {
	"all_null", "for", "rle", "delta_for", "delta_rle", "dod_for", "dict", "plain",
	"words", "ids", "entries"
};

static inline uint64
zigzag(int64 v)
{
	return ((uint64) v << 1) ^ (uint64) (v >> 63);
}

static inline int64
unzigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

/* Bits a value takes in FOR over values spanning [min, max]; 64: stored whole. */
int
columnar_for_width(int64 min, int64 max)
{
	uint64		diff = (uint64) max - (uint64) min;
	int			width = diff == 0 ? 0 : 64 - __builtin_clzll(diff);

	return width > 56 ? 64 : width;
}

/* FOR: int64 min, uint8 width, then the packed differences. */
static void
encode_for(const int64 *v, int n, StringInfo out)
{
	int64		min = v[0];
	int64		max = v[0];
	int			width;
	uint64		acc = 0;
	int			bits = 0;

	for (int i = 1; i < n; i++)
	{
		if (v[i] < min)
			min = v[i];
		if (v[i] > max)
			max = v[i];
	}
	width = columnar_for_width(min, max);
	appendBinaryStringInfo(out, (char *) &min, sizeof(int64));
	appendStringInfoChar(out, (char) width);
	if (width == 0)
		return;
	if (width == 64)
	{
		for (int i = 0; i < n; i++)
		{
			uint64		d = (uint64) v[i] - (uint64) min;

			appendBinaryStringInfo(out, (char *) &d, sizeof(uint64));
		}
		return;
	}
	enlargeStringInfo(out, (int) (((int64) n * width + 7) / 8));
	for (int i = 0; i < n; i++)
	{
		acc |= ((uint64) v[i] - (uint64) min) << bits;
		bits += width;
		while (bits >= 8)
		{
			out->data[out->len++] = (char) (acc & 0xff);
			acc >>= 8;
			bits -= 8;
		}
	}
	if (bits > 0)
		out->data[out->len++] = (char) acc;
	out->data[out->len] = '\0';
}

/*
 * n values of width bits (1 to 56) above min, packed from bit shift (0 to
 * 7) of p's first byte on, into v; the caller has checked that the bytes
 * are there.
 */
static void
unpack_for(const char *p, const char *end, int shift, int width, int64 min, int64 *v, int n)
{
	uint64		mask = ((uint64) 1 << width) - 1;
	uint64		acc = 0;
	int			bits;
	int64		i = 0;

	/*
	 * While 8 bytes can be read from the value's first byte on, one load
	 * (little-endian) and a shift give it: a value spans at most 8 bytes
	 * (width <= 56, shift < 8).  The last few go byte by byte.
	 */
	if (end - p >= 8)
	{
		/* value i starts at bit shift + i * width: the last with 8 bytes there */
		int64		nfast = Min((int64) n, (8 * (end - p - 8) + 7 - shift) / width + 1);
		uint64		bit = shift;

		for (; i < nfast; i++, bit += width)
		{
			uint64		word;

			memcpy(&word, p + bit / 8, sizeof(word));
#ifdef WORDS_BIGENDIAN
			word = pg_bswap64(word);
#endif
			v[i] = (int64) ((uint64) min + ((word >> (bit % 8)) & mask));
		}
	}
	p += (i * width + shift) / 8;
	bits = -(int) ((i * width + shift) % 8);
	for (; i < n; i++)
	{
		while (bits < width)
		{
			if (bits < 0)
				acc = (uint64) (uint8) *p++ >> -bits;
			else
				acc |= (uint64) (uint8) *p++ << bits;
			bits += 8;
		}
		v[i] = (int64) ((uint64) min + (acc & mask));
		acc >>= width;
		bits -= width;
	}
}

static void
decode_for(const char *p, const char *end, int64 *v, int n)
{
	int64		min;
	int			width;

	if (end - p < 9)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk is truncated")));
	memcpy(&min, p, sizeof(int64));
	width = (uint8) p[8];
	columnar_decode_for_span(min, width, p + 9, end - (p + 9), 0, v, n);
}

/*
 * Where values lo .. lo + n - 1 of a FOR encoding of values width bits
 * wide lie: *offset bytes from the encoding's start, *size bytes.
 */
void
columnar_for_span(int width, int lo, int n, int64 *offset, int64 *size)
{
	int64		first_bit = (int64) lo * width;

	*offset = 9 + first_bit / 8;
	*size = (first_bit % 8 + (int64) n * width + 7) / 8;
}

/*
 * Values lo .. lo + n - 1 of a FOR encoding whose header is (min, width)
 * into v, from the bytes that columnar_for_span() gives (p, len of them).
 */
void
columnar_decode_for_span(int64 min, int width, const char *p, int64 len, int lo, int64 *v, int n)
{
	int64		offset;
	int64		size;

	columnar_for_span(width, lo, n, &offset, &size);
	if (len < size)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk is truncated")));
	if (width == 0)
	{
		for (int i = 0; i < n; i++)
			v[i] = min;
		return;
	}
	if (width == 64)
	{
		for (int i = 0; i < n; i++)
		{
			uint64		d;

			memcpy(&d, p + (Size) i * 8, 8);
			v[i] = (int64) ((uint64) min + d);
		}
		return;
	}
	if (width > 56)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk has a bit width of %d", width)));
	unpack_for(p, p + len, (int) (((int64) lo * width) % 8), width, min, v, n);
}

static void
encode_rle(const int64 *v, int n, StringInfo out)
{
	int			i = 0;

	while (i < n)
	{
		int			j = i + 1;

		while (j < n && v[j] == v[i])
			j++;
		columnar_put_varint(out, zigzag(v[i]));
		columnar_put_varint(out, (uint64) (j - i));
		i = j;
	}
}

/*
 * v[0..count) = val, four at a time, which the compiler turns into vector
 * stores: decoding runs was an eighth of parca_query's CPU, one store at a
 * time.
 */
static inline void
fill_run(int64 *v, int64 val, uint64 count)
{
	uint64		k = 0;

	for (; k + 4 <= count; k += 4)
	{
		v[k] = val;
		v[k + 1] = val;
		v[k + 2] = val;
		v[k + 3] = val;
	}
	for (; k < count; k++)
		v[k] = val;
}

static pg_noinline void
bad_run_length(void)
{
	ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("columnar chunk has a bad run length")));
}

static pg_noinline void
index_out_of_range(void)
{
	ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("columnar chunk has a dictionary index out of range")));
}

/*
 * The decoders below check, with check, that every value is in [0, limit)
 * as they write it (dictionary indexes; a constant where inlined).
 */
static pg_attribute_always_inline void
decode_rle(const char *p, const char *end, int64 *v, int n, bool check, uint64 limit)
{
	int			i = 0;

	while (i < n)
	{
		int64		val = unzigzag(columnar_get_varint(&p, end));
		uint64		count = columnar_get_varint(&p, end);

		if (count == 0 || count > (uint64) (n - i))
			bad_run_length();
		if (check && (uint64) val >= limit)
			index_out_of_range();
		fill_run(v + i, val, count);
		i += (int) count;
	}
}

/*
 * Whether the run of count values after acc (itself below limit), each
 * delta more than the one before (a signed step), are all below limit,
 * unsigned: they lie on a line, so its two ends tell, taken without
 * wrapping.  Once a run, not once a value.
 */
static inline void
check_run_below(uint64 acc, uint64 delta, uint64 count, uint64 limit)
{
	int128		first = (int128) (int64) acc + (int64) delta;
	int128		last = (int128) (int64) acc + (int128) (int64) delta * (int128) count;

	if (first < 0 || first >= (int128) limit || last < 0 || last >= (int128) limit)
		index_out_of_range();
}

/*
 * Runs of differences after v[0] (ENC_DELTA_RLE), added up as they are
 * written, in one pass.
 */
static pg_attribute_always_inline void
decode_delta_rle(const char *p, const char *end, int64 *v, int n, bool check, uint64 limit)
{
	uint64		acc = (uint64) v[0];
	int			i = 1;

	while (i < n)
	{
		uint64		delta = (uint64) unzigzag(columnar_get_varint(&p, end));
		uint64		count = columnar_get_varint(&p, end);

		if (count == 0 || count > (uint64) (n - i))
			bad_run_length();
		if (check)
			check_run_below(acc, delta, count, limit);
		for (uint64 k = 0; k < count; k++)
		{
			acc += delta;
			v[i + k] = (int64) acc;
		}
		i += (int) count;
	}
}

/* Whether every value that decode_for() decoded from p is below limit. */
static bool
for_below(const char *p, uint64 limit)
{
	int64		min;
	int			width = (uint8) p[8];

	memcpy(&min, p, sizeof(int64));
	return min >= 0 && width < 64 && (uint64) min < limit &&
		((uint64) 1 << width) - 1 < limit - (uint64) min;
}

static void
check_below(const int64 *v, int n, uint64 limit)
{
	for (int i = 0; i < n; i++)
		if ((uint64) v[i] >= limit)
			index_out_of_range();
}

/* Bytes of encode_for() over n values spanning [min, max]. */
static int64
for_size(int64 min, int64 max, int n)
{
	int64		offset;
	int64		size;

	columnar_for_span(columnar_for_width(min, max), 0, n, &offset, &size);
	return offset + size;
}

/*
 * Sizes of the encodings of v[0..n) as one pass: min/max (FOR) and runs
 * (RLE).  The first value opens the first run.
 */
typedef struct IntStats
{
	int64		min;
	int64		max;
	int64		rle;			/* bytes of encode_rle() */
} IntStats;

static inline void
stats_init(IntStats *st, int64 first)
{
	st->min = st->max = first;
	st->rle = 0;
}

static inline void
stats_run(IntStats *st, int64 value, int64 len)
{
	st->rle += columnar_varint_size(zigzag(value)) + columnar_varint_size((uint64) len);
}

/*
 * Encode n >= 1 values the smallest way; append to out, return the
 * encoding.  The sizes of all encodings are computed in one pass; only the
 * smallest is written.  (Dictionary indexes too: a stripe whose rows VACUUM
 * ordered numbers its entries as the rows first use them, so that a
 * profile's new stacks take consecutive indexes, runs of delta 1.)
 */
int
columnar_encode_ints(const int64 *values, int n, StringInfo out)
{
	IntStats	plain,
				delta,
				dod;
	int64		run = 1,
				drun = 1;
	int64		d = 0,
				prevd = 0,
				dd;
	int64		sizes[ENC_COUNT];
	int			best = ENC_FOR;
	int64	   *tmp;

	stats_init(&plain, values[0]);
	stats_init(&delta, n > 1 ? (int64) ((uint64) values[1] - (uint64) values[0]) : 0);
	stats_init(&dod, 0);
	for (int i = 1; i < n; i++)
	{
		int64		v = values[i];

		if (v < plain.min)
			plain.min = v;
		if (v > plain.max)
			plain.max = v;
		if (v == values[i - 1])
			run++;
		else
		{
			stats_run(&plain, values[i - 1], run);
			run = 1;
		}
		d = (int64) ((uint64) v - (uint64) values[i - 1]);
		if (i >= 2)
		{
			if (d < delta.min)
				delta.min = d;
			if (d > delta.max)
				delta.max = d;
			if (d == prevd)
				drun++;
			else
			{
				stats_run(&delta, prevd, drun);
				drun = 1;
			}
			dd = (int64) ((uint64) d - (uint64) prevd);
			if (i == 2)
				dod.min = dod.max = dd;
			else if (dd < dod.min)
				dod.min = dd;
			else if (dd > dod.max)
				dod.max = dd;
		}
		prevd = d;
	}
	stats_run(&plain, values[n - 1], run);
	if (n > 1)
		stats_run(&delta, prevd, drun);

	sizes[ENC_FOR] = for_size(plain.min, plain.max, n);
	sizes[ENC_RLE] = plain.rle;
	if (n > 2)
	{
		sizes[ENC_DELTA_FOR] = 8 + for_size(delta.min, delta.max, n - 1);
		sizes[ENC_DELTA_RLE] = 8 + delta.rle;
		sizes[ENC_DOD_FOR] = 16 + for_size(dod.min, dod.max, n - 2);
	}
	for (int e = ENC_RLE; e <= (n > 2 ? ENC_DOD_FOR : ENC_RLE); e++)
		if (sizes[e] < sizes[best])
			best = e;

	switch (best)
	{
		case ENC_FOR:
			encode_for(values, n, out);
			break;
		case ENC_RLE:
			encode_rle(values, n, out);
			break;
		default:
			tmp = palloc(sizeof(int64) * n);
			for (int i = 1; i < n; i++)
				tmp[i] = (int64) ((uint64) values[i] - (uint64) values[i - 1]);
			appendBinaryStringInfo(out, (const char *) &values[0], sizeof(int64));
			if (best == ENC_DELTA_FOR)
				encode_for(tmp + 1, n - 1, out);
			else if (best == ENC_DELTA_RLE)
				encode_rle(tmp + 1, n - 1, out);
			else
			{
				appendBinaryStringInfo(out, (const char *) &tmp[1], sizeof(int64));
				for (int i = n - 1; i >= 2; i--)
					tmp[i] = (int64) ((uint64) tmp[i] - (uint64) tmp[i - 1]);
				encode_for(tmp + 2, n - 2, out);
			}
			pfree(tmp);
			break;
	}
	return best;
}

/* n values of an integer encoding from data, checked as above. */
static pg_attribute_always_inline void
decode_ints(int encoding, const char *data, int len, int64 *values, int n, bool check,
			uint64 limit)
{
	const char *end = data + len;

	switch (encoding)
	{
		case ENC_FOR:
			decode_for(data, end, values, n);
			if (check && !for_below(data, limit))
				check_below(values, n, limit);
			return;
		case ENC_RLE:
			decode_rle(data, end, values, n, check, limit);
			return;
		case ENC_DELTA_FOR:
		case ENC_DELTA_RLE:
		case ENC_DOD_FOR:
			break;
		default:
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("unknown columnar integer encoding %d", encoding)));
	}
	if (len < 8)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk is truncated")));
	memcpy(&values[0], data, sizeof(int64));
	if (check && (uint64) values[0] >= limit)
		index_out_of_range();
	if (n == 1)
		return;
	if (encoding == ENC_DELTA_RLE)
	{
		decode_delta_rle(data + 8, end, values, n, check, limit);
		return;
	}
	if (encoding == ENC_DOD_FOR)
	{
		int64		delta;

		if (len < 16)
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("columnar chunk is truncated")));
		memcpy(&delta, data + 8, sizeof(int64));
		values[1] = (int64) ((uint64) values[0] + (uint64) delta);
		if (n == 2)
			return;
		decode_for(data + 16, end, values + 2, n - 2);
		for (int i = 2; i < n; i++)
		{
			delta = (int64) ((uint64) delta + (uint64) values[i]);
			values[i] = (int64) ((uint64) values[i - 1] + (uint64) delta);
		}
	}
	else
	{
		decode_for(data + 8, end, values + 1, n - 1);
		for (int i = 1; i < n; i++)
			values[i] = (int64) ((uint64) values[i - 1] + (uint64) values[i]);
	}
	if (check)
		check_below(values, n, limit);
}

void
columnar_decode_ints(int encoding, const char *data, int len, int64 *values, int n)
{
	decode_ints(encoding, data, len, values, n, false, 0);
}

void
columnar_decode_indexes(int encoding, const char *data, int len, int64 *values, int n, int ndict)
{
	decode_ints(encoding, data, len, values, n, true, (uint64) Max(ndict, 0));
}

static ZSTD_CCtx *cctx;
static ZSTD_DCtx *dctx;

/*
 * Compress raw into out at level (0: store as is).  *stored_rawsize is
 * rawlen when compressed, 0 when stored as is (zstd did not help).
 */
void
columnar_compress(const char *raw, int rawlen, int level, StringInfo out, int32 *stored_rawsize)
{
	size_t		bound;
	size_t		n;

	*stored_rawsize = 0;
	if (level > 0 && rawlen >= 32)
	{
		if (cctx == NULL && (cctx = ZSTD_createCCtx()) == NULL)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
							errmsg("could not create a zstd context")));
		bound = ZSTD_compressBound(rawlen);
		enlargeStringInfo(out, (int) bound);
		n = ZSTD_compressCCtx(cctx, out->data + out->len, bound, raw, rawlen, level);
		if (ZSTD_isError(n))
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
							errmsg("zstd compression failed: %s", ZSTD_getErrorName(n))));
		if (n < (size_t) rawlen)
		{
			out->len += (int) n;
			out->data[out->len] = '\0';
			*stored_rawsize = rawlen;
			return;
		}
	}
	appendBinaryStringInfo(out, raw, rawlen);
}

void
columnar_decompress(const char *stored, int size, int rawsize, char *raw)
{
	size_t		n;

	if (dctx == NULL && (dctx = ZSTD_createDCtx()) == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY),
						errmsg("could not create a zstd context")));
	n = ZSTD_decompressDCtx(dctx, raw, rawsize, stored, size);
	if (ZSTD_isError(n) || n != (size_t) rawsize)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk does not decompress: %s",
							   ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size")));
}

/* Pass-by-value datums as int64 and back, by their length. */
int64
columnar_datum_to_int(Datum d, int16 typlen)
{
	switch (typlen)
	{
		case 1:
			return (int8) DatumGetChar(d);
		case 2:
			return DatumGetInt16(d);
		case 4:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

Datum
columnar_int_to_datum(int64 v, int16 typlen)
{
	switch (typlen)
	{
		case 1:
			return CharGetDatum((char) v);
		case 2:
			return Int16GetDatum((int16) v);
		case 4:
			return Int32GetDatum((int32) v);
		default:
			return Int64GetDatum(v);
	}
}
