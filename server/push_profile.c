/* push_profile.c: the converters' list of profiles (push_profile.h) */
#include "push_profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
pushed_profile_free(PushedProfile *pp)
{
	for (size_t k = 0; k < pp->nlabels; k++)
	{
		free(pp->labels[k].name);
		free(pp->labels[k].value);
	}
	free(pp->labels);
	free(pp->name);
	free(pp->pprof);
}

void
push_conv_init(PushConv *c, size_t limit, char *err, size_t errlen, const char *where)
{
	memset(c, 0, sizeof(*c));
	alloc_budget_init(&c->budget, limit);
	c->limit = limit;
	c->err = err;
	c->errlen = errlen;
	c->err[0] = 0;
	snprintf(c->where, sizeof(c->where), "%s", where);
}

void
push_fail(PushConv *c, const char *fmt,...)
{
	va_list		ap;
	char		msg[256];

	if (c->failed)
		return;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: %s", c->where, msg);
}

void *
push_alloc(PushConv *c, size_t size)
{
	void	   *p;

	if (c->failed)
		return NULL;
	p = c->budget.allocator.alloc(c->budget.allocator.allocator_data, size ? size : 1);
	if (!p && c->budget.exceeded)
		push_fail(c, "the conversion needs more memory than the limit (%zu bytes)", c->limit);
	else if (!p)
		push_fail(c, "out of memory");
	return p;
}

void
push_free(PushConv *c, void *p)
{
	if (p)
		c->budget.allocator.free(c->budget.allocator.allocator_data, p);
}

void *
push_arena_alloc(PushConv *c, PushArena **arena, size_t size)
{
	PushArena  *a = *arena;
	void	   *p;

	if (size > SIZE_MAX / 2)
	{
		push_fail(c, "an allocation of %zu bytes", size);
		return NULL;
	}
	size = (size + 7) & ~(size_t) 7;
	if (!a || a->cap - a->used < size)
	{
		size_t		cap = size > 65536 ? size : 65536;

		a = push_alloc(c, sizeof(PushArena) + cap);
		if (!a)
			return NULL;
		a->next = *arena;
		a->used = 0;
		a->cap = cap;
		*arena = a;
	}
	p = a->data + a->used;
	a->used += size;
	memset(p, 0, size);
	return p;
}

void
push_arena_free(PushConv *c, PushArena **arena)
{
	while (*arena)
	{
		PushArena  *next = (*arena)->next;

		push_free(c, *arena);
		*arena = next;
	}
}

void
push_profiles_free(PushedProfiles *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		pushed_profile_free(&p->items[i]);
	free(p->items);
	p->items = NULL;
	p->n = 0;
}

bool
push_profiles_add(PushedProfiles *p, const char *name, const PushLabel *labels, size_t nlabels,
				  uint8_t *pprof, size_t pprof_len)
{
	PushedProfile pp = {0};
	PushedProfile *items;

	pp.pprof = pprof;
	pp.pprof_len = pprof_len;
	pp.name = strdup(name ? name : "");
	pp.labels = nlabels ? calloc(nlabels, sizeof(PushLabel)) : NULL;
	items = realloc(p->items, (p->n + 1) * sizeof(PushedProfile));
	if (items)
		p->items = items;
	if (!pp.name || (nlabels && !pp.labels) || !items)
		goto fail;
	for (size_t k = 0; k < nlabels; k++, pp.nlabels++)
	{
		pp.labels[k].name = strdup(labels[k].name);
		pp.labels[k].value = strdup(labels[k].value);
		if (!pp.labels[k].name || !pp.labels[k].value)
		{
			pp.nlabels++;
			goto fail;
		}
	}
	p->items[p->n++] = pp;
	return true;
fail:
	pushed_profile_free(&pp);
	return false;
}

/* a code point as UTF-8 at out (4 bytes room); invalid ones as U+FFFD */
size_t
push_utf8_put(char *out, uint32_t c)
{
	if (c == 0 || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		c = 0xFFFD;
	if (c < 0x80)
	{
		out[0] = (char) c;
		return 1;
	}
	if (c < 0x800)
	{
		out[0] = (char) (0xC0 | (c >> 6));
		out[1] = (char) (0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000)
	{
		out[0] = (char) (0xE0 | (c >> 12));
		out[1] = (char) (0x80 | ((c >> 6) & 0x3F));
		out[2] = (char) (0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char) (0xF0 | (c >> 18));
	out[1] = (char) (0x80 | ((c >> 12) & 0x3F));
	out[2] = (char) (0x80 | ((c >> 6) & 0x3F));
	out[3] = (char) (0x80 | (c & 0x3F));
	return 4;
}
