/*
 * jfr_metadata.c: a JFR chunk's types, read from its metadata event (jfr_internal.h)
 *
 * The metadata event is a tree of elements: the classes, their fields and
 * the fields' types, constant pool flags and array dimensions.  Nesting is
 * bounded, and every reference to a string of the event's table checked.
 */
#include "jfr_internal.h"

#include <stdlib.h>
#include <string.h>

int32_t
jfr_class_index(Jfr *j, uint64_t type_id)
{
	uint64_t	v;

	return map_get(&j->class_ids, type_id, &v) ? (int32_t) v : -1;
}

int32_t
jfr_class_by_name(Jfr *j, const char *name)
{
	for (uint32_t i = 0; i < j->nclasses; i++)
		if (strcmp(j->classes[i].name, name) == 0)
			return (int32_t) i;
	return -1;
}

static Prim
prim_of(const char *name)
{
	static const struct
	{
		const char *name;
		Prim		prim;
	}			prims[] = {
		{"boolean", P_BOOLEAN}, {"byte", P_BYTE}, {"char", P_CHAR}, {"short", P_SHORT},
		{"int", P_INT}, {"long", P_LONG}, {"float", P_FLOAT}, {"double", P_DOUBLE},
		{"java.lang.String", P_STRING},
	};

	for (size_t i = 0; i < sizeof(prims) / sizeof(prims[0]); i++)
		if (strcmp(name, prims[i].name) == 0)
			return prims[i].prim;
	return P_NONE;
}

typedef struct MetaStrings
{
	const char **s;
	uint64_t	n;
} MetaStrings;

static const char *
meta_string(Jfr *j, Rd *r, const MetaStrings *ms)
{
	uint64_t	i = rd_var(r);

	if (r->bad)
		return NULL;
	if (i >= ms->n || !ms->s[i])
	{
		push_fail(&j->conv, "the metadata refers to string %llu of %llu", (unsigned long long) i, (unsigned long long) ms->n);
		return NULL;
	}
	return ms->s[i];
}

static bool
parse_u64(const char *s, uint64_t *v)
{
	char	   *end;

	if (!s || !*s)
		return false;
	*v = strtoull(s, &end, 10);
	return *end == 0;
}

/*
 * One element of the metadata tree and its children: "class" elements
 * (attributes name, id, superType, simpleType) with "field" children
 * (name, class, constantPool, dimension); everything else is walked over.
 * cls: the index in j->classes of the class whose child it is, or -1 (an
 * index: a class nested in a class, which a damaged recording may hold,
 * grows j->classes under its parent).
 */
static bool
parse_element(Jfr *j, Rd *r, const MetaStrings *ms, int depth, int32_t cls)
{
	const char *name;
	uint64_t	nattr,
				nchild;
	const char *a_name = NULL,
			   *a_id = NULL,
			   *a_class = NULL,
			   *a_cp = NULL,
			   *a_dim = NULL;
	int32_t		child_cls = -1;

	if (depth > MAX_TYPE_DEPTH)
	{
		push_fail(&j->conv, "the metadata nests deeper than %d elements", MAX_TYPE_DEPTH);
		return false;
	}
	name = meta_string(j, r, ms);
	nattr = rd_var(r);
	if (!name || r->bad || nattr > (uint64_t) (r->end - r->p))
		goto bad;
	for (uint64_t i = 0; i < nattr; i++)
	{
		const char *k = meta_string(j, r, ms);
		const char *v = meta_string(j, r, ms);

		if (!k || !v)
			goto bad;
		if (strcmp(k, "name") == 0)
			a_name = v;
		else if (strcmp(k, "id") == 0)
			a_id = v;
		else if (strcmp(k, "class") == 0)
			a_class = v;
		else if (strcmp(k, "constantPool") == 0)
			a_cp = v;
		else if (strcmp(k, "dimension") == 0)
			a_dim = v;
	}
	if (strcmp(name, "class") == 0)
	{
		uint64_t	id;
		JClass	   *c;

		if (!a_name || !parse_u64(a_id, &id))
		{
			push_fail(&j->conv, "a class in the metadata without a name or id");
			return false;
		}
		if (jfr_class_index(j, id) >= 0)
		{
			push_fail(&j->conv, "the metadata describes type %llu twice", (unsigned long long) id);
			return false;
		}
		if (!GROW(j, j->classes, j->cap_classes, j->nclasses + 1) ||
			!jfr_map_put(j, &j->class_ids, id, j->nclasses, false))
			return false;
		child_cls = (int32_t) j->nclasses;
		c = &j->classes[j->nclasses++];
		memset(c, 0, sizeof(*c));
		c->id = id;
		c->name = a_name;
		c->prim = prim_of(a_name);
	}
	else if (strcmp(name, "field") == 0 && cls >= 0)
	{
		JClass	   *owner = &j->classes[cls];
		JField	   *f;
		uint64_t	type_id,
					dim = 0;

		if (!a_name || !parse_u64(a_class, &type_id) || (a_dim && !parse_u64(a_dim, &dim)) || dim > 1)
		{
			push_fail(&j->conv, "a field of %.64s in the metadata without a name or type, or of more than one dimension",
				  owner->name);
			return false;
		}
		if (owner->nfields == owner->cap_fields)
		{
			uint32_t	ncap = owner->cap_fields ? owner->cap_fields * 2 : 8;
			JField	   *nf = push_arena_alloc(&j->conv, j->arena, (size_t) ncap * sizeof(JField));

			if (!nf)
				return false;
			if (owner->nfields)
				memcpy(nf, owner->fields, owner->nfields * sizeof(JField));
			owner->fields = nf;
			owner->cap_fields = ncap;
		}
		f = &owner->fields[owner->nfields++];
		f->name = a_name;
		f->type_id = type_id;
		f->cls = -1;
		f->cp = a_cp && strcmp(a_cp, "true") == 0;
		f->array = dim == 1;
	}
	nchild = rd_var(r);
	if (r->bad || nchild > (uint64_t) (r->end - r->p))
		goto bad;
	/* classes' children are fields; fields' children (annotations) are not */
	for (uint64_t i = 0; i < nchild; i++)
		if (!parse_element(j, r, ms, depth + 1, child_cls))
			return false;
	return true;
bad:
	push_fail(&j->conv, "the metadata event is truncated or malformed");
	return false;
}

/* whether a value of class c takes bytes; SZ_INVALID for types that nest themselves or too deep */
static SizeState
class_size(Jfr *j, JClass *c, int depth)
{
	SizeState	s = SZ_ZERO;

	if (c->size == SZ_COMPUTING || depth > MAX_TYPE_DEPTH)
		return SZ_INVALID;
	if (c->size != SZ_UNKNOWN)
		return c->size;
	if (c->prim != P_NONE)
		return c->size = SZ_NONZERO;
	c->size = SZ_COMPUTING;
	for (uint32_t i = 0; i < c->nfields && s != SZ_INVALID; i++)
	{
		JField	   *f = &c->fields[i];

		if (f->cls < 0)
			s = SZ_INVALID;
		else if (f->cp || f->array)
			s = SZ_NONZERO;
		else
		{
			SizeState	fs = class_size(j, &j->classes[f->cls], depth + 1);

			if (fs == SZ_INVALID)
				s = SZ_INVALID;
			else if (fs == SZ_NONZERO)
				s = SZ_NONZERO;
		}
	}
	return c->size = s;
}

/*
 * A reader at the fields of the event at offset in the chunk, which must be
 * of type want (0 the metadata, 1 a checkpoint), past its size, type, start
 * time and duration.  False with the error set.
 */
bool
jfr_special_event(Jfr *j, uint64_t offset, uint64_t want, const char *what, Rd *r)
{
	uint64_t	size,
				type;

	if (offset < CHUNK_HEADER_SIZE || offset >= j->chunk_size)
	{
		push_fail(&j->conv, "the %s offset (%llu) is outside the chunk", what, (unsigned long long) offset);
		return false;
	}
	r->p = j->chunk + offset;
	r->end = j->chunk + j->chunk_size;
	r->bad = false;
	size = rd_var(r);
	if (r->bad || size < 1 || size > j->chunk_size - offset)
	{
		push_fail(&j->conv, "the %s event at byte %llu is truncated", what, (unsigned long long) offset);
		return false;
	}
	r->end = j->chunk + offset + size;
	type = rd_var(r);
	if (type != want)
	{
		push_fail(&j->conv, "the event at the %s offset (%llu) is of type %llu, not %llu", what,
				  (unsigned long long) offset, (unsigned long long) type, (unsigned long long) want);
		return false;
	}
	rd_var(r);					/* start time */
	rd_var(r);					/* duration */
	return true;
}


/*
 * The chunk's types from its metadata event at offset: those of the chunk
 * before when the event is the same, byte for byte.
 */
bool
jfr_read_metadata(Jfr *j, uint64_t offset)
{
	Rd			r;
	MetaStrings ms = {0};

	if (!jfr_special_event(j, offset, 0, "metadata", &r))
		return false;
	rd_var(&r);					/* metadata id */
	if (r.bad)
		goto bad;
	/* the types (what follows the id) as the chunk before's: kept */
	if (j->metadata && j->metadata_size == (size_t) (r.end - r.p) &&
		memcmp(j->metadata, r.p, j->metadata_size) == 0)
		return true;
	jfr_types_free(j);
	j->arena = &j->types_arena;
	j->metadata = r.p;
	j->metadata_size = (size_t) (r.end - r.p);
	ms.n = rd_var(&r);
	if (r.bad || ms.n > (uint64_t) (r.end - r.p))
		goto bad;
	ms.s = push_arena_alloc(&j->conv, j->arena, (size_t) ms.n * sizeof(char *) + 1);
	if (!ms.s)
		return false;
	for (uint64_t i = 0; i < ms.n && !r.bad && !j->conv.failed; i++)
		ms.s[i] = jfr_rd_string(j, &r, true, false);
	if (r.bad)
		goto bad;
	if (j->conv.failed || !parse_element(j, &r, &ms, 0, -1))
		return false;
	/* resolve the fields' types, then which types take bytes */
	for (uint32_t i = 0; i < j->nclasses; i++)
		for (uint32_t k = 0; k < j->classes[i].nfields; k++)
			j->classes[i].fields[k].cls = jfr_class_index(j, j->classes[i].fields[k].type_id);
	for (uint32_t i = 0; i < j->nclasses; i++)
		class_size(j, &j->classes[i], 0);
	return true;
bad:
	push_fail(&j->conv, "the metadata event is truncated or malformed");
	return false;
}

/* the types and their constant pools: when a chunk's metadata differs from the chunk before's */
void
jfr_types_free(Jfr *j)
{
	j->metadata = NULL;
	j->metadata_size = 0;
	for (uint32_t i = 0; i < j->nclasses; i++)
		if (j->classes[i].pool)
			jfr_map_free(j, j->classes[i].pool);
	push_free(&j->conv, j->classes);
	j->classes = NULL;
	j->nclasses = j->cap_classes = 0;
	jfr_map_free(j, &j->class_ids);
	push_arena_free(&j->conv, &j->types_arena);
}
