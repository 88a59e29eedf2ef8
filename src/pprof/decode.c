/*
 * decode.c
 *		Decompression, decoding and validation of pprof input.
 */
#include "postgres.h"

#include <zlib.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "pprof/pprof.h"
#include "types/valid_text.h"

struct PprofIdMap
{
	int			n;
	bool		dense;			/* ids are exactly 1..n in order */
	uint64	   *sorted_ids;		/* otherwise: ids sorted, with ... */
	int		   *sorted_index;	/* ... the index each came from */
};

/*
 * protobuf-c allocates a struct for every message (each sample, location,
 * line and label), an array for every repeated field, and while it scans a
 * message a 32-byte entry per field: decoding takes 6 to 21 times the
 * encoded size at its peak (the fixtures under testdata/pprof), and some
 * 90 times for a profile of empty samples (2 bytes each).  So decoding is
 * charged, with the decompressed bytes, against parca.max_profile_size:
 * protobuf-c's allocations go through this allocator, which refuses (and
 * protobuf-c then gives up) once they would pass what is left.  It also lets a long decoding be cancelled: protobuf-c
 * holds nothing but this memory, so an error may leave it at any point.
 */
typedef struct DecodeBudget
{
	Size		left;			/* bytes that may still be allocated */
	bool		exceeded;
	bool		out_of_memory;
	uint32		allocations;
} DecodeBudget;

static void *
budget_alloc(void *data, size_t size)
{
	DecodeBudget *b = data;
	void	   *p;
	Size		space;

	if ((++b->allocations & 4095) == 0)
		CHECK_FOR_INTERRUPTS();
	if (size >= b->left)
	{
		b->exceeded = true;
		return NULL;
	}
	p = MemoryContextAllocExtended(CurrentMemoryContext, Max(size, 1),
								   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (p == NULL)
	{
		b->out_of_memory = true;
		return NULL;
	}
	space = GetMemoryChunkSpace(p);
	if (space >= b->left)
	{
		pfree(p);
		b->exceeded = true;
		return NULL;
	}
	b->left -= space;
	return p;
}

static void
budget_free(void *data, void *pointer)
{
	DecodeBudget *b = data;

	if (pointer == NULL)
		return;
	b->left += GetMemoryChunkSpace(pointer);
	pfree(pointer);
}

static void
too_large(Size limit)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("profile is larger than parca.max_profile_size (%zu bytes) after decompression",
					limit),
			 errhint("Raise parca.max_profile_size if such profiles are expected.")));
}

/*
 * Inflates gzip data, growing the output as needed but never past limit:
 * a gzip bomb stops at the limit, having used at most that much memory.
 * The output starts at the size the trailer announces (the last member's
 * size modulo 2^32, so only a hint): growing the buffer copies it, and
 * holds both copies for a moment.
 */
static char *
gunzip(const char *data, Size len, Size limit, Size *out_len)
{
	z_stream	zs;
	const unsigned char *trailer = (const unsigned char *) data + len - 4;
	Size		announced = len < 18 ? 0 : (Size) (trailer[0] | (trailer[1] << 8) |
												(trailer[2] << 16) | ((uint32) trailer[3] << 24));
	Size		cap = Min(Max(Max(announced + 1, len * 4), (Size) 64 * 1024), limit);
	char	   *out = palloc_extended(cap, MCXT_ALLOC_HUGE);
	int			rc;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not initialize gzip decompression")));
	zs.next_in = (Bytef *) data;
	zs.avail_in = (uInt) len;
	zs.next_out = (Bytef *) out;
	zs.avail_out = (uInt) cap;
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		rc = inflate(&zs, Z_NO_FLUSH);
		if (rc == Z_STREAM_END)
		{
			/* Concatenated gzip members are one stream (RFC 1952). */
			if (zs.avail_in > 0 && inflateReset(&zs) == Z_OK)
				continue;
			break;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR)
		{
			const char *msg = zs.msg ? pstrdup(zs.msg) : "unknown error";

			inflateEnd(&zs);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid gzip data in profile: %s", msg)));
		}
		if (zs.avail_out == 0)
		{
			Size		used = cap;

			if (cap >= limit)
			{
				inflateEnd(&zs);
				too_large(limit);
			}
			cap = Min(cap * 2, limit);
			out = repalloc_huge(out, cap);
			zs.next_out = (Bytef *) out + used;
			zs.avail_out = (uInt) (cap - used);
			continue;
		}
		if (zs.avail_in == 0)
		{
			inflateEnd(&zs);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("truncated gzip data in profile")));
		}
	}
	*out_len = cap - zs.avail_out;
	inflateEnd(&zs);
	return out;
}

static int
compare_id_pairs(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/* Builds an id map; kind names the table in error messages. */
static PprofIdMap *
build_id_map(const char *kind, size_t n, uint64 (*id_at) (const PprofMessage *, size_t),
			 const PprofMessage *msg)
{
	PprofIdMap *map = palloc0(sizeof(PprofIdMap));
	uint64	   *pairs;

	map->n = (int) n;
	map->dense = true;
	for (size_t i = 0; i < n && map->dense; i++)
		map->dense = id_at(msg, i) == i + 1;
	if (map->dense)
		return map;

	/* Sort (id, index) pairs; duplicates and id 0 are errors. */
	pairs = palloc(n * 2 * sizeof(uint64));
	for (size_t i = 0; i < n; i++)
	{
		pairs[2 * i] = id_at(msg, i);
		pairs[2 * i + 1] = i;
	}
	qsort(pairs, n, 2 * sizeof(uint64), compare_id_pairs);
	map->sorted_ids = palloc(n * sizeof(uint64));
	map->sorted_index = palloc(n * sizeof(int));
	for (size_t i = 0; i < n; i++)
	{
		map->sorted_ids[i] = pairs[2 * i];
		map->sorted_index[i] = (int) pairs[2 * i + 1];
		if (map->sorted_ids[i] == 0 || (i > 0 && map->sorted_ids[i] == map->sorted_ids[i - 1]))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("invalid profile: %s id %llu is %s", kind,
							(unsigned long long) map->sorted_ids[i],
							map->sorted_ids[i] == 0 ? "reserved" : "used twice")));
	}
	pfree(pairs);
	return map;
}

int
pprof_id_lookup(const PprofIdMap *map, uint64 id)
{
	int			lo = 0,
				hi = map->n - 1;

	if (map->dense)
		return (id >= 1 && id <= (uint64) map->n) ? (int) (id - 1) : -1;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (map->sorted_ids[mid] == id)
			return map->sorted_index[mid];
		if (map->sorted_ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static uint64
mapping_id_at(const PprofMessage *m, size_t i)
{
	return m->mapping[i]->id;
}

static uint64
function_id_at(const PprofMessage *m, size_t i)
{
	return m->function[i]->id;
}

static uint64
location_id_at(const PprofMessage *m, size_t i)
{
	return m->location[i]->id;
}

static void
invalid(const char *fmt, unsigned long long a, unsigned long long b)
{
	char	   *what = psprintf(fmt, a, b);

	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid profile: %s", what)));
}

static void
check_string(const PprofMessage *m, int64 index, const char *field)
{
	if (index < 0 || (uint64) index >= m->n_string_table)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid profile: %s refers to string %lld, but the string table has %zu entries",
						field, (long long) index, m->n_string_table)));
}

/*
 * protobuf-c passes a string's bytes through as they come and ends it at
 * its first NUL, which text cannot hold (valid_text.h).  So each string of
 * the string table is checked where its length is known, in the encoded
 * message, and one that has a NUL or an invalid byte is replaced by a copy
 * with each such byte turned into U+FFFD ('?' if the database encoding is
 * not UTF8), and marked.  Names (of functions, files, mappings, build ids, numeric labels)
 * are stored repaired; strings that name series (the fields of profile
 * types, string labels) must be right as they are, and validate() refuses
 * the profile if one was repaired.
 */
static bool
read_varint(const uint8 **p, const uint8 *end, uint64 *v)
{
	uint64		result = 0;

	for (int shift = 0; shift < 64 && *p < end; shift += 7)
	{
		uint8		b = *(*p)++;

		result |= (uint64) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
		{
			*v = result;
			return true;
		}
	}
	return false;
}

/* Where each string of the string table (Profile field 6) is in raw. */
static void
string_table_spans(const char *raw, Size len, size_t nstrings, Size *offsets, Size *lengths)
{
	const uint8 *p = (const uint8 *) raw;
	const uint8 *end = p + len;
	size_t		n = 0;
	uint64		key,
				v;

	while (p < end && read_varint(&p, end, &key))
	{
		if ((n & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
		switch (key & 7)
		{
			case 0:
				if (!read_varint(&p, end, &v))
					p = end + 1;
				break;
			case 1:
				p += 8;
				break;
			case 5:
				p += 4;
				break;
			case 2:
				if (!read_varint(&p, end, &v) || v > (uint64) (end - p))
				{
					p = end + 1;
					break;
				}
				if ((key >> 3) == 6 && n < nstrings)
				{
					offsets[n] = (const char *) p - raw;
					lengths[n] = (Size) v;
					n++;
				}
				p += v;
				break;
			default:
				p = end + 1;
		}
	}
	/* protobuf-c accepted the message: a mismatch is a bug */
	if (p != end || n != nstrings)
		elog(ERROR, "the string table of a decoded profile is not where it was");
}

static void
repair_strings(Pprof *p, const char *raw, Size raw_len)
{
	PprofMessage *m = p->msg;
	Size	   *offsets = palloc(Max(m->n_string_table, 1) * sizeof(Size));
	Size	   *lengths = palloc(Max(m->n_string_table, 1) * sizeof(Size));

	string_table_spans(raw, raw_len, m->n_string_table, offsets, lengths);
	for (size_t i = 0; i < m->n_string_table; i++)
	{
		bool		repaired;
		const char *s = valid_text(raw + offsets[i], lengths[i], &repaired);

		if (!repaired)
			continue;
		if (p->repaired == NULL)
			p->repaired = palloc0(m->n_string_table * sizeof(bool));
		p->repaired[i] = true;
		m->string_table[i] = (char *) s;
	}
	pfree(offsets);
	pfree(lengths);
}

/* Refuses the profile if the string that names what was repaired. */
static void
check_text(const Pprof *p, int64 index, const char *what)
{
	if (p->repaired != NULL && p->repaired[index])
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("invalid profile: %s %s is not valid %s text",
						what, message_quote_cstring(p->msg->string_table[index]), GetDatabaseEncodingName()),
				 errdetail("It holds a NUL byte or bytes that are not a character (shown as %s). It names series, so it is refused rather than repaired; function, file and mapping names are stored with such bytes replaced.",
						   GetDatabaseEncoding() == PG_UTF8 ? "U+FFFD" : "'?'")));
}

static void
validate(const Pprof *p)
{
	const PprofMessage *m = p->msg;

	if (m->n_string_table == 0 || m->string_table[0][0] != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid profile: the string table must start with the empty string")));
	for (size_t i = 0; i < m->n_sample_type; i++)
	{
		check_string(m, m->sample_type[i]->type, "sample_type.type");
		check_string(m, m->sample_type[i]->unit, "sample_type.unit");
		check_text(p, m->sample_type[i]->type, "sample type");
		check_text(p, m->sample_type[i]->unit, "sample unit");
	}
	if (m->period_type)
	{
		check_string(m, m->period_type->type, "period_type.type");
		check_string(m, m->period_type->unit, "period_type.unit");
		check_text(p, m->period_type->type, "period type");
		check_text(p, m->period_type->unit, "period unit");
	}
	check_string(m, m->drop_frames, "drop_frames");
	check_string(m, m->keep_frames, "keep_frames");
	check_string(m, m->default_sample_type, "default_sample_type");
	for (size_t i = 0; i < m->n_comment; i++)
		check_string(m, m->comment[i], "comment");
	for (size_t i = 0; i < m->n_mapping; i++)
	{
		check_string(m, m->mapping[i]->filename, "mapping.filename");
		check_string(m, m->mapping[i]->build_id, "mapping.build_id");
	}
	for (size_t i = 0; i < m->n_function; i++)
	{
		check_string(m, m->function[i]->name, "function.name");
		check_string(m, m->function[i]->system_name, "function.system_name");
		check_string(m, m->function[i]->filename, "function.filename");
	}
	for (size_t i = 0; i < m->n_location; i++)
	{
		const Perftools__Profiles__Location *loc = m->location[i];

		if (loc->mapping_id != 0 && pprof_id_lookup(p->mappings, loc->mapping_id) < 0)
			invalid("location %llu refers to mapping %llu, which does not exist",
					loc->id, loc->mapping_id);
		for (size_t j = 0; j < loc->n_line; j++)
			if (pprof_id_lookup(p->functions, loc->line[j]->function_id) < 0)
				invalid("location %llu refers to function %llu, which does not exist",
						loc->id, loc->line[j]->function_id);
	}
	for (size_t i = 0; i < m->n_sample; i++)
	{
		const Perftools__Profiles__Sample *s = m->sample[i];

		if (s->n_value != m->n_sample_type)
			invalid("sample %llu has %llu values", i, s->n_value);
		for (size_t j = 0; j < s->n_location_id; j++)
			if (pprof_id_lookup(p->locations, s->location_id[j]) < 0)
				invalid("sample %llu refers to location %llu, which does not exist",
						i, s->location_id[j]);
		for (size_t j = 0; j < s->n_label; j++)
		{
			check_string(m, s->label[j]->key, "label.key");
			check_string(m, s->label[j]->str, "label.str");
			check_string(m, s->label[j]->num_unit, "label.num_unit");
			if (s->label[j]->str != 0)
			{
				check_text(p, s->label[j]->key, "label name");
				check_text(p, s->label[j]->str, "label value");
			}
		}
	}
}

Pprof *
pprof_decode(const char *data, Size len, Size limit)
{
	Pprof	   *p = palloc0(sizeof(Pprof));
	const char *raw = data;
	Size		raw_len = len;
	PprofMessage *m;
	DecodeBudget budget = {0};
	ProtobufCAllocator allocator = {budget_alloc, budget_free, &budget};

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("profile is empty")));
	if (len >= 2 && (unsigned char) data[0] == 0x1f && (unsigned char) data[1] == 0x8b)
		raw = gunzip(data, len, limit, &raw_len);
	else if (len > limit)
		too_large(limit);

	budget.left = limit - raw_len;
	m = perftools__profiles__profile__unpack(&allocator, raw_len, (const uint8_t *) raw);
	if (m == NULL && budget.exceeded)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("profile needs more than parca.max_profile_size (%zu bytes) of memory to decode", limit),
				 errdetail("The decompressed profile (%zu bytes) and its decoded form count together; decoding takes 6 to 21 times the decompressed size.",
						   raw_len),
				 errhint("Raise parca.max_profile_size if such profiles are expected.")));
	if (m == NULL && budget.out_of_memory)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory decoding a profile")));
	if (m == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid profile: not a pprof protocol buffer message, or a truncated one")));
	if (m->n_sample_type == 0 && m->n_sample > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid profile: samples without sample types")));
	p->msg = m;
	repair_strings(p, raw, raw_len);
	/* the message holds copies: the inflated bytes can go */
	if (raw != data)
		pfree((char *) raw);
	p->mappings = build_id_map("mapping", m->n_mapping, mapping_id_at, m);
	p->functions = build_id_map("function", m->n_function, function_id_at, m);
	p->locations = build_id_map("location", m->n_location, location_id_at, m);
	validate(p);
	return p;
}
