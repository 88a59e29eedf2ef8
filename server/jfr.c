/*
 * jfr.c: JDK Flight Recorder recordings to pprof profiles (jfr.h)
 *
 * A recording is a sequence of chunks.  A chunk is a 68-byte header (magic
 * "FLR\0", version, size, the offsets of its last checkpoint event and of
 * its metadata event, start time, duration, start ticks, ticks per second,
 * flags) followed by events, each its size and type id (LEB128 varints, as
 * every integer but the header's) and its fields.  The metadata event
 * describes every type: its fields, their types, whether a field is a
 * reference into a constant pool, whether it is an array.  Checkpoint events
 * hold the constant pools (stack traces, methods, classes, symbols, strings,
 * threads), each pointing back to the one before it.  Events are read by
 * their metadata, the fields we use found by name, so that a recording of
 * another JDK version or of async-profiler reads the same way.
 *
 * Hostile input: every count is checked against the bytes left, nesting of
 * types is bounded, the checkpoint chain must go backwards, references are
 * followed only along the fixed path stack trace -> frame -> method -> class
 * -> symbol -> string, and all memory (the profiles made included) is
 * charged to one budget.
 */
#include "jfr.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_builder.h"

#define CHUNK_HEADER_SIZE 68
#define MAX_TYPE_DEPTH 32		/* inline nesting of types, and of metadata elements */
#define MAX_STACK_FRAMES 4096	/* as parca_ingest_pprof allows; deeper stacks are cut */
#define MAX_STRING_BYTES 65536	/* longer strings are cut (names, labels) */
#define DEFAULT_PERIOD_NS 10000000	/* 100 Hz, when a recording names no period */

/* the kinds of profile made; docs/push.md ("JFR") has the same table */
typedef enum Kind
{
	K_CPU,
	K_WALL,
	K_NATIVE,
	K_ALLOC_TLAB,
	K_ALLOC_OUTSIDE,
	K_ALLOC_SAMPLE,
	K_LIVE,
	K_MALLOC,
	K_LOCK,
	K_PARK,
	K_COUNT
} Kind;

typedef struct KindInfo
{
	const char *name;			/* parca_ingest_pprof's name */
	const char *type[2];		/* sample types and units; the second may be NULL */
	const char *unit[2];
	const char *period_type;
	const char *period_unit;
} KindInfo;

static const KindInfo kinds[K_COUNT] = {
	[K_CPU] = {"process_cpu", {"cpu", NULL}, {"nanoseconds", NULL}, "cpu", "nanoseconds"},
	[K_WALL] = {"wall", {"wall", NULL}, {"nanoseconds", NULL}, "wall", "nanoseconds"},
	[K_NATIVE] = {"wall", {"native", NULL}, {"nanoseconds", NULL}, "wall", "nanoseconds"},
	[K_ALLOC_TLAB] = {"memory", {"alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes"}, {"count", "bytes"}, "space", "bytes"},
	[K_ALLOC_OUTSIDE] = {"memory", {"alloc_outside_tlab_objects", "alloc_outside_tlab_bytes"}, {"count", "bytes"}, "space", "bytes"},
	[K_ALLOC_SAMPLE] = {"memory", {"alloc_sample_objects", "alloc_sample_bytes"}, {"count", "bytes"}, "space", "bytes"},
	[K_LIVE] = {"memory", {"live", NULL}, {"count", NULL}, "objects", "count"},
	[K_MALLOC] = {"memory", {"malloc_objects", "malloc_bytes"}, {"count", "bytes"}, "space", "bytes"},
	[K_LOCK] = {"mutex", {"contentions", "delay"}, {"count", "nanoseconds"}, "mutex", "count"},
	[K_PARK] = {"block", {"contentions", "delay"}, {"count", "nanoseconds"}, "block", "count"},
};

/* the events read, by name */
typedef enum EventId
{
	E_EXECUTION_SAMPLE,
	E_NATIVE_METHOD_SAMPLE,
	E_WALL_CLOCK_SAMPLE,
	E_ALLOC_IN_NEW_TLAB,
	E_ALLOC_OUTSIDE_TLAB,
	E_ALLOC_SAMPLE,
	E_LIVE_OBJECT,
	E_MALLOC,
	E_MONITOR_ENTER,
	E_THREAD_PARK,
	E_ACTIVE_SETTING,
	E_COUNT
} EventId;

static const char *const event_names[E_COUNT] = {
	"jdk.ExecutionSample", "jdk.NativeMethodSample", "profiler.WallClockSample",
	"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB", "jdk.ObjectAllocationSample",
	"profiler.LiveObject", "profiler.Malloc", "jdk.JavaMonitorEnter", "jdk.ThreadPark",
	"jdk.ActiveSetting",
};

/* the fields of an event that we use */
typedef enum Role
{
	R_NONE,
	R_STACK,					/* constant pool key of a stack trace */
	R_THREAD,					/* constant pool key of a thread */
	R_STATE,					/* constant pool key of a thread state */
	R_DURATION,					/* ticks */
	R_WEIGHT,
	R_TLAB_SIZE,
	R_ALLOC_SIZE,
	R_SIZE,
	R_SAMPLES,
	R_SETTING_ID,
	R_SETTING_NAME,
	R_SETTING_VALUE,
	R_COUNT
} Role;

typedef enum Prim
{
	P_NONE,
	P_BOOLEAN,
	P_BYTE,
	P_CHAR,
	P_SHORT,
	P_INT,
	P_LONG,
	P_FLOAT,
	P_DOUBLE,
	P_STRING
} Prim;

typedef enum SizeState
{
	SZ_UNKNOWN,
	SZ_COMPUTING,
	SZ_ZERO,					/* a value takes no bytes */
	SZ_NONZERO,
	SZ_INVALID					/* nests itself inline, or too deep */
} SizeState;

typedef struct JField
{
	const char *name;
	uint64_t	type_id;
	int32_t		cls;			/* index in classes, -1 if the type is not described */
	bool		cp;				/* a constant pool key */
	bool		array;
} JField;

typedef struct U64Map U64Map;

typedef struct JClass
{
	uint64_t	id;
	const char *name;
	Prim		prim;
	SizeState	size;
	JField	   *fields;
	uint32_t	nfields;
	uint32_t	cap_fields;
	U64Map	   *pool;			/* constant pool: key -> offset of the value in the recording */
} JClass;

/* a u64 -> u64 open addressing map; values are < UINT64_MAX */
struct U64Map
{
	uint64_t   *keys;
	uint64_t   *vals;			/* UINT64_MAX: empty */
	size_t		cap;
	size_t		n;
};

typedef struct Stack
{
	uint32_t	first;			/* in stack_frames */
	uint32_t	n;
	bool		truncated;
} Stack;

typedef struct Frame
{
	const char *name;			/* class.method */
	int64_t		line;
} Frame;

typedef struct Setting
{
	uint64_t	event_type;
	const char *name;
	const char *value;
} Setting;

typedef struct Jfr
{
	PushConv	conv;			/* the budget, and the error ("JFR chunk N (at byte B): ...") */
	bool		thread_labels;

	const uint8_t *data;
	size_t		len;

	/*
	 * The chunk being read.  Its types, constant pools and what is derived
	 * from them stay for the next chunk when that has the same metadata (a
	 * recording's chunks do: an event may refer to a constant written in an
	 * earlier chunk), else they are freed first.
	 */
	const uint8_t *chunk;
	const uint8_t *metadata;	/* the types in the metadata event, and their size */
	size_t		metadata_size;
	size_t		chunk_size;
	size_t		chunk_offset;	/* in data, for messages */
	int			chunk_no;
	int64_t		ticks_per_second;
	PushArena *types_arena;	/* the types and pools' maps */
	PushArena *chunk_arena;	/* names and settings: freed at each chunk's start */
	PushArena **arena;			/* where arena_alloc takes from */
	JClass	   *classes;
	uint32_t	nclasses;
	uint32_t	cap_classes;
	U64Map		class_ids;		/* type id -> index in classes */
	int32_t		event_cls[E_COUNT];
	int32_t		string_cls;		/* java.lang.String */
	int32_t		stack_cls;		/* jdk.types.StackTrace */
	U64Map		method_idx;		/* method key -> index in method_names */
	const char **method_names;
	uint32_t	nmethods;
	uint32_t	cap_methods;
	U64Map		frame_idx;		/* method index << 32 | line -> index in frames */
	Frame	   *frames;
	uint32_t	nframes;
	uint32_t	cap_frames;
	U64Map		stack_idx;		/* stack key -> index in stacks */
	Stack	   *stacks;
	uint32_t	nstacks;
	uint32_t	cap_stacks;
	uint32_t   *stack_frames;
	uint32_t	nstack_frames;
	uint32_t	cap_stack_frames;
	U64Map		thread_names;	/* thread key -> const char * */
	U64Map		thread_states;	/* state key -> 1 runnable, 2 sleeping, 3 other */
	Setting    *settings;
	uint32_t	nsettings;
	uint32_t	cap_settings;
	int64_t		period[K_COUNT];	/* nanoseconds, for the kinds that are samples */
	bool		wall_mode;		/* async-profiler's event=wall: execution samples are wall clock */

	/* the profiles, over all chunks */
	ProfileBuilder *pb[K_COUNT];
	uint64_t   *frame_loc[K_COUNT];	/* frame index -> the builder's location, this chunk */
	uint32_t	cap_frame_loc[K_COUNT];
	uint64_t	truncated_loc[K_COUNT];
	uint64_t   *locs;			/* MAX_STACK_FRAMES + 1 */
	int64_t		start_nanos;
	int64_t		end_nanos;
	uint64_t	skipped_no_stack;
} Jfr;

typedef struct Rd
{
	const uint8_t *p;
	const uint8_t *end;
	bool		bad;
} Rd;

static bool
jgrow(Jfr *j, void **arr, uint32_t *cap, size_t need, size_t elem)
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

#define GROW(j, arr, cap, need) jgrow((j), (void **) &(arr), &(cap), (need), sizeof(*(arr)))

/* maps */

static bool
map_get(const U64Map *m, uint64_t key, uint64_t *val)
{
	if (m->cap == 0)
		return false;
	for (size_t i = pb_hash64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
	{
		if (m->vals[i] == UINT64_MAX)
			return false;
		if (m->keys[i] == key)
		{
			*val = m->vals[i];
			return true;
		}
	}
}

/* sets key to val (a key there keeps its value unless replace) */
static bool
map_put(Jfr *j, U64Map *m, uint64_t key, uint64_t val, bool replace)
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

static void
map_free(Jfr *j, U64Map *m)
{
	push_free(&j->conv, m->keys);
	push_free(&j->conv, m->vals);
	memset(m, 0, sizeof(*m));
}

/* reading */

static inline uint64_t
rd_var(Rd *r)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
	{
		uint8_t		b;

		if (r->p >= r->end)
		{
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		v |= (uint64_t) (b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	/* the ninth byte holds 8 bits */
	if (r->p >= r->end)
	{
		r->bad = true;
		return 0;
	}
	return v | (uint64_t) *r->p++ << 56;
}

static inline uint8_t
rd_u8(Rd *r)
{
	if (r->p >= r->end)
	{
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static inline void
rd_skip(Rd *r, uint64_t n)
{
	if (n > (uint64_t) (r->end - r->p))
	{
		r->bad = true;
		r->p = r->end;
		return;
	}
	r->p += n;
}

static uint64_t
be64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static const char *string_ref(Jfr *j, uint64_t key);

/*
 * A string value at r: NULL for null, else UTF-8 in the chunk's arena (when
 * keep; else "" and only skipped), invalid text repaired to U+FFFD.  A
 * constant pool reference is followed when allow_ref (not from inside the
 * string pool itself, so that references cannot loop).
 */
static const char *
rd_string(Jfr *j, Rd *r, bool keep, bool allow_ref)
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
			return keep ? string_ref(j, n) : "";
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
					size_t		l = enc == 3 ? push_utf8_char(s + i, take - i) : 0;

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

/* metadata */

static int32_t
class_index(Jfr *j, uint64_t type_id)
{
	uint64_t	v;

	return map_get(&j->class_ids, type_id, &v) ? (int32_t) v : -1;
}

static int32_t
class_by_name(Jfr *j, const char *name)
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
 */
static bool
parse_element(Jfr *j, Rd *r, const MetaStrings *ms, int depth, JClass *cls)
{
	const char *name;
	uint64_t	nattr,
				nchild;
	const char *a_name = NULL,
			   *a_id = NULL,
			   *a_class = NULL,
			   *a_cp = NULL,
			   *a_dim = NULL;
	JClass	   *child_cls = NULL;

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
		if (class_index(j, id) >= 0)
		{
			push_fail(&j->conv, "the metadata describes type %llu twice", (unsigned long long) id);
			return false;
		}
		if (!GROW(j, j->classes, j->cap_classes, j->nclasses + 1) ||
			!map_put(j, &j->class_ids, id, j->nclasses, false))
			return false;
		c = &j->classes[j->nclasses++];
		memset(c, 0, sizeof(*c));
		c->id = id;
		c->name = a_name;
		c->prim = prim_of(a_name);
		child_cls = c;
	}
	else if (strcmp(name, "field") == 0 && cls)
	{
		JField	   *f;
		uint64_t	type_id,
					dim = 0;

		if (!a_name || !parse_u64(a_class, &type_id) || (a_dim && !parse_u64(a_dim, &dim)) || dim > 1)
		{
			push_fail(&j->conv, "a field of %.64s in the metadata without a name or type, or of more than one dimension",
				  cls->name);
			return false;
		}
		if (cls->nfields == cls->cap_fields)
		{
			uint32_t	ncap = cls->cap_fields ? cls->cap_fields * 2 : 8;
			JField	   *nf = push_arena_alloc(&j->conv, j->arena, (size_t) ncap * sizeof(JField));

			if (!nf)
				return false;
			if (cls->nfields)
				memcpy(nf, cls->fields, cls->nfields * sizeof(JField));
			cls->fields = nf;
			cls->cap_fields = ncap;
		}
		f = &cls->fields[cls->nfields++];
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
static bool
special_event(Jfr *j, uint64_t offset, uint64_t want, const char *what, Rd *r)
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

static void types_free(Jfr *j);

/*
 * The chunk's types from its metadata event at offset: those of the chunk
 * before when the event is the same, byte for byte.
 */
static bool
read_metadata(Jfr *j, uint64_t offset)
{
	Rd			r;
	MetaStrings ms = {0};

	if (!special_event(j, offset, 0, "metadata", &r))
		return false;
	rd_var(&r);					/* metadata id */
	if (r.bad)
		goto bad;
	/* the types (what follows the id) as the chunk before's: kept */
	if (j->metadata && j->metadata_size == (size_t) (r.end - r.p) &&
		memcmp(j->metadata, r.p, j->metadata_size) == 0)
		return true;
	types_free(j);
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
		ms.s[i] = rd_string(j, &r, true, false);
	if (r.bad)
		goto bad;
	if (j->conv.failed || !parse_element(j, &r, &ms, 0, NULL))
		return false;
	/* resolve the fields' types, then which types take bytes */
	for (uint32_t i = 0; i < j->nclasses; i++)
		for (uint32_t k = 0; k < j->classes[i].nfields; k++)
			j->classes[i].fields[k].cls = class_index(j, j->classes[i].fields[k].type_id);
	for (uint32_t i = 0; i < j->nclasses; i++)
		class_size(j, &j->classes[i], 0);
	return true;
bad:
	push_fail(&j->conv, "the metadata event is truncated or malformed");
	return false;
}

/* values */

static bool skip_field(Jfr *j, Rd *r, const JField *f, int depth);

/* an inline value of class c */
static bool
skip_value(Jfr *j, Rd *r, const JClass *c, int depth)
{
	switch (c->prim)
	{
		case P_BOOLEAN:
		case P_BYTE:
			rd_skip(r, 1);
			break;
		case P_CHAR:
		case P_SHORT:
		case P_INT:
		case P_LONG:
			rd_var(r);
			break;
		case P_FLOAT:
			rd_skip(r, 4);
			break;
		case P_DOUBLE:
			rd_skip(r, 8);
			break;
		case P_STRING:
			rd_string(j, r, false, true);
			break;
		case P_NONE:
			if (c->size == SZ_ZERO)
				break;
			if (c->size == SZ_INVALID || depth > MAX_TYPE_DEPTH)
			{
				push_fail(&j->conv, "type %.64s nests itself or nests too deep", c->name);
				return false;
			}
			for (uint32_t i = 0; i < c->nfields && !r->bad; i++)
				if (!skip_field(j, r, &c->fields[i], depth + 1))
					return false;
			break;
	}
	return !r->bad;
}

static bool
skip_one(Jfr *j, Rd *r, const JField *f, int depth)
{
	if (f->cp)
	{
		rd_var(r);
		return !r->bad;
	}
	return skip_value(j, r, &j->classes[f->cls], depth);
}

static bool
skip_field(Jfr *j, Rd *r, const JField *f, int depth)
{
	if (f->cls < 0)
	{
		push_fail(&j->conv, "field %.64s has type %llu, which the metadata does not describe", f->name,
			  (unsigned long long) f->type_id);
		return false;
	}
	if (f->array)
	{
		uint64_t	n = rd_var(r);

		if (r->bad || n > (uint64_t) (r->end - r->p) + 1)
		{
			r->bad = true;
			return false;
		}
		if (!f->cp && j->classes[f->cls].size == SZ_ZERO)
			return true;
		for (uint64_t i = 0; i < n; i++)
			if (!skip_one(j, r, f, depth))
				return false;
		return true;
	}
	return skip_one(j, r, f, depth);
}

/* constant pools */

static bool
read_checkpoints(Jfr *j, uint64_t offset)
{
	for (;;)
	{
		Rd			r;
		uint64_t	delta,
					npools;

		if (!special_event(j, offset, 1, "checkpoint", &r))
			return false;
		delta = rd_var(&r);
		rd_u8(&r);				/* checkpoint type */
		npools = rd_var(&r);
		if (r.bad || npools > (uint64_t) (r.end - r.p))
			goto bad;
		for (uint64_t i = 0; i < npools; i++)
		{
			uint64_t	type_id = rd_var(&r);
			uint64_t	count = rd_var(&r);
			int32_t		ci = class_index(j, type_id);
			JClass	   *c;

			if (r.bad || count > (uint64_t) (r.end - r.p))
				goto bad;
			if (ci < 0)
			{
				push_fail(&j->conv, "a constant pool of type %llu, which the metadata does not describe",
					  (unsigned long long) type_id);
				return false;
			}
			c = &j->classes[ci];
			if (!c->pool)
			{
				c->pool = push_arena_alloc(&j->conv, j->arena, sizeof(U64Map));
				if (!c->pool)
					return false;
				memset(c->pool, 0, sizeof(U64Map));
			}
			for (uint64_t k = 0; k < count; k++)
			{
				uint64_t	key = rd_var(&r);

				if (r.bad || !map_put(j, c->pool, key, (uint64_t) (r.p - j->data), true))
					goto bad;
				if (!skip_value(j, &r, c, 0))
					goto bad;
			}
		}
		/* the previous checkpoint is before this one: the chain ends */
		if (delta == 0)
			return true;
		if ((int64_t) delta >= 0 || (uint64_t) -(int64_t) delta > offset)
		{
			push_fail(&j->conv, "a checkpoint points forward or outside the chunk (delta %lld)", (long long) (int64_t) delta);
			return false;
		}
		offset += delta;
	}
bad:
	if (!j->conv.failed)
		push_fail(&j->conv, "a checkpoint event is truncated or malformed");
	return false;
}

/* a reader at the value of key in class ci's pool */
static bool
pool_value(Jfr *j, int32_t ci, uint64_t key, Rd *r)
{
	uint64_t	pos;

	if (ci < 0 || !j->classes[ci].pool || !map_get(j->classes[ci].pool, key, &pos))
		return false;
	/* (an offset in the recording: pools of earlier chunks stay readable) */
	r->p = j->data + pos;
	r->end = j->data + j->len;
	r->bad = false;
	return true;
}

static const char *
string_ref(Jfr *j, uint64_t key)
{
	Rd			r;
	const char *s;

	if (!pool_value(j, j->string_cls, key, &r))
		return NULL;
	s = rd_string(j, &r, true, false);
	return r.bad ? NULL : s;
}

/*
 * The text of a field's value: a string, or a value (inline or from its
 * pool) whose first string field it is (symbols, thread states, frame types).
 */
static const char *
field_text(Jfr *j, Rd *r, const JField *f)
{
	const JClass *c;
	Rd			pr;
	Rd		   *vr = r;

	if (f->cls < 0 || f->array)
	{
		skip_field(j, r, f, 0);
		return NULL;
	}
	c = &j->classes[f->cls];
	if (f->cp)
	{
		uint64_t	key = rd_var(r);

		if (r->bad)
			return NULL;
		if (c->prim == P_STRING)
			return string_ref(j, key);
		if (!pool_value(j, f->cls, key, &pr))
			return NULL;
		vr = &pr;
	}
	if (c->prim == P_STRING)
		return rd_string(j, vr, true, true);
	if (c->prim != P_NONE)
	{
		skip_value(j, vr, c, 0);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nfields && !vr->bad; i++)
	{
		const JField *sf = &c->fields[i];

		if (!sf->cp && !sf->array && sf->cls >= 0 && j->classes[sf->cls].prim == P_STRING)
			return rd_string(j, vr, true, true);
		if (!skip_field(j, vr, sf, 1))
			return NULL;
	}
	return NULL;
}

/* an integer field's value (0 for other types) */
static uint64_t
field_int(Jfr *j, Rd *r, const JField *f)
{
	if (f->cls >= 0 && !f->cp && !f->array)
	{
		Prim		p = j->classes[f->cls].prim;

		if (p == P_CHAR || p == P_SHORT || p == P_INT || p == P_LONG)
			return rd_var(r);
		if (p == P_BOOLEAN || p == P_BYTE)
			return rd_u8(r);
	}
	skip_field(j, r, f, 0);
	return 0;
}

/* "class.method" of a method key, cached per chunk; its index in method_names */
static int64_t
method_index(Jfr *j, uint64_t key)
{
	uint64_t	idx;
	Rd			r;
	int32_t		mc;
	const char *cls_name = NULL,
			   *name = NULL;
	char	   *full;
	size_t		lc,
				ln;

	if (map_get(&j->method_idx, key, &idx))
		return (int64_t) idx;
	mc = class_by_name(j, "jdk.types.Method");
	if (pool_value(j, mc, key, &r))
	{
		const JClass *m = &j->classes[mc];

		for (uint32_t i = 0; i < m->nfields && !r.bad && !j->conv.failed; i++)
		{
			const JField *f = &m->fields[i];

			if (strcmp(f->name, "type") == 0 && f->cp && f->cls >= 0 && !f->array)
			{
				uint64_t	ckey = rd_var(&r);
				Rd			cr;

				/* the class: its name field */
				if (!r.bad && pool_value(j, f->cls, ckey, &cr))
				{
					const JClass *cc = &j->classes[f->cls];

					for (uint32_t k = 0; k < cc->nfields && !cr.bad && !j->conv.failed; k++)
					{
						if (strcmp(cc->fields[k].name, "name") == 0)
						{
							cls_name = field_text(j, &cr, &cc->fields[k]);
							break;
						}
						skip_field(j, &cr, &cc->fields[k], 0);
					}
				}
			}
			else if (strcmp(f->name, "name") == 0)
			{
				name = field_text(j, &r, f);
				break;
			}
			else
				skip_field(j, &r, f, 0);
		}
	}
	if (j->conv.failed)
		return -1;
	if (!name)
		name = "[unknown]";
	lc = cls_name ? strlen(cls_name) : 0;
	ln = strlen(name);
	full = push_arena_alloc(&j->conv, j->arena, lc + 1 + ln + 1);
	if (!full)
		return -1;
	if (lc)
	{
		/* binary names (java/lang/String) as Java writes them (java.lang.String) */
		for (size_t i = 0; i < lc; i++)
			full[i] = cls_name[i] == '/' ? '.' : cls_name[i];
		full[lc] = '.';
		memcpy(full + lc + 1, name, ln + 1);
	}
	else
		memcpy(full, name, ln + 1);
	if (!GROW(j, j->method_names, j->cap_methods, j->nmethods + 1) ||
		!map_put(j, &j->method_idx, key, j->nmethods, false))
		return -1;
	j->method_names[j->nmethods] = full;
	return j->nmethods++;
}

static int64_t
frame_index(Jfr *j, uint64_t method_key, int64_t line)
{
	int64_t		m = method_index(j, method_key);
	uint64_t	key,
				idx;

	if (m < 0)
		return -1;
	key = (uint64_t) m << 32 | (uint32_t) line;
	if (map_get(&j->frame_idx, key, &idx))
		return (int64_t) idx;
	if (!GROW(j, j->frames, j->cap_frames, j->nframes + 1) ||
		!map_put(j, &j->frame_idx, key, j->nframes, false))
		return -1;
	j->frames[j->nframes].name = j->method_names[m];
	j->frames[j->nframes].line = line;
	return j->nframes++;
}

/* a frame (inline StackFrame value): its index in frames */
static int64_t
read_frame(Jfr *j, Rd *r, const JClass *fc)
{
	uint64_t	method = 0;
	int64_t		line = 0;
	bool		has_method = false;

	for (uint32_t i = 0; i < fc->nfields && !r->bad && !j->conv.failed; i++)
	{
		const JField *f = &fc->fields[i];

		if (strcmp(f->name, "method") == 0 && f->cp && !f->array)
		{
			method = rd_var(r);
			has_method = true;
		}
		else if (strcmp(f->name, "lineNumber") == 0)
			line = (int32_t) field_int(j, r, f);
		else
			skip_field(j, r, f, 0);
	}
	if (r->bad || j->conv.failed)
		return -1;
	if (!has_method)
		return -2;
	return frame_index(j, method, line);
}

/* a stack trace key: its index in stacks, or -1 (none, or an error: see j->conv.failed) */
static int64_t
stack_index(Jfr *j, uint64_t key)
{
	uint64_t	idx;
	Rd			r;
	const JClass *sc;
	Stack		st = {j->nstack_frames, 0, false};

	if (map_get(&j->stack_idx, key, &idx))
		return (int64_t) idx;
	if (!pool_value(j, j->stack_cls, key, &r))
		return -1;
	sc = &j->classes[j->stack_cls];
	for (uint32_t i = 0; i < sc->nfields && !r.bad && !j->conv.failed; i++)
	{
		const JField *f = &sc->fields[i];

		if (strcmp(f->name, "truncated") == 0)
			st.truncated = field_int(j, &r, f) != 0;
		else if (strcmp(f->name, "frames") == 0 && f->array && !f->cp && f->cls >= 0 &&
				 j->classes[f->cls].prim == P_NONE)
		{
			uint64_t	n = rd_var(&r);

			if (r.bad || n > (uint64_t) (r.end - r.p))
			{
				r.bad = true;
				break;
			}
			for (uint64_t k = 0; k < n && !r.bad && !j->conv.failed; k++)
			{
				int64_t		fi = read_frame(j, &r, &j->classes[f->cls]);

				if (fi == -2)
					continue;
				if (fi < 0)
					break;
				if (st.n == MAX_STACK_FRAMES)
				{
					st.truncated = true;
					continue;
				}
				if (!GROW(j, j->stack_frames, j->cap_stack_frames, (size_t) j->nstack_frames + 1))
					break;
				j->stack_frames[j->nstack_frames++] = (uint32_t) fi;
				st.n++;
			}
		}
		else
			skip_field(j, &r, f, 0);
	}
	if (r.bad && !j->conv.failed)
		push_fail(&j->conv, "stack trace %llu is truncated or malformed", (unsigned long long) key);
	if (j->conv.failed)
		return -1;
	if (!GROW(j, j->stacks, j->cap_stacks, j->nstacks + 1) || !map_put(j, &j->stack_idx, key, j->nstacks, false))
		return -1;
	j->stacks[j->nstacks] = st;
	return j->nstacks++;
}

static const char *
thread_name(Jfr *j, uint64_t key, int32_t thread_cls)
{
	uint64_t	v;
	Rd			r;
	const char *os_name = NULL,
			   *java_name = NULL;
	const JClass *tc;

	if (map_get(&j->thread_names, key, &v))
		return (const char *) (uintptr_t) v;
	if (!pool_value(j, thread_cls, key, &r))
		return NULL;
	tc = &j->classes[thread_cls];
	for (uint32_t i = 0; i < tc->nfields && !r.bad && !j->conv.failed; i++)
	{
		const JField *f = &tc->fields[i];

		if (strcmp(f->name, "osName") == 0)
			os_name = field_text(j, &r, f);
		else if (strcmp(f->name, "javaName") == 0)
		{
			java_name = field_text(j, &r, f);
			break;
		}
		else
			skip_field(j, &r, f, 0);
	}
	if (java_name && !*java_name)
		java_name = NULL;
	if (!java_name)
		java_name = os_name;
	if (!java_name || !*java_name || j->conv.failed)
		return NULL;
	/* a label value: at most 1 kB, cut at a character boundary */
	if (strlen(java_name) > 1024)
	{
		char	   *cut = push_arena_alloc(&j->conv, j->arena, 1025);
		size_t		n = 1024;

		if (!cut)
			return NULL;
		while (n > 0 && ((uint8_t) java_name[n] & 0xC0) == 0x80)
			n--;
		memcpy(cut, java_name, n);
		cut[n] = 0;
		java_name = cut;
	}
	map_put(j, &j->thread_names, key, (uint64_t) (uintptr_t) java_name, false);
	return java_name;
}

/* 1 runnable, 2 sleeping, 3 other, 0 unknown */
static int
thread_state(Jfr *j, uint64_t key, const JField *f)
{
	uint64_t	v;
	Rd			r;
	const char *name = NULL;
	int			s;

	if (map_get(&j->thread_states, key, &v))
		return (int) v;
	if (f->cls >= 0 && pool_value(j, f->cls, key, &r))
	{
		const JClass *c = &j->classes[f->cls];

		for (uint32_t i = 0; i < c->nfields && !r.bad; i++)
		{
			if (!c->fields[i].cp && !c->fields[i].array && c->fields[i].cls >= 0 &&
				j->classes[c->fields[i].cls].prim == P_STRING)
			{
				name = rd_string(j, &r, true, true);
				break;
			}
			skip_field(j, &r, &c->fields[i], 0);
		}
	}
	s = !name ? 0 : strcmp(name, "STATE_RUNNABLE") == 0 ? 1 : strcmp(name, "STATE_SLEEPING") == 0 ? 2 : 3;
	map_put(j, &j->thread_states, key, (uint64_t) s, false);
	return s;
}

/* builders */

static ProfileBuilder *
builder(Jfr *j, Kind k)
{
	const KindInfo *ki = &kinds[k];

	if (j->pb[k])
		return j->pb[k];
	j->pb[k] = pb_create_in(&j->conv.budget);
	if (!j->pb[k])
	{
		push_fail(&j->conv, "out of memory");
		return NULL;
	}
	for (int i = 0; i < 2 && ki->type[i]; i++)
		pb_sample_type(j->pb[k], ki->type[i], ki->unit[i]);
	pb_period(j->pb[k], ki->period_type, ki->period_unit,
			  (k == K_CPU || k == K_WALL || k == K_NATIVE) ? j->period[k] : 0);
	if (pb_error(j->pb[k]))
	{
		push_fail(&j->conv, "%s", pb_error(j->pb[k]));
		return NULL;
	}
	return j->pb[k];
}

static void
add_sample(Jfr *j, Kind k, uint64_t stack_key, uint64_t thread_key, int32_t thread_cls, int64_t v0, int64_t v1)
{
	ProfileBuilder *b;
	int64_t		si;
	const Stack *st;
	size_t		n = 0;
	int64_t		values[2] = {v0, v1};
	PbLabel		label;
	const char *tname = NULL;

	si = stack_index(j, stack_key);
	if (si < 0)
	{
		if (!j->conv.failed)
			j->skipped_no_stack++;	/* a sample without a stack trace: as Pyroscope, left out */
		return;
	}
	b = builder(j, k);
	if (!b)
		return;
	st = &j->stacks[si];
	if (!GROW(j, j->frame_loc[k], j->cap_frame_loc[k], j->nframes))
		return;
	for (uint32_t i = 0; i < st->n; i++)
	{
		uint32_t	fi = j->stack_frames[st->first + i];
		uint64_t	loc = j->frame_loc[k][fi];

		if (loc == 0)
		{
			loc = pb_frame(b, j->frames[fi].name, "", j->frames[fi].line, "");
			if (!loc)
			{
				push_fail(&j->conv, "%s", pb_error(b));
				return;
			}
			j->frame_loc[k][fi] = loc;
		}
		j->locs[n++] = loc;
	}
	if (st->truncated)
	{
		if (!j->truncated_loc[k])
		{
			j->truncated_loc[k] = pb_frame(b, "[truncated]", "", 0, "");
			if (!j->truncated_loc[k])
			{
				push_fail(&j->conv, "%s", pb_error(b));
				return;
			}
		}
		j->locs[n++] = j->truncated_loc[k];
	}
	if (j->thread_labels && thread_cls >= 0)
		tname = thread_name(j, thread_key, thread_cls);
	label.key = "thread_name";
	label.str = tname;
	label.num = 0;
	label.num_unit = NULL;
	if (!pb_sample(b, j->locs, n, values, &label, tname ? 1 : 0))
		push_fail(&j->conv, "%s", pb_error(b));
}

/* ticks to nanoseconds */
static int64_t
ticks_ns(Jfr *j, uint64_t ticks)
{
	unsigned __int128 ns = (unsigned __int128) ticks * 1000000000u / (uint64_t) j->ticks_per_second;

	return ns > INT64_MAX ? INT64_MAX : (int64_t) ns;
}

/* "20 ms", "10ms", "1000000" (nanoseconds when no unit): nanoseconds, or 0 */
static int64_t
parse_period(const char *s)
{
	char	   *end;
	double		v;
	static const struct
	{
		const char *unit;
		double		ns;
	}			units[] = {
		{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},
	};

	if (!s)
		return 0;
	v = strtod(s, &end);
	if (end == s || v <= 0)
		return 0;
	while (*end == ' ')
		end++;
	if (!*end)
		return v < 9.2e18 ? (int64_t) v : 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0)
			return v * units[i].ns < 9.2e18 ? (int64_t) (v * units[i].ns) : 0;
	return 0;
}

/* the last value of setting name for an event type */
static const char *
setting(Jfr *j, EventId e, const char *name)
{
	const char *v = NULL;

	if (j->event_cls[e] < 0)
		return NULL;
	for (uint32_t i = 0; i < j->nsettings; i++)
		if (j->settings[i].event_type == j->classes[j->event_cls[e]].id &&
			strcmp(j->settings[i].name, name) == 0)
			v = j->settings[i].value;
	return v;
}

static void
chunk_periods(Jfr *j)
{
	int64_t		p;
	bool		async_profiler = false;

	j->wall_mode = false;
	for (uint32_t i = 0; i < j->nsettings; i++)
		if (strcmp(j->settings[i].name, "event") == 0)
		{
			async_profiler = true;
			j->wall_mode = strcmp(j->settings[i].value, "wall") == 0;
		}
	/* the JDK: "period" of each sampling event; async-profiler: "interval" (and "wall") in nanoseconds */
	p = parse_period(setting(j, E_EXECUTION_SAMPLE, async_profiler ? "interval" : "period"));
	j->period[K_CPU] = p > 0 ? p : DEFAULT_PERIOD_NS;
	p = parse_period(setting(j, E_EXECUTION_SAMPLE, "wall"));
	j->period[K_WALL] = p > 0 ? p : j->wall_mode ? j->period[K_CPU] : DEFAULT_PERIOD_NS;
	p = parse_period(setting(j, E_NATIVE_METHOD_SAMPLE, "period"));
	j->period[K_NATIVE] = p > 0 ? p : DEFAULT_PERIOD_NS;
}

typedef struct EventFields
{
	uint64_t	v[R_COUNT];
	const JField *state_field;
	const char *setting_name;
	const char *setting_value;
} EventFields;

static Role
role_of(EventId e, const JField *f)
{
	static const struct
	{
		const char *name;
		Role		role;
	}			roles[] = {
		{"stackTrace", R_STACK}, {"sampledThread", R_THREAD}, {"eventThread", R_THREAD},
		{"state", R_STATE}, {"duration", R_DURATION}, {"weight", R_WEIGHT}, {"tlabSize", R_TLAB_SIZE},
		{"allocationSize", R_ALLOC_SIZE}, {"size", R_SIZE}, {"samples", R_SAMPLES},
	};

	if (e == E_ACTIVE_SETTING)
	{
		if (strcmp(f->name, "id") == 0)
			return R_SETTING_ID;
		if (strcmp(f->name, "name") == 0)
			return R_SETTING_NAME;
		if (strcmp(f->name, "value") == 0)
			return R_SETTING_VALUE;
		return R_NONE;
	}
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		if (strcmp(f->name, roles[i].name) == 0)
			return roles[i].role;
	return R_NONE;
}

/* the fields of event e at r that we use */
static bool
read_event(Jfr *j, Rd *r, EventId e, EventFields *ev)
{
	const JClass *c = &j->classes[j->event_cls[e]];

	memset(ev, 0, sizeof(*ev));
	for (uint32_t i = 0; i < c->nfields && !r->bad && !j->conv.failed; i++)
	{
		const JField *f = &c->fields[i];
		Role		role = role_of(e, f);

		switch (role)
		{
			case R_NONE:
				skip_field(j, r, f, 0);
				break;
			case R_STACK:
			case R_THREAD:
			case R_STATE:
				if (f->cp && !f->array)
					ev->v[role] = rd_var(r);
				else
					skip_field(j, r, f, 0);
				if (role == R_STATE)
					ev->state_field = f;
				break;
			case R_SETTING_NAME:
				ev->setting_name = field_text(j, r, f);
				break;
			case R_SETTING_VALUE:
				ev->setting_value = field_text(j, r, f);
				break;
			default:
				ev->v[role] = field_int(j, r, f);
				break;
		}
	}
	if (r->bad && !j->conv.failed)
		push_fail(&j->conv, "an event of %s is truncated or malformed", event_names[e]);
	return !j->conv.failed;
}

static void
handle_event(Jfr *j, EventId e, EventFields *ev, int32_t thread_cls)
{
	uint64_t	stack = ev->v[R_STACK],
				thread = ev->v[R_THREAD];
	int			state;
	int64_t		n;

	switch (e)
	{
		case E_EXECUTION_SAMPLE:
			state = ev->state_field ? thread_state(j, ev->v[R_STATE], ev->state_field) : 0;
			/* async-profiler's wall mode: a wall sample, and CPU when not sleeping (as Pyroscope) */
			if (!j->wall_mode || state != 2)
				add_sample(j, K_CPU, stack, thread, thread_cls, j->period[K_CPU], 0);
			if (j->wall_mode)
				add_sample(j, K_WALL, stack, thread, thread_cls, j->period[K_WALL], 0);
			break;
		case E_WALL_CLOCK_SAMPLE:
			n = ev->v[R_SAMPLES] ? (int64_t) ev->v[R_SAMPLES] : 1;
			if (n > INT64_MAX / j->period[K_WALL])
				n = INT64_MAX / j->period[K_WALL];
			state = ev->state_field ? thread_state(j, ev->v[R_STATE], ev->state_field) : 0;
			if (j->wall_mode && state == 1)
				add_sample(j, K_CPU, stack, thread, thread_cls, n * j->period[K_WALL], 0);
			add_sample(j, K_WALL, stack, thread, thread_cls, n * j->period[K_WALL], 0);
			break;
		case E_NATIVE_METHOD_SAMPLE:
			add_sample(j, K_NATIVE, stack, thread, thread_cls, j->period[K_NATIVE], 0);
			break;
		case E_ALLOC_IN_NEW_TLAB:
			add_sample(j, K_ALLOC_TLAB, stack, thread, thread_cls, 1, (int64_t) (ev->v[R_TLAB_SIZE] & INT64_MAX));
			break;
		case E_ALLOC_OUTSIDE_TLAB:
			add_sample(j, K_ALLOC_OUTSIDE, stack, thread, thread_cls, 1, (int64_t) (ev->v[R_ALLOC_SIZE] & INT64_MAX));
			break;
		case E_ALLOC_SAMPLE:
			add_sample(j, K_ALLOC_SAMPLE, stack, thread, thread_cls, 1, (int64_t) (ev->v[R_WEIGHT] & INT64_MAX));
			break;
		case E_LIVE_OBJECT:
			add_sample(j, K_LIVE, stack, thread, thread_cls, 1, 0);
			break;
		case E_MALLOC:
			add_sample(j, K_MALLOC, stack, thread, thread_cls, 1, (int64_t) (ev->v[R_SIZE] & INT64_MAX));
			break;
		case E_MONITOR_ENTER:
			add_sample(j, K_LOCK, stack, thread, thread_cls, 1, ticks_ns(j, ev->v[R_DURATION]));
			break;
		case E_THREAD_PARK:
			add_sample(j, K_PARK, stack, thread, thread_cls, 1, ticks_ns(j, ev->v[R_DURATION]));
			break;
		case E_ACTIVE_SETTING:
		case E_COUNT:
			break;
	}
}

/*
 * The chunk's events, in two passes: the settings first (the sampling
 * periods), then the samples.
 */
static bool
read_events(Jfr *j)
{
	int32_t		thread_cls = class_by_name(j, "java.lang.Thread");

	for (int pass = 0; pass < 2 && !j->conv.failed; pass++)
	{
		size_t		pos = CHUNK_HEADER_SIZE;

		if (pass == 1)
			chunk_periods(j);
		while (pos < j->chunk_size && !j->conv.failed)
		{
			Rd			r = {j->chunk + pos, j->chunk + j->chunk_size, false};
			uint64_t	size = rd_var(&r),
						type;
			EventId		e;

			if (r.bad || size == 0 || size > j->chunk_size - pos)
			{
				push_fail(&j->conv, "the event at byte %zu of the chunk has a bad size (%llu)", pos, (unsigned long long) size);
				return false;
			}
			r.end = j->chunk + pos + size;
			type = rd_var(&r);
			pos += size;
			if (r.bad)
			{
				push_fail(&j->conv, "the event at byte %zu of the chunk is truncated", pos - size);
				return false;
			}
			for (e = 0; e < E_COUNT; e++)
				if (j->event_cls[e] >= 0 && j->classes[j->event_cls[e]].id == type)
					break;
			if (e == E_COUNT || (pass == 0) != (e == E_ACTIVE_SETTING))
				continue;
			{
				EventFields ev;

				if (!read_event(j, &r, e, &ev))
					return false;
				if (e == E_ACTIVE_SETTING)
				{
					if (ev.setting_name && ev.setting_value)
					{
						if (!GROW(j, j->settings, j->cap_settings, j->nsettings + 1))
							return false;
						j->settings[j->nsettings].event_type = ev.v[R_SETTING_ID];
						j->settings[j->nsettings].name = ev.setting_name;
						j->settings[j->nsettings].value = ev.setting_value;
						j->nsettings++;
					}
				}
				else
					handle_event(j, e, &ev, thread_cls);
			}
		}
	}
	return !j->conv.failed;
}

/* what was derived from the constant pools (names, stacks), and the settings: at each chunk's start */
static void
derived_free(Jfr *j)
{
	map_free(j, &j->method_idx);
	map_free(j, &j->frame_idx);
	map_free(j, &j->stack_idx);
	map_free(j, &j->thread_names);
	map_free(j, &j->thread_states);
	push_free(&j->conv, j->method_names);
	j->method_names = NULL;
	j->nmethods = j->cap_methods = 0;
	push_free(&j->conv, j->frames);
	j->frames = NULL;
	j->nframes = j->cap_frames = 0;
	push_free(&j->conv, j->stacks);
	j->stacks = NULL;
	j->nstacks = j->cap_stacks = 0;
	push_free(&j->conv, j->stack_frames);
	j->stack_frames = NULL;
	j->nstack_frames = j->cap_stack_frames = 0;
	push_free(&j->conv, j->settings);
	j->settings = NULL;
	j->nsettings = j->cap_settings = 0;
	for (int k = 0; k < K_COUNT; k++)
		if (j->frame_loc[k])
			memset(j->frame_loc[k], 0, (size_t) j->cap_frame_loc[k] * sizeof(uint64_t));
	push_arena_free(&j->conv, &j->chunk_arena);
}

/* the types and their constant pools: when a chunk's metadata differs from the chunk before's */
static void
types_free(Jfr *j)
{
	j->metadata = NULL;
	j->metadata_size = 0;
	for (uint32_t i = 0; i < j->nclasses; i++)
		if (j->classes[i].pool)
			map_free(j, j->classes[i].pool);
	push_free(&j->conv, j->classes);
	j->classes = NULL;
	j->nclasses = j->cap_classes = 0;
	map_free(j, &j->class_ids);
	push_arena_free(&j->conv, &j->types_arena);
}

static bool
read_chunk(Jfr *j)
{
	const uint8_t *h = j->chunk;
	uint16_t	major = (uint16_t) (h[4] << 8 | h[5]);
	uint64_t	size = be64(h + 8),
				cp_offset = be64(h + 16),
				meta_offset = be64(h + 24);
	int64_t		start = (int64_t) be64(h + 32),
				duration = (int64_t) be64(h + 40);

	j->ticks_per_second = (int64_t) be64(h + 56);
	if (major != 1 && major != 2)
	{
		push_fail(&j->conv, "version %u.%u; versions 1 and 2 are read", major, (unsigned) (h[6] << 8 | h[7]));
		return false;
	}
	if (size < CHUNK_HEADER_SIZE || size > j->len - j->chunk_offset)
	{
		push_fail(&j->conv, "the chunk's size (%llu bytes) is past the end of the recording (%zu bytes left): a truncated recording",
			  (unsigned long long) size, j->len - j->chunk_offset);
		return false;
	}
	if (j->ticks_per_second <= 0)
	{
		push_fail(&j->conv, "the chunk's ticks per second (%lld) is not positive", (long long) j->ticks_per_second);
		return false;
	}
	j->chunk_size = size;
	/*
	 * Names, stacks and settings are each chunk's own; an event may refer to
	 * the constant pools of its chunk and of every chunk before it of the
	 * same metadata (entries of the same key in the newer chunk win): a
	 * JVM's ids hold for its whole run, and an event blocked over a chunk's
	 * rotation may refer to a stack trace written two chunks back.
	 */
	derived_free(j);
	if (!read_metadata(j, meta_offset))
		return false;
	for (int e = 0; e < E_COUNT; e++)
		j->event_cls[e] = class_by_name(j, event_names[e]);
	j->string_cls = class_by_name(j, "java.lang.String");
	j->stack_cls = class_by_name(j, "jdk.types.StackTrace");
	j->arena = &j->types_arena;
	if (!read_checkpoints(j, cp_offset))
		return false;
	j->arena = &j->chunk_arena;
	if (start > 0 && (j->start_nanos == 0 || start < j->start_nanos))
		j->start_nanos = start;
	if (start > 0 && duration > 0 && start <= INT64_MAX - duration && start + duration > j->end_nanos)
		j->end_nanos = start + duration;
	return read_events(j);
}

static void
jfr_cleanup(Jfr *j)
{
	derived_free(j);
	types_free(j);
	for (int k = 0; k < K_COUNT; k++)
	{
		pb_destroy(j->pb[k]);
		j->pb[k] = NULL;
		push_free(&j->conv, j->frame_loc[k]);
		j->frame_loc[k] = NULL;
	}
	push_free(&j->conv, j->locs);
	j->locs = NULL;
}

bool
jfr_convert(const uint8_t *data, size_t len, const PushLimits *limits, PushedProfiles *out,
			char *err, size_t errlen)
{
	Jfr		   *j;
	char		dummy[1];
	bool		ok;

	if (!err || errlen == 0)
	{
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!out || !limits)
	{
		snprintf(err, errlen, "JFR: no output or limits given");
		return false;
	}
	memset(out, 0, sizeof(*out));
	if (!data || len < CHUNK_HEADER_SIZE || memcmp(data, "FLR\0", 4) != 0)
	{
		snprintf(err, errlen, "not a JFR recording: it does not start with a chunk header (\"FLR\\0\")");
		return false;
	}
	j = calloc(1, sizeof(Jfr));
	if (!j)
	{
		snprintf(err, errlen, "JFR: out of memory");
		return false;
	}
	push_conv_init(&j->conv, limits->max_bytes, err, errlen, "JFR");
	j->thread_labels = limits->thread_labels;
	j->data = data;
	j->len = len;
	j->locs = push_alloc(&j->conv, (MAX_STACK_FRAMES + 1) * sizeof(uint64_t));

	while (!j->conv.failed && j->chunk_offset < len)
	{
		j->chunk = data + j->chunk_offset;
		j->chunk_no++;
		snprintf(j->conv.where, sizeof(j->conv.where), "JFR chunk %d (at byte %zu)", j->chunk_no, j->chunk_offset);
		if (len - j->chunk_offset < CHUNK_HEADER_SIZE || memcmp(j->chunk, "FLR\0", 4) != 0)
		{
			push_fail(&j->conv, "no chunk header where a chunk should start: a truncated or damaged recording");
			break;
		}
		if (!read_chunk(j))
			break;
		j->chunk_offset += j->chunk_size;
	}
	j->chunk = NULL;
	snprintf(j->conv.where, sizeof(j->conv.where), "JFR");

	for (int k = 0; k < K_COUNT && !j->conv.failed; k++)
	{
		uint8_t    *pprof;
		size_t		pprof_len;

		if (!j->pb[k] || pb_sample_count(j->pb[k]) == 0)
			continue;
		pb_time(j->pb[k], j->start_nanos, j->end_nanos > j->start_nanos ? j->end_nanos - j->start_nanos : 0);
		if (!pb_encode(j->pb[k], &pprof, &pprof_len))
		{
			push_fail(&j->conv, "%s", pb_error(j->pb[k]));
			break;
		}
		if (!push_profiles_add(out, kinds[k].name, NULL, 0, pprof, pprof_len))
			push_fail(&j->conv, "out of memory");
	}
	ok = !j->conv.failed;
	jfr_cleanup(j);
	free(j);
	if (!ok)
		push_profiles_free(out);
	return ok;
}
