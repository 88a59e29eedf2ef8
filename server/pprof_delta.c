/* pprof_delta.c: the difference of two cumulative profiles (pprof_delta.h) */
#include "pprof_delta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_budget.h"
#include "buf.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

static const char *
str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t) i < p->n_string_table ? p->string_table[i] : "";
}

/* ids to indexes: (id, index) pairs sorted by id */
typedef struct IdIndex
{
	uint64_t   *pairs;			/* id, index, id, index, ... */
	size_t		n;
} IdIndex;

static int
cmp_pair(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

static bool
id_index_build(IdIndex *ix, size_t n, uint64_t (*id_of) (const Profile *, size_t), const Profile *p)
{
	ix->n = n;
	ix->pairs = malloc((n ? n : 1) * 2 * sizeof(uint64_t));
	if (!ix->pairs)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		ix->pairs[2 * i] = id_of(p, i);
		ix->pairs[2 * i + 1] = i;
	}
	qsort(ix->pairs, n, 2 * sizeof(uint64_t), cmp_pair);
	return true;
}

static size_t
id_index_find(const IdIndex *ix, uint64_t id)
{
	const uint64_t *hit = bsearch(&id, ix->pairs, ix->n, 2 * sizeof(uint64_t), cmp_pair);

	return hit ? (size_t) hit[1] : SIZE_MAX;
}

static uint64_t
location_id(const Profile *p, size_t i)
{
	return p->location[i]->id;
}

static uint64_t
function_id(const Profile *p, size_t i)
{
	return p->function[i]->id;
}

typedef struct Indexed
{
	Profile    *p;
	IdIndex		locations;
	IdIndex		functions;
} Indexed;

static bool
indexed_init(Indexed *ix, Profile *p)
{
	ix->p = p;
	ix->functions.pairs = NULL;
	if (!id_index_build(&ix->locations, p->n_location, location_id, p))
		return false;
	if (!id_index_build(&ix->functions, p->n_function, function_id, p))
		return false;
	return true;
}

static void
indexed_free(Indexed *ix)
{
	free(ix->locations.pairs);
	free(ix->functions.pairs);
}

/* the identity of a sample, independent of the ids its profile chose */
static bool
sample_key(const Indexed *ix, const Perftools__Profiles__Sample *s, Buf *key)
{
	const Profile *p = ix->p;

	key->len = 0;
	key->failed = false;
	for (size_t i = 0; i < s->n_location_id; i++)
	{
		size_t		li = id_index_find(&ix->locations, s->location_id[i]);
		const Perftools__Profiles__Location *loc;

		if (li == SIZE_MAX)
			return false;
		loc = p->location[li];
		buf_printf(key, "L%llx", (unsigned long long) loc->address);
		for (size_t k = 0; k < loc->n_line; k++)
		{
			size_t		fi = id_index_find(&ix->functions, loc->line[k]->function_id);
			const Perftools__Profiles__Function *fn = fi == SIZE_MAX ? NULL : p->function[fi];

			buf_printf(key, "|%s|%s|%lld", fn ? str(p, fn->name) : "", fn ? str(p, fn->filename) : "",
					   (long long) loc->line[k]->line);
		}
		buf_append(key, "\n", 1);
	}
	for (size_t i = 0; i < s->n_label; i++)
		buf_printf(key, "#%s=%s/%lld%s", str(p, s->label[i]->key), str(p, s->label[i]->str),
				   (long long) s->label[i]->num, str(p, s->label[i]->num_unit));
	return !key->failed;
}

typedef struct Entry
{
	char	   *key;
	size_t		key_len;
	const Perftools__Profiles__Sample *sample;
} Entry;

static uint64_t
hash_bytes(const uint8_t *d, size_t n)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 1099511628211ULL;
	return h;
}

bool
pprof_subtract(const uint8_t *cur, size_t cur_len, const uint8_t *prev, size_t prev_len,
			   CumulativeFn cumulative, void *arg, size_t memory_limit,
			   uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
	AllocBudget budget;
	ProtobufCAllocator *alloc = &budget.allocator;
	Profile    *c = NULL;
	Profile    *pv = NULL;
	Entry	   *table = NULL;
	size_t		nslots = 0;
	bool	   *is_cumulative = NULL;
	Buf			key;
	Indexed		cix = {0};
	Indexed		pix = {0};
	bool		ok = false;
	size_t		kept = 0;

	*out = NULL;
	*out_len = 0;
	alloc_budget_init(&budget, memory_limit);
	buf_init(&key, memory_limit);
	c = perftools__profiles__profile__unpack(alloc, cur_len, cur);
	if (c)
		pv = perftools__profiles__profile__unpack(alloc, prev_len, prev);
	if (!c || !pv)
	{
		if (budget.exceeded)
			snprintf(err, errlen, "the profile and prev_profile need more than %zu bytes of memory to decode",
					 memory_limit);
		else
			snprintf(err, errlen, "%s is not a pprof protocol buffer message", c ? "prev_profile" : "profile");
		goto done;
	}
	if (pv->n_sample_type != c->n_sample_type)
	{
		snprintf(err, errlen, "prev_profile has %zu sample types and profile %zu", pv->n_sample_type,
				 c->n_sample_type);
		goto done;
	}
	if (!indexed_init(&cix, c) || !indexed_init(&pix, pv))
		goto nomem;
	is_cumulative = calloc(c->n_sample_type + 1, sizeof(bool));
	if (!is_cumulative)
		goto nomem;
	for (size_t i = 0; i < c->n_sample_type; i++)
		is_cumulative[i] = cumulative(str(c, c->sample_type[i]->type), arg);

	/* prev's samples by key: open addressing, at most half full */
	nslots = 16;
	while (nslots < pv->n_sample * 2 + 2)
		nslots *= 2;
	if (nslots > budget.left / sizeof(Entry))
	{
		snprintf(err, errlen, "prev_profile has too many samples for the memory limit");
		goto done;
	}
	table = calloc(nslots, sizeof(Entry));
	if (!table)
		goto nomem;
	for (size_t i = 0; i < pv->n_sample; i++)
	{
		const Perftools__Profiles__Sample *s = pv->sample[i];
		size_t		slot;

		if (s->n_value != pv->n_sample_type)
			continue;
		if (!sample_key(&pix, s, &key))
			continue;
		slot = hash_bytes(key.data, key.len) & (nslots - 1);
		while (table[slot].key &&
			   !(table[slot].key_len == key.len && memcmp(table[slot].key, key.data, key.len) == 0))
			slot = (slot + 1) & (nslots - 1);
		if (table[slot].key)
		{
			/* the same stack twice in prev: c is compared with their sum */
			continue;
		}
		if (key.len > budget.left)
		{
			snprintf(err, errlen, "prev_profile needs more memory than the limit to compare");
			goto done;
		}
		table[slot].key = malloc(key.len);
		if (!table[slot].key)
			goto nomem;
		budget.left -= key.len;
		memcpy(table[slot].key, key.data, key.len);
		table[slot].key_len = key.len;
		table[slot].sample = s;
	}

	for (size_t i = 0; i < c->n_sample; i++)
	{
		Perftools__Profiles__Sample *s = c->sample[i];
		size_t		slot;
		bool		nonzero = false;

		if (s->n_value == c->n_sample_type && sample_key(&cix, s, &key))
		{
			slot = hash_bytes(key.data, key.len) & (nslots - 1);
			while (table[slot].key &&
				   !(table[slot].key_len == key.len && memcmp(table[slot].key, key.data, key.len) == 0))
				slot = (slot + 1) & (nslots - 1);
			if (table[slot].key)
				for (size_t v = 0; v < s->n_value; v++)
					if (is_cumulative[v])
					{
						int64_t		before = table[slot].sample->value[v];

						s->value[v] = s->value[v] > before ? s->value[v] - before : 0;
					}
		}
		for (size_t v = 0; v < s->n_value; v++)
			nonzero |= s->value[v] != 0;
		if (nonzero)
			c->sample[kept++] = s;
		else
			perftools__profiles__sample__free_unpacked(s, alloc);
	}
	c->n_sample = kept;

	*out_len = perftools__profiles__profile__get_packed_size(c);
	*out = malloc(*out_len ? *out_len : 1);
	if (!*out)
		goto nomem;
	perftools__profiles__profile__pack(c, *out);
	ok = true;
	goto done;

nomem:
	snprintf(err, errlen, "out of memory");
done:
	if (table)
	{
		for (size_t i = 0; i < nslots; i++)
			free(table[i].key);
		free(table);
	}
	free(is_cumulative);
	indexed_free(&cix);
	indexed_free(&pix);
	buf_free(&key);
	if (c)
		perftools__profiles__profile__free_unpacked(c, alloc);
	if (pv)
		perftools__profiles__profile__free_unpacked(pv, alloc);
	return ok;
}
