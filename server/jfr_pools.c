/*
 * jfr_pools.c: a JFR chunk's constant pools (jfr_internal.h)
 *
 * The checkpoint events, followed backwards from the chunk header's last
 * one, give each pool's keys and where their values lie; values are read
 * when an event refers to them, along the path stack trace -> frame ->
 * method -> class -> symbol -> string only, and what they resolve to
 * (methods, frames, stacks, thread names and states) is kept.
 */
#include "jfr_internal.h"

#include <stdlib.h>
#include <string.h>

bool
jfr_read_checkpoints(Jfr *j, uint64_t offset)
{
	for (;;)
	{
		Rd			r;
		uint64_t	delta,
					npools;

		if (!jfr_special_event(j, offset, 1, "checkpoint", &r))
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
			int32_t		ci = jfr_class_index(j, type_id);
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

				if (r.bad || !jfr_map_put(j, c->pool, key, (uint64_t) (r.p - j->data), true))
					goto bad;
				if (!jfr_skip_value(j, &r, c, 0))
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

const char *
jfr_string_ref(Jfr *j, uint64_t key)
{
	Rd			r;
	const char *s;

	if (!pool_value(j, j->string_cls, key, &r))
		return NULL;
	s = jfr_rd_string(j, &r, true, false);
	return r.bad ? NULL : s;
}

/*
 * The text of a field's value: a string, or a value (inline or from its
 * pool) whose first string field it is (symbols, thread states, frame types).
 */
const char *
jfr_field_text(Jfr *j, Rd *r, const JField *f)
{
	const JClass *c;
	Rd			pr;
	Rd		   *vr = r;

	if (f->cls < 0 || f->array)
	{
		jfr_skip_field(j, r, f, 0);
		return NULL;
	}
	c = &j->classes[f->cls];
	if (f->cp)
	{
		uint64_t	key = rd_var(r);

		if (r->bad)
			return NULL;
		if (c->prim == P_STRING)
			return jfr_string_ref(j, key);
		if (!pool_value(j, f->cls, key, &pr))
			return NULL;
		vr = &pr;
	}
	if (c->prim == P_STRING)
		return jfr_rd_string(j, vr, true, true);
	if (c->prim != P_NONE)
	{
		jfr_skip_value(j, vr, c, 0);
		return NULL;
	}
	for (uint32_t i = 0; i < c->nfields && !vr->bad; i++)
	{
		const JField *sf = &c->fields[i];

		if (!sf->cp && !sf->array && sf->cls >= 0 && j->classes[sf->cls].prim == P_STRING)
			return jfr_rd_string(j, vr, true, true);
		if (!jfr_skip_field(j, vr, sf, 1))
			return NULL;
	}
	return NULL;
}

/* an integer field's value (0 for other types) */
uint64_t
jfr_field_int(Jfr *j, Rd *r, const JField *f)
{
	if (f->cls >= 0 && !f->cp && !f->array)
	{
		Prim		p = j->classes[f->cls].prim;

		if (p == P_CHAR || p == P_SHORT || p == P_INT || p == P_LONG)
			return rd_var(r);
		if (p == P_BOOLEAN || p == P_BYTE)
			return rd_u8(r);
	}
	jfr_skip_field(j, r, f, 0);
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
	mc = jfr_class_by_name(j, "jdk.types.Method");
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
							cls_name = jfr_field_text(j, &cr, &cc->fields[k]);
							break;
						}
						jfr_skip_field(j, &cr, &cc->fields[k], 0);
					}
				}
			}
			else if (strcmp(f->name, "name") == 0)
			{
				name = jfr_field_text(j, &r, f);
				break;
			}
			else
				jfr_skip_field(j, &r, f, 0);
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
		!jfr_map_put(j, &j->method_idx, key, j->nmethods, false))
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
		!jfr_map_put(j, &j->frame_idx, key, j->nframes, false))
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
			line = (int32_t) jfr_field_int(j, r, f);
		else
			jfr_skip_field(j, r, f, 0);
	}
	if (r->bad || j->conv.failed)
		return -1;
	if (!has_method)
		return -2;
	return frame_index(j, method, line);
}

/* a stack trace key: its index in stacks, or -1 (none, or an error: see j->conv.failed) */
int64_t
jfr_stack_index(Jfr *j, uint64_t key)
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
			st.truncated = jfr_field_int(j, &r, f) != 0;
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
			jfr_skip_field(j, &r, f, 0);
	}
	if (r.bad && !j->conv.failed)
		push_fail(&j->conv, "stack trace %llu is truncated or malformed", (unsigned long long) key);
	if (j->conv.failed)
		return -1;
	if (!GROW(j, j->stacks, j->cap_stacks, j->nstacks + 1) || !jfr_map_put(j, &j->stack_idx, key, j->nstacks, false))
		return -1;
	j->stacks[j->nstacks] = st;
	return j->nstacks++;
}

const char *
jfr_thread_name(Jfr *j, uint64_t key, int32_t thread_cls)
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
			os_name = jfr_field_text(j, &r, f);
		else if (strcmp(f->name, "javaName") == 0)
		{
			java_name = jfr_field_text(j, &r, f);
			break;
		}
		else
			jfr_skip_field(j, &r, f, 0);
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
	jfr_map_put(j, &j->thread_names, key, (uint64_t) (uintptr_t) java_name, false);
	return java_name;
}

/* 1 runnable, 2 sleeping, 3 other, 0 unknown */
int
jfr_thread_state(Jfr *j, uint64_t key, const JField *f)
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
				name = jfr_rd_string(j, &r, true, true);
				break;
			}
			jfr_skip_field(j, &r, &c->fields[i], 0);
		}
	}
	s = !name ? 0 : strcmp(name, "STATE_RUNNABLE") == 0 ? 1 : strcmp(name, "STATE_SLEEPING") == 0 ? 2 : 3;
	jfr_map_put(j, &j->thread_states, key, (uint64_t) s, false);
	return s;
}
