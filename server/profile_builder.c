/*
 * profile_builder.c: pprof profiles built within a budget (profile_builder.h);
 * encoded by profile_builder_encode.c
 */
#include "profile_builder_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
pb_fail(ProfileBuilder *b, const char *fmt,...)
{
	va_list		ap;

	if (b->failed)
		return;
	b->failed = true;
	va_start(ap, fmt);
	vsnprintf(b->err, sizeof(b->err), fmt, ap);
	va_end(ap);
}

static void *
b_alloc(ProfileBuilder *b, size_t size)
{
	void	   *p = b->budget->allocator.alloc(b->budget->allocator.allocator_data, size ? size : 1);

	if (!p)
	{
		if (b->budget->exceeded)
			pb_fail(b, "the profile needs more memory than the limit (%zu bytes)", b->limit);
		else
			pb_fail(b, "out of memory");
	}
	return p;
}

static void
b_free(ProfileBuilder *b, void *p)
{
	if (p)
		b->budget->allocator.free(b->budget->allocator.allocator_data, p);
}

/* room for need elements of elem bytes in *arr (of *cap) */
static bool
b_reserve(ProfileBuilder *b, void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t		ncap;
	void	   *n;

	if (b->failed)
		return false;
	if (need <= *cap)
		return true;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
	{
		if (ncap > SIZE_MAX / 2)
		{
			pb_fail(b, "the profile is too large");
			return false;
		}
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
	{
		pb_fail(b, "the profile is too large");
		return false;
	}
	n = b_alloc(b, ncap * elem);
	if (!n)
		return false;
	if (*arr)
		memcpy(n, *arr, *cap * elem);
	b_free(b, *arr);
	*arr = n;
	*cap = ncap;
	return true;
}

#define RESERVE(b, arr, cap, need) b_reserve((b), (void **) &(arr), &(cap), (need), sizeof(*(arr)))

static inline uint64_t
hash_add(uint64_t h, uint64_t v)
{
	return pb_hash64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

static uint64_t
hash_bytes(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint64_t	h = 0xcbf29ce484222325ULL ^ len;

	while (len >= 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
		p += 8;
		len -= 8;
	}
	while (len--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return pb_hash64(h);
}

typedef bool (*EqFn) (const ProfileBuilder *b, size_t idx, const void *key);

/* the index of the entity equal to key, or -1 */
static int64_t
tab_find(const ProfileBuilder *b, const Table *t, uint64_t hash, EqFn eq, const void *key)
{
	uint32_t	h32 = (uint32_t) hash;
	size_t		mask = t->cap - 1;

	if (t->cap == 0)
		return -1;
	for (size_t i = (size_t) (hash >> 32) & mask;; i = (i + 1) & mask)
	{
		uint64_t	s = t->slots[i];

		if (s == 0)
			return -1;
		if ((uint32_t) (s >> 32) == h32 && eq(b, (size_t) (uint32_t) s - 1, key))
			return (int64_t) (uint32_t) s - 1;
	}
}

/*
 * Adds index idx with hash: the high half of the hash picks the slot, the
 * low half is kept in it to skip most comparisons.  A grown table places
 * the slots again by their high halves, kept in a second array after the
 * slots.
 */
static bool
tab_add(ProfileBuilder *b, Table *t, uint64_t hash, size_t idx)
{
	if (idx >= UINT32_MAX - 1)
	{
		pb_fail(b, "the profile has too many entries");
		return false;
	}
	if ((t->n + 1) * 2 > t->cap)
	{
		size_t		ncap = t->cap ? t->cap * 2 : 64;
		uint64_t   *old = t->slots;
		size_t		oldcap = t->cap;
		uint64_t   *n;

		if (ncap > SIZE_MAX / (2 * sizeof(uint64_t)))
		{
			pb_fail(b, "the profile has too many entries");
			return false;
		}
		/* slots, then for each slot the high half of its hash */
		n = b_alloc(b, ncap * 2 * sizeof(uint64_t));
		if (!n)
			return false;
		memset(n, 0, ncap * 2 * sizeof(uint64_t));
		t->slots = n;
		t->cap = ncap;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
			{
				uint32_t	hi = (uint32_t) old[oldcap + i];

				for (size_t j = hi & (ncap - 1);; j = (j + 1) & (ncap - 1))
					if (n[j] == 0)
					{
						n[j] = old[i];
						n[ncap + j] = hi;
						break;
					}
			}
		b_free(b, old);
	}
	{
		uint32_t	hi = (uint32_t) (hash >> 32);
		size_t		mask = t->cap - 1;

		for (size_t i = hi & mask;; i = (i + 1) & mask)
			if (t->slots[i] == 0)
			{
				t->slots[i] = ((uint64_t) (uint32_t) hash << 32) | (uint64_t) (idx + 1);
				t->slots[t->cap + i] = hi;
				break;
			}
	}
	t->n++;
	return true;
}

/* strings */

typedef struct StrKey
{
	const char *s;
	size_t		len;
} StrKey;

static bool
string_eq(const ProfileBuilder *b, size_t idx, const void *key)
{
	const StrKey *k = key;

	return b->strings[idx].len == k->len && memcmp(b->strings[idx].s, k->s, k->len) == 0;
}

static int64_t
intern(ProfileBuilder *b, const char *s)
{
	StrKey		k = {s ? s : "", s ? strlen(s) : 0};
	uint64_t	h;
	int64_t		found;
	char	   *copy;

	if (b->failed)
		return -1;
	h = hash_bytes(k.s, k.len);
	found = tab_find(b, &b->string_tab, h, string_eq, &k);
	if (found >= 0)
		return found;
	if (!RESERVE(b, b->strings, b->cap_strings, b->nstrings + 1))
		return -1;
	copy = b_alloc(b, k.len + 1);
	if (!copy)
		return -1;
	memcpy(copy, k.s, k.len + 1);
	b->strings[b->nstrings].s = copy;
	b->strings[b->nstrings].len = k.len;
	if (!tab_add(b, &b->string_tab, h, b->nstrings))
	{
		b_free(b, copy);
		return -1;
	}
	return (int64_t) b->nstrings++;
}

ProfileBuilder *
pb_create_in(AllocBudget *budget)
{
	ProfileBuilder *b;

	if (!budget)
		return NULL;
	b = calloc(1, sizeof(ProfileBuilder));
	if (!b)
		return NULL;
	b->budget = budget;
	b->limit = budget->left;
	if (intern(b, "") != 0)
	{
		pb_destroy(b);
		return NULL;
	}
	return b;
}

ProfileBuilder *
pb_create(size_t memory_limit)
{
	ProfileBuilder *b = calloc(1, sizeof(ProfileBuilder));

	if (!b)
		return NULL;
	alloc_budget_init(&b->own_budget, memory_limit);
	b->budget = &b->own_budget;
	b->limit = memory_limit;
	if (intern(b, "") != 0)
	{
		pb_destroy(b);
		return NULL;
	}
	return b;
}

void
pb_destroy(ProfileBuilder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nstrings; i++)
		b_free(b, b->strings[i].s);
	b_free(b, b->strings);
	b_free(b, b->string_tab.slots);
	b_free(b, b->functions);
	b_free(b, b->function_tab.slots);
	b_free(b, b->mappings);
	b_free(b, b->mapping_tab.slots);
	b_free(b, b->locations);
	b_free(b, b->location_tab.slots);
	b_free(b, b->lines);
	b_free(b, b->samples);
	b_free(b, b->sample_tab.slots);
	b_free(b, b->sample_locs);
	b_free(b, b->sample_labels);
	b_free(b, b->values);
	free(b);
}

const char *
pb_error(const ProfileBuilder *b)
{
	if (!b)
		return "no profile builder";
	return b->failed ? b->err : NULL;
}

size_t
pb_sample_count(const ProfileBuilder *b)
{
	return b ? b->nsamples : 0;
}

void
pb_sample_type(ProfileBuilder *b, const char *type, const char *unit)
{
	int64_t		t,
				u;

	if (!b || b->failed)
		return;
	if (b->nsamples > 0)
	{
		pb_fail(b, "a sample type added after the first sample");
		return;
	}
	if (b->nsample_types == PB_MAX_SAMPLE_TYPES)
	{
		pb_fail(b, "more than %d sample types", PB_MAX_SAMPLE_TYPES);
		return;
	}
	t = intern(b, type);
	u = intern(b, unit);
	if (t < 0 || u < 0)
		return;
	b->sample_types[b->nsample_types].type = t;
	b->sample_types[b->nsample_types].unit = u;
	b->nsample_types++;
}

void
pb_period(ProfileBuilder *b, const char *type, const char *unit, int64_t period)
{
	int64_t		t,
				u;

	if (!b || b->failed)
		return;
	t = intern(b, type);
	u = intern(b, unit);
	if (t < 0 || u < 0)
		return;
	b->has_period_type = true;
	b->period_type.type = t;
	b->period_type.unit = u;
	b->period = period;
}

void
pb_time(ProfileBuilder *b, int64_t time_nanos, int64_t duration_nanos)
{
	if (!b)
		return;
	b->time_nanos = time_nanos;
	b->duration_nanos = duration_nanos;
}

/* functions */

static bool
function_eq(const ProfileBuilder *b, size_t idx, const void *key)
{
	return memcmp(&b->functions[idx], key, sizeof(PbFunction)) == 0;
}

uint64_t
pb_function(ProfileBuilder *b, const char *name, const char *system_name, const char *filename,
			int64_t start_line)
{
	PbFunction	f;
	uint64_t	h;
	int64_t		found;

	if (!b || b->failed)
		return 0;
	memset(&f, 0, sizeof(f));
	f.name = intern(b, name);
	f.system_name = intern(b, system_name);
	f.filename = intern(b, filename);
	f.start_line = start_line;
	if (b->failed)
		return 0;
	h = hash_add(hash_add(hash_add(hash_add(1, (uint64_t) f.name), (uint64_t) f.system_name),
						  (uint64_t) f.filename), (uint64_t) f.start_line);
	found = tab_find(b, &b->function_tab, h, function_eq, &f);
	if (found >= 0)
		return (uint64_t) found + 1;
	if (!RESERVE(b, b->functions, b->cap_functions, b->nfunctions + 1) ||
		!tab_add(b, &b->function_tab, h, b->nfunctions))
		return 0;
	b->functions[b->nfunctions] = f;
	return ++b->nfunctions;
}

/* mappings */

static bool
mapping_eq(const ProfileBuilder *b, size_t idx, const void *key)
{
	return memcmp(&b->mappings[idx], key, sizeof(PbMapping)) == 0;
}

uint64_t
pb_mapping(ProfileBuilder *b, uint64_t memory_start, uint64_t memory_limit, uint64_t file_offset,
		   const char *filename, const char *build_id)
{
	PbMapping	m;
	uint64_t	h;
	int64_t		found;

	if (!b || b->failed)
		return 0;
	memset(&m, 0, sizeof(m));
	m.memory_start = memory_start;
	m.memory_limit = memory_limit;
	m.file_offset = file_offset;
	m.filename = intern(b, filename);
	m.build_id = intern(b, build_id);
	if (b->failed)
		return 0;
	h = hash_add(hash_add(hash_add(hash_add(hash_add(2, memory_start), memory_limit), file_offset),
						  (uint64_t) m.filename), (uint64_t) m.build_id);
	found = tab_find(b, &b->mapping_tab, h, mapping_eq, &m);
	if (found >= 0)
		return (uint64_t) found + 1;
	if (!RESERVE(b, b->mappings, b->cap_mappings, b->nmappings + 1) ||
		!tab_add(b, &b->mapping_tab, h, b->nmappings))
		return 0;
	b->mappings[b->nmappings] = m;
	return ++b->nmappings;
}

/* locations */

typedef struct LocKey
{
	uint64_t	mapping_id;
	uint64_t	address;
	const PbLine *lines;
	size_t		nlines;
} LocKey;

static bool
location_eq(const ProfileBuilder *b, size_t idx, const void *key)
{
	const LocKey *k = key;
	const PbLocation *l = &b->locations[idx];

	if (l->mapping_id != k->mapping_id || l->address != k->address || l->nlines != k->nlines)
		return false;
	for (size_t i = 0; i < k->nlines; i++)
		if (b->lines[l->first_line + i].function_id != k->lines[i].function_id ||
			b->lines[l->first_line + i].line != k->lines[i].line)
			return false;
	return true;
}

uint64_t
pb_location(ProfileBuilder *b, uint64_t mapping_id, uint64_t address, const PbLine *lines, size_t nlines)
{
	LocKey		k = {mapping_id, address, lines, nlines};
	uint64_t	h;
	int64_t		found;
	PbLocation *l;

	if (!b || b->failed)
		return 0;
	if (nlines > 0 && !lines)
	{
		pb_fail(b, "a location's lines are missing");
		return 0;
	}
	if (mapping_id > b->nmappings)
	{
		pb_fail(b, "a location refers to mapping %llu, which does not exist", (unsigned long long) mapping_id);
		return 0;
	}
	h = hash_add(hash_add(hash_add(3, mapping_id), address), nlines);
	for (size_t i = 0; i < nlines; i++)
	{
		if (lines[i].function_id == 0 || lines[i].function_id > b->nfunctions)
		{
			pb_fail(b, "a line refers to function %llu, which does not exist",
				 (unsigned long long) lines[i].function_id);
			return 0;
		}
		h = hash_add(hash_add(h, lines[i].function_id), (uint64_t) lines[i].line);
	}
	found = tab_find(b, &b->location_tab, h, location_eq, &k);
	if (found >= 0)
		return (uint64_t) found + 1;
	if (nlines > SIZE_MAX - b->nlines ||
		!RESERVE(b, b->lines, b->cap_lines, b->nlines + nlines) ||
		!RESERVE(b, b->locations, b->cap_locations, b->nlocations + 1) ||
		!tab_add(b, &b->location_tab, h, b->nlocations))
		return 0;
	l = &b->locations[b->nlocations];
	l->mapping_id = mapping_id;
	l->address = address;
	l->first_line = b->nlines;
	l->nlines = nlines;
	if (nlines)
		memcpy(&b->lines[b->nlines], lines, nlines * sizeof(PbLine));
	b->nlines += nlines;
	return ++b->nlocations;
}

uint64_t
pb_frame(ProfileBuilder *b, const char *function, const char *filename, int64_t line,
		 const char *mapping_file)
{
	PbLine		l;
	uint64_t	mapping = 0;

	if (!b || b->failed)
		return 0;
	if (mapping_file && *mapping_file)
	{
		mapping = pb_mapping(b, 0, 0, 0, mapping_file, "");
		if (!mapping)
			return 0;
	}
	l.function_id = pb_function(b, function, function, filename, 0);
	l.line = line;
	if (!l.function_id)
		return 0;
	return pb_location(b, mapping, 0, &l, 1);
}

/* samples */

typedef struct SampleKey
{
	const uint64_t *locs;
	size_t		nlocs;
	const PbLabelIdx *labels;
	size_t		nlabels;
} SampleKey;

static bool
sample_eq(const ProfileBuilder *b, size_t idx, const void *key)
{
	const SampleKey *k = key;
	const PbSample *s = &b->samples[idx];

	return s->nlocs == k->nlocs && s->nlabels == k->nlabels &&
		(k->nlocs == 0 || memcmp(&b->sample_locs[s->first_loc], k->locs, k->nlocs * sizeof(uint64_t)) == 0) &&
		(k->nlabels == 0 ||
		 memcmp(&b->sample_labels[s->first_label], k->labels, k->nlabels * sizeof(PbLabelIdx)) == 0);
}

bool
pb_sample(ProfileBuilder *b, const uint64_t *locs, size_t nlocs, const int64_t *values,
		  const PbLabel *labels, size_t nlabels)
{
	PbLabelIdx	label_buf[16];
	PbLabelIdx *lab = label_buf;
	SampleKey	k;
	uint64_t	h;
	int64_t		found;
	size_t		nv;
	bool		ok = false;

	if (!b || b->failed)
		return false;
	nv = b->nsample_types;
	if (nv == 0)
	{
		pb_fail(b, "a sample before any sample type");
		return false;
	}
	if ((nlocs && !locs) || !values || (nlabels && !labels))
	{
		pb_fail(b, "a sample's stack, values or labels are missing");
		return false;
	}
	for (size_t i = 0; i < nlocs; i++)
		if (locs[i] == 0 || locs[i] > b->nlocations)
		{
			pb_fail(b, "a sample refers to location %llu, which does not exist", (unsigned long long) locs[i]);
			return false;
		}
	if (nlabels > sizeof(label_buf) / sizeof(label_buf[0]))
	{
		if (nlabels > 4096)
		{
			pb_fail(b, "a sample has more than 4096 labels");
			return false;
		}
		lab = b_alloc(b, nlabels * sizeof(PbLabelIdx));
		if (!lab)
			return false;
	}
	memset(lab, 0, nlabels * sizeof(PbLabelIdx));
	for (size_t i = 0; i < nlabels; i++)
	{
		lab[i].key = intern(b, labels[i].key);
		if (labels[i].str)
			lab[i].str = intern(b, labels[i].str);
		else
		{
			lab[i].num = labels[i].num;
			lab[i].num_unit = intern(b, labels[i].num_unit);
		}
	}
	if (b->failed)
		goto done;

	h = hash_add(4, nlocs);
	for (size_t i = 0; i < nlocs; i++)
		h = hash_add(h, locs[i]);
	for (size_t i = 0; i < nlabels; i++)
		h = hash_add(hash_add(hash_add(hash_add(h, (uint64_t) lab[i].key), (uint64_t) lab[i].str),
							  (uint64_t) lab[i].num), (uint64_t) lab[i].num_unit);
	k.locs = locs;
	k.nlocs = nlocs;
	k.labels = lab;
	k.nlabels = nlabels;
	found = tab_find(b, &b->sample_tab, h, sample_eq, &k);
	if (found >= 0)
	{
		int64_t    *v = &b->values[(size_t) found * nv];

		for (size_t i = 0; i < nv; i++)
			if (__builtin_add_overflow(v[i], values[i], &v[i]))
			{
				pb_fail(b, "a sample's value overflows 64 bits");
				goto done;
			}
		ok = true;
		goto done;
	}
	if (nlocs > SIZE_MAX - b->nsample_locs || nlabels > SIZE_MAX - b->nsample_labels ||
		!RESERVE(b, b->samples, b->cap_samples, b->nsamples + 1) ||
		!RESERVE(b, b->sample_locs, b->cap_sample_locs, b->nsample_locs + nlocs) ||
		!RESERVE(b, b->sample_labels, b->cap_sample_labels, b->nsample_labels + nlabels) ||
		!RESERVE(b, b->values, b->cap_values, (b->nsamples + 1) * nv) ||
		!tab_add(b, &b->sample_tab, h, b->nsamples))
		goto done;
	b->samples[b->nsamples].first_loc = b->nsample_locs;
	b->samples[b->nsamples].nlocs = nlocs;
	b->samples[b->nsamples].first_label = b->nsample_labels;
	b->samples[b->nsamples].nlabels = nlabels;
	if (nlocs)
		memcpy(&b->sample_locs[b->nsample_locs], locs, nlocs * sizeof(uint64_t));
	if (nlabels)
		memcpy(&b->sample_labels[b->nsample_labels], lab, nlabels * sizeof(PbLabelIdx));
	memcpy(&b->values[b->nsamples * nv], values, nv * sizeof(int64_t));
	b->nsample_locs += nlocs;
	b->nsample_labels += nlabels;
	b->nsamples++;
	ok = true;
done:
	if (lab != label_buf)
		b_free(b, lab);
	return ok;
}
