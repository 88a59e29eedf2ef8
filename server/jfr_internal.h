/*
 * jfr_internal.h: what the JFR converter's files share (jfr.c: chunks,
 * events, samples; jfr_metadata.c: the types; jfr_pools.c: the constant
 * pools; jfr_values.c: arrays, maps and strings within the budget): the
 * converter's state, and reading the recording's integers (inline, for the
 * loops over events and fields).
 */
#ifndef SERVER_JFR_INTERNAL_H
#define SERVER_JFR_INTERNAL_H

#include "jfr.h"

#include <stdbool.h>
#include <stdint.h>
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

#define GROW(j, arr, cap, need) jfr_grow((j), (void **) &(arr), &(cap), (need), sizeof(*(arr)))

/* reading */

static inline bool
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

static inline uint64_t
be64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- jfr_values.c: growing arrays, maps, strings ---- */

/* sets key to val (a key there keeps its value unless replace) */
extern bool jfr_map_put(Jfr *j, U64Map *m, uint64_t key, uint64_t val, bool replace);

extern void jfr_map_free(Jfr *j, U64Map *m);

/*
 * A string value at r: NULL for null, else UTF-8 in the chunk's arena (when
 * keep; else "" and only skipped), invalid text repaired to U+FFFD.  A
 * constant pool reference is followed when allow_ref (not from inside the
 * string pool itself, so that references cannot loop).
 */
extern const char *jfr_rd_string(Jfr *j, Rd *r, bool keep, bool allow_ref);

extern bool jfr_grow(Jfr *j, void **arr, uint32_t *cap, size_t need, size_t elem);

/* ---- jfr_metadata.c: the types a chunk describes ---- */

extern int32_t jfr_class_index(Jfr *j, uint64_t type_id);

extern int32_t jfr_class_by_name(Jfr *j, const char *name);

/*
 * A reader at the fields of the event at offset in the chunk, which must be
 * of type want (0 the metadata, 1 a checkpoint), past its size, type, start
 * time and duration.  False with the error set.
 */
extern bool jfr_special_event(Jfr *j, uint64_t offset, uint64_t want, const char *what, Rd *r);

/*
 * The chunk's types from its metadata event at offset: those of the chunk
 * before when the event is the same, byte for byte.
 */
extern bool jfr_read_metadata(Jfr *j, uint64_t offset);

/* the types and their constant pools: when a chunk's metadata differs from the chunk before's */
extern void jfr_types_free(Jfr *j);

/* ---- jfr_pools.c: the constant pools ---- */

extern bool jfr_read_checkpoints(Jfr *j, uint64_t offset);

extern const char *jfr_string_ref(Jfr *j, uint64_t key);

/*
 * The text of a field's value: a string, or a value (inline or from its
 * pool) whose first string field it is (symbols, thread states, frame types).
 */
extern const char *jfr_field_text(Jfr *j, Rd *r, const JField *f);

/* an integer field's value (0 for other types) */
extern uint64_t jfr_field_int(Jfr *j, Rd *r, const JField *f);

/* a stack trace key: its index in stacks, or -1 (none, or an error: see j->conv.failed) */
extern int64_t jfr_stack_index(Jfr *j, uint64_t key);

extern const char *jfr_thread_name(Jfr *j, uint64_t key, int32_t thread_cls);

/* 1 runnable, 2 sleeping, 3 other, 0 unknown */
extern int jfr_thread_state(Jfr *j, uint64_t key, const JField *f);

/* ---- jfr.c: values walked over by their type ---- */

/* an inline value of class c */
extern bool jfr_skip_value(Jfr *j, Rd *r, const JClass *c, int depth);

extern bool jfr_skip_field(Jfr *j, Rd *r, const JField *f, int depth);

#endif							/* SERVER_JFR_INTERNAL_H */
