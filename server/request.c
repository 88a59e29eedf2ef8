/* request.c: requests, batches and outcomes (request.h) */
#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool
media_type_is(const char *content_type, const char *type)
{
	size_t		n = strlen(type);

	return content_type && strncasecmp(content_type, type, n) == 0 &&
		(content_type[n] == 0 || content_type[n] == ';' || content_type[n] == ' ');
}

const char *
request_arg(const RequestInfo *r, const char *key)
{
	for (int i = 0; i < r->nargs; i++)
		if (strcmp(r->args[i].key, key) == 0)
			return r->args[i].value;
	return NULL;
}

void
outcome_fail(Outcome *o, int status, const char *reason, const char *fmt,...)
{
	va_list		ap;

	o->status = status;
	o->reason = reason;
	va_start(ap, fmt);
	vsnprintf(o->message, sizeof(o->message), fmt, ap);
	va_end(ap);
}

bool
request_labels(const RequestInfo *r, LabelSet *ls, Outcome *o)
{
	char		err[256];

	if (r->tenant && !labelset_set(ls, TENANT_LABEL, r->tenant, true, err, sizeof(err)))
	{
		outcome_fail(o, 400, "bad_tenant", "X-Scope-OrgID: %s", err);
		return false;
	}
	return true;
}

bool
batch_add(StoreBatch *b, const char *name, const LabelSet *labels,
		  uint8_t *data, size_t len, Outcome *o)
{
	StoreItem  *item;

	if (b->n == b->cap)
	{
		size_t		cap = b->cap ? b->cap * 2 : 4;
		StoreItem  *grown = realloc(b->items, cap * sizeof(StoreItem));

		if (!grown)
		{
			free(data);
			outcome_fail(o, 503, "out_of_memory", "out of memory");
			o->retry_after = 5;
			return false;
		}
		b->items = grown;
		b->cap = cap;
	}
	item = &b->items[b->n];
	item->name = strdup(name);
	item->labels_json = labelset_json(labels);
	item->data = data;
	item->len = len;
	if (!item->name || !item->labels_json)
	{
		free(item->name);
		free(item->labels_json);
		free(data);
		outcome_fail(o, 503, "out_of_memory", "out of memory");
		o->retry_after = 5;
		return false;
	}
	b->n++;
	return true;
}

void
batch_free(StoreBatch *b)
{
	for (size_t i = 0; i < b->n; i++)
	{
		free(b->items[i].name);
		free(b->items[i].labels_json);
		free(b->items[i].data);
	}
	free(b->items);
	memset(b, 0, sizeof(*b));
}
