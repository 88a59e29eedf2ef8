/*
 * columnar_chunk.c
 *		The format of a stripe: its chunks, each written and read here,
 *		side by side (the directory that lists them: columnar_directory.c).
 *
 * A chunk holds one column of one chunk group (or a stripe's dictionary
 * of one column).  Its bytes, before compression:
 *	- a null bitmap of (rows + 7) / 8 bytes, bit r of byte r / 8 set for a
 *	  NULL row, when the chunk has some NULLs, but not only NULLs (a chunk
 *	  of NULLs only is ENC_ALL_NULL and has no bytes at all);
 *	- then the values of the non-NULL rows, by the chunk's encoding:
 *		integer encodings (ENC_FOR ... ENC_DOD_FOR, columnar_encode.c):
 *			pass-by-value values as int64;
 *		ENC_DICT: indexes into the stripe's dictionary of the column, in
 *			the integer encoding index_encoding;
 *		ENC_PLAIN: each value as (varint length, bytes): a varlena's data
 *			without its header, a cstring with its NUL, or typlen bytes.
 *	A dictionary chunk holds the distinct values of a column in a stripe,
 *	without null bitmap, as (ColumnarColumn.dict.encoding):
 *		ENC_PLAIN: a value list as above;
 *		ENC_WORDS (format version 2), for values of whole 8-byte words
 *			(stacks): varint nwords, varint total (the words of all
 *			values: it gives their decoded size), the table of the nwords
 *			distinct words (8 bytes each, as in the values), a varint word
 *			count per value, then each value's words as indexes into the
 *			table, little-endian, of 1, 2, 3 or 4 bytes as nwords needs.
 *			Whole bytes, so that zstd still finds stacks' repeated frames;
 *			the values decode straight from the table, in one pass.
 *		ENC_ENTRIES (format version 4), for a column whose values are in
 *			the table's stack dictionary (columnar_dictionary.c): the
 *			entry numbers of the values, in the integer encoding
 *			index_encoding.
 *	The ids of a dictionary's entries (ColumnarStripe.dict_ids, format
 *	version 3), of a word dictionary: ENC_IDS, one uint64 per entry in the
 *	host's byte order (as the directory's fields), parca_hash64 of the
 *	entry's bytes (those ENC_PLAIN would store); never compressed, as
 *	hashes do not shrink.  A reader that keeps what it learnt of a value
 *	by its id reads them instead of the dictionary.
 * The bytes are then compressed with zstd, unless that does not shrink
 * them (rawsize 0), and the CRC-32C of what is stored is kept.
 *
 * What changes here changes the format: see COLUMNAR_FORMAT_VERSION.
 */
#include "postgres.h"

#include "utils/fmgroids.h"
#include "utils/memutils.h"

#include "columnar/columnar_internal.h"
#include "ids/ids.h"
#include "keyed_hash/keyed_hash.h"

/* ---- writing ---- */

void
columnar_chunk_writer_begin(ColumnarChunkWriter *w, StringInfo data, int level, int max_rows)
{
	w->data = data;
	w->level = level;
	initStringInfo(&w->raw);
	w->values = palloc(sizeof(int64) * Max(max_rows, 1));
}

void
columnar_chunk_writer_end(ColumnarChunkWriter *w)
{
	pfree(w->raw.data);
	pfree(w->values);
}

pg_crc32c
columnar_chunk_crc(const char *data, int len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, len);
	FIN_CRC32C(crc);
	return crc;
}

/* Compress the chunk's bytes onto the stripe's data; set where they went. */
static void
put_chunk(ColumnarChunkWriter *w, ColumnarChunk *chunk)
{
	StringInfo	data = w->data;

	chunk->offset = data->len;
	columnar_compress(w->raw.data, w->raw.len, w->level, data, &chunk->rawsize);
	chunk->size = data->len - (int32) chunk->offset;
	chunk->crc = columnar_chunk_crc(data->data + chunk->offset, chunk->size);
}

/*
 * Start a chunk of n rows: count its NULLs and write its null bitmap.
 * Returns false for a chunk of NULLs only, which is complete (no bytes).
 */
static bool
begin_chunk(ColumnarChunkWriter *w, const bool *nulls, int n, ColumnarChunk *chunk)
{
	chunk->nnulls = 0;
	for (int r = 0; r < n; r++)
		chunk->nnulls += nulls[r];
	if (chunk->nnulls == n)
	{
		chunk->encoding = ENC_ALL_NULL;
		chunk->offset = w->data->len;
		return false;
	}
	resetStringInfo(&w->raw);
	if (chunk->nnulls > 0)
	{
		int			nbytes = (n + 7) / 8;

		enlargeStringInfo(&w->raw, nbytes);
		memset(w->raw.data, 0, nbytes);
		for (int r = 0; r < n; r++)
			if (nulls[r])
				w->raw.data[r / 8] |= (char) (1 << (r % 8));
		w->raw.len = nbytes;
	}
	return true;
}

/*
 * Whether a type whose btree comparison function is cmp_proc orders its
 * values as their integers (columnar_datum_to_int) are ordered.
 */
bool
columnar_order_is_signed(Oid cmp_proc)
{
	return cmp_proc == F_BTINT2CMP || cmp_proc == F_BTINT4CMP || cmp_proc == F_BTINT8CMP ||
		cmp_proc == F_TIMESTAMP_CMP || cmp_proc == F_DATE_CMP || cmp_proc == F_TIME_CMP ||
		cmp_proc == F_CASH_CMP || cmp_proc == F_BTBOOLCMP;
}

static inline int
compare_values(ColumnarValueOrder *order, int64 a, int64 b)
{
	if (order->signed_order)
		return a < b ? -1 : (a > b ? 1 : 0);
	return DatumGetInt32(FunctionCall2Coll(&order->cmp, order->collation,
										   columnar_int_to_datum(a, order->typlen),
										   columnar_int_to_datum(b, order->typlen)));
}

/*
 * A chunk of pass-by-value values (values[r] of a NULL row is ignored);
 * with order, its min/max are kept for chunk skipping.
 */
void
columnar_chunk_encode_ints(ColumnarChunkWriter *w, const int64 *values, const bool *nulls,
						   int n, ColumnarValueOrder *order, ColumnarChunk *chunk)
{
	int64	   *vals = w->values;
	int			nv = 0;

	if (!begin_chunk(w, nulls, n, chunk))
		return;
	for (int r = 0; r < n; r++)
		if (!nulls[r])
			vals[nv++] = values[r];
	chunk->encoding = columnar_encode_ints(vals, nv, &w->raw);
	if (order)
	{
		int64		min = vals[0],
					max = vals[0];

		for (int i = 1; i < nv; i++)
		{
			if (compare_values(order, vals[i], min) < 0)
				min = vals[i];
			if (compare_values(order, vals[i], max) > 0)
				max = vals[i];
		}
		chunk->has_minmax = true;
		chunk->min = min;
		chunk->max = max;
	}
	put_chunk(w, chunk);
}

/* A chunk of indexes into the stripe's dictionary of the column. */
void
columnar_chunk_encode_indexes(ColumnarChunkWriter *w, const uint32 *indexes, const bool *nulls,
							  int n, ColumnarChunk *chunk)
{
	int64	   *vals = w->values;
	int			nv = 0;

	if (!begin_chunk(w, nulls, n, chunk))
		return;
	for (int r = 0; r < n; r++)
		if (!nulls[r])
			vals[nv++] = indexes[r];
	chunk->encoding = ENC_DICT;
	chunk->index_encoding = columnar_encode_ints(vals, nv, &w->raw);
	put_chunk(w, chunk);
}

/* One value of a value list: (varint length, bytes). */
static inline void
put_value(StringInfo raw, const char *value, uint32 len)
{
	enlargeStringInfo(raw, COLUMNAR_VARINT_MAX + len);
	raw->len += columnar_varint_write(raw->data + raw->len, len);
	memcpy(raw->data + raw->len, value, len);
	raw->len += len;
	raw->data[raw->len] = '\0';
}

/* A chunk of the values themselves: dict[indexes[r]] of each row. */
void
columnar_chunk_encode_plain(ColumnarChunkWriter *w, const uint32 *indexes, const bool *nulls,
							int n, char *const *dict, const uint32 *dict_len,
							ColumnarChunk *chunk)
{
	if (!begin_chunk(w, nulls, n, chunk))
		return;
	for (int r = 0; r < n; r++)
		if (!nulls[r])
			put_value(&w->raw, dict[indexes[r]], dict_len[indexes[r]]);
	chunk->encoding = ENC_PLAIN;
	put_chunk(w, chunk);
}

/* Bytes of an index into a word table of nwords words. */
static inline int
word_index_width(uint64 nwords)
{
	return nwords <= (1 << 8) ? 1 : nwords <= (1 << 16) ? 2 : nwords <= (1 << 24) ? 3 : 4;
}

typedef struct WordEntry
{
	uint64		word;
	uint32		index;
	char		status;
} WordEntry;

#define SH_PREFIX words
#define SH_ELEMENT_TYPE WordEntry
#define SH_KEY_TYPE uint64
#define SH_KEY word
/* keyed: words are mostly location ids, which ingesting roles choose */
#define SH_HASH_KEY(tb, k) keyed_hash_u64(k)
#define SH_EQUAL(tb, a, b) ((a) == (b))
#define SH_SCOPE static inline
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/*
 * Write n word indexes at out, little-endian, of width bytes each (width a
 * constant where this is inlined); returns the end.
 */
static pg_attribute_always_inline char *
put_word_indexes(char *out, const uint32 *indexes, uint64 n, int width)
{
	for (uint64 i = 0; i < n; i++, out += width)
	{
		out[0] = (char) indexes[i];
		if (width > 1)
			out[1] = (char) (indexes[i] >> 8);
		if (width > 2)
			out[2] = (char) (indexes[i] >> 16);
		if (width > 3)
			out[3] = (char) (indexes[i] >> 24);
	}
	return out;
}

/*
 * The dictionary as ENC_WORDS into w->raw, if that is smaller than the
 * value list (ENC_PLAIN) it replaces; false, with nothing written, if not.
 * Only values of whole 8-byte words qualify (stacks: location ids), and
 * pay when few distinct words make them up (stacks share their frames).
 * No cstrings: their terminating NUL is not checked when read.
 */
static bool
encode_words(ColumnarChunkWriter *w, char *const *dict, const uint32 *dict_len, int ndict,
			 int16 typlen)
{
	uint64		plain_size = 0;
	uint64		total_words = 0;
	uint64		counts_size = 0;
	uint64		words_size;
	uint32	   *indexes;
	uint64	   *table;
	uint32		nwords = 0;
	words_hash *hash;
	int			width;
	uint64		k = 0;
	bool		smaller = false;

	if (typlen == -2)
		return false;
	for (int i = 0; i < ndict; i++)
	{
		if (dict_len[i] % sizeof(uint64) != 0)
			return false;
		plain_size += columnar_varint_size(dict_len[i]) + dict_len[i];
		total_words += dict_len[i] / sizeof(uint64);
		counts_size += columnar_varint_size(dict_len[i] / sizeof(uint64));
	}
	if (total_words == 0)
		return false;

	/*
	 * Each value's words as indexes into the table of distinct words, in
	 * the order first seen; given up as soon as the table alone and one
	 * byte per word make it no smaller than the value list.
	 */
	indexes = palloc_extended(sizeof(uint32) * total_words, MCXT_ALLOC_HUGE);
	table = palloc(sizeof(uint64) * 256);
	hash = words_create(CurrentMemoryContext, 256, NULL);
	for (int i = 0; i < ndict; i++)
	{
		const char *p = dict[i];

		for (uint32 j = 0; j < dict_len[i] / sizeof(uint64); j++)
		{
			uint64		word;
			WordEntry  *e;
			bool		found;

			memcpy(&word, p + j * sizeof(uint64), sizeof(uint64));
			e = words_insert(hash, word, &found);
			if (!found)
			{
				if ((nwords & (nwords - 1)) == 0 && nwords >= 256)
					table = repalloc_huge(table, sizeof(uint64) * nwords * 2);
				e->index = nwords;
				table[nwords++] = word;
				if (sizeof(uint64) * (uint64) nwords + total_words >= plain_size)
					goto done;
			}
			indexes[k++] = e->index;
		}
	}
	width = word_index_width(nwords);
	words_size = columnar_varint_size(nwords) + columnar_varint_size(total_words) +
		sizeof(uint64) * (uint64) nwords + counts_size + width * total_words;
	if (words_size < plain_size)
	{
		char	   *out;

		smaller = true;
		resetStringInfo(&w->raw);
		enlargeStringInfo(&w->raw, (int) words_size);
		out = w->raw.data;
		out += columnar_varint_write(out, nwords);
		out += columnar_varint_write(out, total_words);
		memcpy(out, table, sizeof(uint64) * nwords);
		out += sizeof(uint64) * nwords;
		for (int i = 0; i < ndict; i++)
			out += columnar_varint_write(out, dict_len[i] / sizeof(uint64));
		switch (width)
		{
			case 1:
				out = put_word_indexes(out, indexes, total_words, 1);
				break;
			case 2:
				out = put_word_indexes(out, indexes, total_words, 2);
				break;
			case 3:
				out = put_word_indexes(out, indexes, total_words, 3);
				break;
			default:
				out = put_word_indexes(out, indexes, total_words, 4);
				break;
		}
		w->raw.len = out - w->raw.data;
		w->raw.data[w->raw.len] = '\0';
		Assert(w->raw.len == words_size);
	}
done:
	words_destroy(hash);
	pfree(table);
	pfree(indexes);
	return smaller;
}

/*
 * The dictionary chunk of a column of type length typlen: its ndict
 * distinct values, as ENC_WORDS when that is smaller, else as a value list
 * (ENC_PLAIN).
 */
void
columnar_chunk_encode_dictionary(ColumnarChunkWriter *w, char *const *dict,
								 const uint32 *dict_len, int ndict, int16 typlen,
								 ColumnarChunk *chunk)
{
	if (encode_words(w, dict, dict_len, ndict, typlen))
		chunk->encoding = ENC_WORDS;
	else
	{
		resetStringInfo(&w->raw);
		for (int i = 0; i < ndict; i++)
			put_value(&w->raw, dict[i], dict_len[i]);
		chunk->encoding = ENC_PLAIN;
	}
	put_chunk(w, chunk);
}

/*
 * The ids of the ndict dictionary entries dict[i] (dict_len[i] bytes
 * each), stored as they are.
 */
void
columnar_chunk_encode_ids(ColumnarChunkWriter *w, char *const *dict, const uint32 *dict_len,
						  int ndict, ColumnarChunk *chunk)
{
	StringInfo	data = w->data;

	memset(chunk, 0, sizeof(ColumnarChunk));
	chunk->encoding = ENC_IDS;
	chunk->offset = data->len;
	enlargeStringInfo(data, (Size) ndict * sizeof(uint64));
	for (int i = 0; i < ndict; i++)
	{
		uint64		id = parca_hash64(dict[i], dict_len[i]);

		memcpy(data->data + data->len, &id, sizeof(id));
		data->len += sizeof(id);
	}
	data->data[data->len] = '\0';
	chunk->size = data->len - (int32) chunk->offset;
	chunk->crc = columnar_chunk_crc(data->data + chunk->offset, chunk->size);
}

/*
 * A dictionary as the entry numbers of its n values in the table's stack
 * dictionary (columnar_dictionary.c), as integers.
 */
void
columnar_chunk_encode_entries(ColumnarChunkWriter *w, const int64 *entries, int n,
							  ColumnarChunk *chunk)
{
	memset(chunk, 0, sizeof(ColumnarChunk));
	resetStringInfo(&w->raw);
	chunk->encoding = ENC_ENTRIES;
	chunk->index_encoding = columnar_encode_ints(entries, n, &w->raw);
	put_chunk(w, chunk);
}

/* The id of a decoded dictionary entry of a type of length typlen (> -2). */
uint64
columnar_chunk_entry_id(const char *value, int16 typlen)
{
	if (typlen == -1)
		return parca_hash64(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
	return parca_hash64(value, typlen);
}

/* ---- reading ---- */

/*
 * The stored bytes of a chunk into out; returns pages read, not counting
 * those in seen (columnar_read_pages).
 */
static void
check_chunk_in_stripe(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk)
{
	if (chunk->offset < 0 || chunk->size < 0 || chunk->offset + chunk->size > stripe->data_size)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar chunk lies outside its stripe in \"%s\"",
						RelationGetRelationName(rel))));
}

int
columnar_chunk_read_stored(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk,
						   StringInfo out, Bitmapset **seen)
{
	check_chunk_in_stripe(rel, stripe, chunk);
	resetStringInfo(out);
	if (stripe->first_block < 0)
	{
		appendBinaryStringInfo(out, stripe->inline_data + chunk->offset, chunk->size);
		return 0;
	}
	return columnar_read_pages(rel, stripe->first_block, chunk->offset, chunk->size, out,
							   seen);
}

/*
 * The bytes of a chunk, decompressed, into raw (stored: room for the
 * compressed bytes); returns pages read.
 */
int
columnar_chunk_read(Relation rel, ColumnarStripe *stripe, ColumnarChunk *chunk, StringInfo raw,
					StringInfo stored, Bitmapset **seen)
{
	int			pages;

	if (chunk->rawsize == 0)
		return columnar_chunk_read_stored(rel, stripe, chunk, raw, seen);
	pages = columnar_chunk_read_stored(rel, stripe, chunk, stored, seen);
	resetStringInfo(raw);
	enlargeStringInfo(raw, chunk->rawsize);
	columnar_decompress(stored->data, stored->len, chunk->rawsize, raw->data);
	raw->len = chunk->rawsize;
	return pages;
}

/*
 * Rows lo .. hi of chunk ch (of n rows) of stripe s into ints[lo .. hi],
 * reading only the pages that hold them (buf: room for their bytes); adds
 * the pages read to *pages.  For a chunk on pages, of integers bit-packed
 * by FOR and stored as they are, without NULLs: values of high entropy,
 * which a scan for a few rows of a chunk group would otherwise read whole.
 * FOR's header (min, width) is not read, but taken from the chunk's min
 * and max (signed_order: they are its integers' own, ColumnarValueOrder);
 * the chunk's size must agree.  false, having read nothing: not such a
 * chunk.
 */
bool
columnar_chunk_read_rows(Relation rel, ColumnarStripe *s, ColumnarChunk *ch, bool signed_order,
						 int n, int lo, int hi, int64 *ints, StringInfo buf, int64 *pages,
						 Bitmapset **seen)
{
	int			width;
	int64		offset;
	int64		size;

	if (!signed_order || s->first_block < 0 || ch->encoding != ENC_FOR || ch->rawsize != 0 ||
		ch->nnulls != 0 || !ch->has_minmax || lo < 0 || hi >= n || lo > hi)
		return false;
	width = columnar_for_width(ch->min, ch->max);
	columnar_for_span(width, 0, n, &offset, &size);
	if (ch->size != offset + size)
		return false;
	check_chunk_in_stripe(rel, s, ch);
	columnar_for_span(width, lo, hi - lo + 1, &offset, &size);
	resetStringInfo(buf);
	*pages += columnar_read_pages(rel, s->first_block, ch->offset + offset, (int) size, buf, seen);
	columnar_decode_for_span(ch->min, width, buf->data, buf->len, lo, ints + lo, hi - lo + 1);
	return true;
}

/*
 * columnar_chunk_read() into buffers of sc (columnar_scratch.c), reserved
 * for the chunk's sizes first.
 */
int
columnar_chunk_read_scratch(ColumnarScratch *sc, Relation rel, ColumnarStripe *stripe,
							ColumnarChunk *chunk, StringInfo raw, StringInfo stored,
							Bitmapset **seen)
{
	/* a size past the stripe's end is refused by columnar_chunk_read */
	Size		stored_size = (Size) Max(Min(chunk->size, stripe->data_size), 0);

	if (chunk->rawsize == 0)
		columnar_scratch_reserve(sc, raw, stored_size);
	else
	{
		columnar_scratch_reserve(sc, stored, stored_size);
		columnar_scratch_reserve(sc, raw, (Size) Max(chunk->rawsize, 0));
	}
	return columnar_chunk_read(rel, stripe, chunk, raw, stored, seen);
}

/*
 * The bytes that n values stored as (varint length, bytes) take as datums
 * of a type of length typlen, each MAXALIGNed, after an array of n
 * pointers to them (values_fill); checks every length.
 */
static Size
values_size(const char *raw, int rawlen, int n, int16 typlen)
{
	const char *p = raw;
	const char *end = raw + rawlen;
	Size		total = MAXALIGN(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		uint64		len = columnar_get_varint(&p, end);

		if (len > (uint64) (end - p) || (typlen > 0 && len != (uint64) typlen))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("columnar chunk has a bad value length")));
		p += len;
		total += MAXALIGN(len + VARHDRSZ);
	}
	if (p != end)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("columnar chunk has trailing bytes")));
	return total;
}

/* Rebuild the n values checked by values_size into space; their pointers. */
static char **
values_fill(const char *raw, int rawlen, int n, int16 typlen, char *space)
{
	const char *p = raw;
	const char *end = raw + rawlen;
	char	  **out = (char **) space;
	char	   *arena = space + MAXALIGN(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		uint64		len = columnar_get_varint(&p, end);

		out[i] = arena;
		if (typlen == -1)
		{
			SET_VARSIZE(arena, len + VARHDRSZ);
			memcpy(VARDATA(arena), p, len);
		}
		else
			memcpy(arena, p, len);
		arena += MAXALIGN(len + VARHDRSZ);
		p += len;
	}
	return out;
}

/*
 * Decode the raw bytes of a chunk of n rows (not ENC_ALL_NULL, which has
 * none), of a column of type length typlen: nulls[n], and the values of
 * the non-NULL rows in order: into ints[n] for the integer encodings and
 * ENC_DICT (the dictionary indexes, each checked to be below ndict, the
 * entries of the stripe's dictionary), as datums palloc'd into *values for
 * ENC_PLAIN.  Returns the number of values.
 */
int
columnar_chunk_decode(const ColumnarChunk *chunk, const char *raw, int len, int n,
					  int16 typlen, int ndict, bool *nulls, int64 *ints, char ***values)
{
	const char *p = raw;
	int			nv;

	*values = NULL;
	if (chunk->nnulls < 0 || chunk->nnulls > n)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar chunk has more NULLs than rows")));
	if (chunk->nnulls > 0)
	{
		int			nbytes = (n + 7) / 8;

		if (len < nbytes)
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("columnar chunk is truncated")));
		for (int r = 0; r < n; r++)
			nulls[r] = (p[r / 8] >> (r % 8)) & 1;
		p += nbytes;
		len -= nbytes;
	}
	else
		memset(nulls, false, sizeof(bool) * n);
	nv = n - chunk->nnulls;
	if (chunk->encoding == ENC_PLAIN)
	{
		*values = values_fill(p, len, nv, typlen,
							  MemoryContextAllocHuge(CurrentMemoryContext,
													 values_size(p, len, nv, typlen)));
		return nv;
	}
	if (chunk->encoding == ENC_DICT)
		columnar_decode_indexes(chunk->index_encoding, p, len, ints, nv, ndict);
	else
		columnar_decode_ints(chunk->encoding, p, len, ints, nv);
	return nv;
}

/*
 * An ENC_WORDS dictionary chunk's parts, as its header gives them and
 * checked against its bytes.
 */
typedef struct WordsLayout
{
	uint32		nwords;
	uint64		total;			/* words of all values */
	const char *table;			/* nwords 8-byte words */
	const char *counts;			/* ndict varints: each value's words */
	const char *indexes;		/* width bytes for each word of each value */
	int			width;
} WordsLayout;

static pg_noinline void
words_corrupted(const char *what)
{
	ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("columnar word dictionary %s", what)));
}

/*
 * The parts of the raw bytes of an ENC_WORDS dictionary of ndict values of
 * a type of length typlen, from its header; the counts and indexes are
 * checked as they are read (words_fill).
 */
static void
words_layout(const char *raw, int rawlen, int ndict, int16 typlen, WordsLayout *l)
{
	const char *p = raw;
	const char *end = raw + rawlen;
	uint64		nwords;

	if (typlen == -2)
		words_corrupted("is of a cstring column");
	nwords = columnar_get_varint(&p, end);
	l->total = columnar_get_varint(&p, end);
	if (nwords > (uint64) (end - p) / sizeof(uint64))
		words_corrupted("is truncated");
	l->nwords = (uint32) nwords;
	l->width = word_index_width(nwords);
	l->table = p;
	l->counts = p + sizeof(uint64) * nwords;
	/* a count takes a byte at least */
	if (l->total > (uint64) (end - l->counts) / l->width ||
		(uint64) ndict > (uint64) (end - l->counts) - l->total * l->width)
		words_corrupted("is truncated");
	l->indexes = end - l->total * l->width;
}

StaticAssertDecl(sizeof(uint64) % MAXIMUM_ALIGNOF == 0, "words keep values MAXALIGNed");

/*
 * The bytes that the values take decoded, laid out as values_size: each
 * value's length (a multiple of 8) plus its header, MAXALIGNed, is its
 * words' bytes plus MAXALIGN(VARHDRSZ), so the total word count gives it.
 */
static Size
words_size(const WordsLayout *l, int ndict)
{
	return MAXALIGN(sizeof(char *) * Max(ndict, 1)) + sizeof(uint64) * l->total +
		(Size) ndict * MAXALIGN(VARHDRSZ);
}

/*
 * Copy count words to dst from the table, by their indexes of width bytes
 * at idx (width a constant where this is inlined: one loop per width).
 */
static pg_attribute_always_inline void
copy_words(char *dst, const uint8 *idx, uint64 count, int width, const char *table,
		   uint32 nwords)
{
	for (uint64 j = 0; j < count; j++, idx += width)
	{
		uint32		x = idx[0];

		if (width > 1)
			x |= (uint32) idx[1] << 8;
		if (width > 2)
			x |= (uint32) idx[2] << 16;
		if (width > 3)
			x |= (uint32) idx[3] << 24;
		if (unlikely(x >= nwords))
			words_corrupted("has a word index out of range");
		memcpy(dst + sizeof(uint64) * j, table + sizeof(uint64) * x, sizeof(uint64));
	}
}

/*
 * The values of an ENC_WORDS dictionary into space (words_size bytes) as
 * values_fill lays them out; their pointers.  Each value's word count is
 * checked before its words are written.
 */
static char **
words_fill(const WordsLayout *l, int ndict, int16 typlen, char *space)
{
	const char *counts = l->counts;
	const uint8 *idx = (const uint8 *) l->indexes;
	uint64		left = l->total;
	char	  **out = (char **) space;
	char	   *arena = space + MAXALIGN(sizeof(char *) * Max(ndict, 1));

	for (int i = 0; i < ndict; i++)
	{
		uint64		count = columnar_get_varint(&counts, l->indexes);
		char	   *dst = arena;

		if (count > left || (typlen > 0 && count * sizeof(uint64) != (uint64) typlen))
			words_corrupted("has a bad value length");
		left -= count;
		out[i] = arena;
		if (typlen == -1)
		{
			SET_VARSIZE(arena, sizeof(uint64) * count + VARHDRSZ);
			dst = VARDATA(arena);
		}
		switch (l->width)
		{
			case 1:
				copy_words(dst, idx, count, 1, l->table, l->nwords);
				break;
			case 2:
				copy_words(dst, idx, count, 2, l->table, l->nwords);
				break;
			case 3:
				copy_words(dst, idx, count, 3, l->table, l->nwords);
				break;
			default:
				copy_words(dst, idx, count, 4, l->table, l->nwords);
				break;
		}
		idx += l->width * count;
		arena += sizeof(uint64) * count + MAXALIGN(VARHDRSZ);
	}
	if (left != 0 || counts != l->indexes)
		words_corrupted("has trailing bytes");
	return out;
}

static void
check_dictionary_encoding(const ColumnarChunk *chunk)
{
	if (chunk->encoding != ENC_PLAIN && chunk->encoding != ENC_WORDS)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("columnar dictionary chunk has encoding %d", chunk->encoding)));
}

/*
 * The bytes that the ndict values of a dictionary chunk's raw bytes take
 * decoded (of ENC_WORDS: from its header alone); checks what it reads.
 */
Size
columnar_chunk_dictionary_size(const ColumnarChunk *chunk, const char *raw, int len, int ndict,
							   int16 typlen)
{
	WordsLayout l;

	check_dictionary_encoding(chunk);
	if (chunk->encoding == ENC_PLAIN)
		return values_size(raw, len, ndict, typlen);
	words_layout(raw, len, ndict, typlen, &l);
	return words_size(&l, ndict);
}

/*
 * The ndict values of a dictionary chunk's raw bytes, as datums, in space
 * (columnar_chunk_dictionary_size bytes, MAXALIGNed).
 */
char	  **
columnar_chunk_decode_dictionary(const ColumnarChunk *chunk, const char *raw, int len,
								 int ndict, int16 typlen, char *space)
{
	WordsLayout l;

	check_dictionary_encoding(chunk);
	if (chunk->encoding == ENC_PLAIN)
		return values_fill(raw, len, ndict, typlen, space);
	words_layout(raw, len, ndict, typlen, &l);
	return words_fill(&l, ndict, typlen, space);
}
