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
 *
 * This file reads chunks and their events into samples; jfr_metadata.c
 * reads the types, jfr_pools.c the constant pools, jfr_values.c keeps the
 * arrays, maps and strings.
 */
#include "jfr_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_builder.h"

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

static const char *const event_names[E_COUNT] = {
	"jdk.ExecutionSample", "jdk.NativeMethodSample", "profiler.WallClockSample",
	"jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB", "jdk.ObjectAllocationSample",
	"profiler.LiveObject", "profiler.Malloc", "jdk.JavaMonitorEnter", "jdk.ThreadPark",
	"jdk.ActiveSetting",
};

/* values */


/* an inline value of class c */
bool
jfr_skip_value(Jfr *j, Rd *r, const JClass *c, int depth)
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
			jfr_rd_string(j, r, false, true);
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
				if (!jfr_skip_field(j, r, &c->fields[i], depth + 1))
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
	return jfr_skip_value(j, r, &j->classes[f->cls], depth);
}

bool
jfr_skip_field(Jfr *j, Rd *r, const JField *f, int depth)
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

	si = jfr_stack_index(j, stack_key);
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
		tname = jfr_thread_name(j, thread_key, thread_cls);
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
				jfr_skip_field(j, r, f, 0);
				break;
			case R_STACK:
			case R_THREAD:
			case R_STATE:
				if (f->cp && !f->array)
					ev->v[role] = rd_var(r);
				else
					jfr_skip_field(j, r, f, 0);
				if (role == R_STATE)
					ev->state_field = f;
				break;
			case R_SETTING_NAME:
				ev->setting_name = jfr_field_text(j, r, f);
				break;
			case R_SETTING_VALUE:
				ev->setting_value = jfr_field_text(j, r, f);
				break;
			default:
				ev->v[role] = jfr_field_int(j, r, f);
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
			state = ev->state_field ? jfr_thread_state(j, ev->v[R_STATE], ev->state_field) : 0;
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
			state = ev->state_field ? jfr_thread_state(j, ev->v[R_STATE], ev->state_field) : 0;
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
	int32_t		thread_cls = jfr_class_by_name(j, "java.lang.Thread");

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
	jfr_map_free(j, &j->method_idx);
	jfr_map_free(j, &j->frame_idx);
	jfr_map_free(j, &j->stack_idx);
	jfr_map_free(j, &j->thread_names);
	jfr_map_free(j, &j->thread_states);
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
	if (!jfr_read_metadata(j, meta_offset))
		return false;
	for (int e = 0; e < E_COUNT; e++)
		j->event_cls[e] = jfr_class_by_name(j, event_names[e]);
	j->string_cls = jfr_class_by_name(j, "java.lang.String");
	j->stack_cls = jfr_class_by_name(j, "jdk.types.StackTrace");
	j->arena = &j->types_arena;
	if (!jfr_read_checkpoints(j, cp_offset))
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
	jfr_types_free(j);
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
