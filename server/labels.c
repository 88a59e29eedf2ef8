/* labels.c: label sets of pushed profiles (labels.h) */
#include "labels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ids/ids.h"

void
labelset_init(LabelSet *ls)
{
	ls->n = 0;
}

void
labelset_free(LabelSet *ls)
{
	for (size_t i = 0; i < ls->n; i++)
	{
		free(ls->items[i].name);
		free(ls->items[i].value);
	}
	ls->n = 0;
}

bool
labelset_copy(LabelSet *dst, const LabelSet *src)
{
	labelset_init(dst);
	for (size_t i = 0; i < src->n; i++)
	{
		Label	   *l = &dst->items[dst->n];

		l->name = strdup(src->items[i].name);
		l->value = strdup(src->items[i].value);
		dst->n++;
		if (!l->name || !l->value)
		{
			labelset_free(dst);
			return false;
		}
	}
	return true;
}

bool
utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t		i = 0;

	/* the extension's test: NUL, overlong forms and surrogates are not text */
	while (i < len)
	{
		int			n;

		if (p[i] > 0 && p[i] < 0x80)
		{
			i++;				/* most text: no call */
			continue;
		}
		n = parca_utf8_char_length(p + i, len - i);

		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

void
label_name_sanitize(const char *name, char *out, size_t outlen)
{
	size_t		n = 0;

	if (outlen == 0)
		return;
	if (name[0] >= '0' && name[0] <= '9' && n + 1 < outlen)
		out[n++] = '_';
	for (const char *p = name; *p && n + 1 < outlen; p++)
	{
		char		c = *p;

		out[n++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					(c >= '0' && c <= '9') || c == '_') ? c : '_';
	}
	out[n] = 0;
}

const char *
labelset_get(const LabelSet *ls, const char *name)
{
	for (size_t i = 0; i < ls->n; i++)
		if (strcmp(ls->items[i].name, name) == 0)
			return ls->items[i].value;
	return NULL;
}

bool
labelset_set(LabelSet *ls, const char *name, const char *value, bool overwrite,
			 char *err, size_t errlen)
{
	char		clean[LABEL_NAME_MAX + 2];
	size_t		nlen = name ? strlen(name) : 0;
	size_t		vlen = value ? strlen(value) : 0;
	size_t		i;

	if (nlen == 0)
	{
		snprintf(err, errlen, "a label has an empty name");
		return false;
	}
	if (nlen > LABEL_NAME_MAX)
	{
		snprintf(err, errlen, "a label name is longer than %d bytes", LABEL_NAME_MAX);
		return false;
	}
	if (vlen > LABEL_VALUE_MAX)
	{
		snprintf(err, errlen, "the value of label \"%.64s\" is longer than %d bytes",
				 utf8_valid(name, nlen) ? name : "?", LABEL_VALUE_MAX);
		return false;
	}
	if (!utf8_valid(name, nlen))
	{
		snprintf(err, errlen, "a label name is not valid UTF-8");
		return false;
	}
	if (!utf8_valid(value, vlen))
	{
		snprintf(err, errlen, "the value of label \"%.64s\" is not valid UTF-8", name);
		return false;
	}
	label_name_sanitize(name, clean, sizeof(clean));
	for (i = 0; i < ls->n; i++)
		if (strcmp(ls->items[i].name, clean) == 0)
			break;
	if (i < ls->n)
	{
		char	   *v;

		if (!overwrite)
			return true;
		if (vlen == 0)
		{
			free(ls->items[i].name);
			free(ls->items[i].value);
			ls->items[i] = ls->items[--ls->n];
			return true;
		}
		v = strdup(value);
		if (!v)
		{
			snprintf(err, errlen, "out of memory");
			return false;
		}
		free(ls->items[i].value);
		ls->items[i].value = v;
		return true;
	}
	if (vlen == 0)
		return true;
	if (ls->n == LABELS_MAX)
	{
		snprintf(err, errlen, "more than %d labels", LABELS_MAX);
		return false;
	}
	ls->items[ls->n].name = strdup(clean);
	ls->items[ls->n].value = strdup(value);
	if (!ls->items[ls->n].name || !ls->items[ls->n].value)
	{
		free(ls->items[ls->n].name);
		free(ls->items[ls->n].value);
		snprintf(err, errlen, "out of memory");
		return false;
	}
	ls->n++;
	return true;
}

char *
labelset_json(const LabelSet *ls)
{
	Buf			b;

	buf_init(&b, 0);
	buf_append(&b, "{", 1);
	for (size_t i = 0; i < ls->n; i++)
	{
		if (i)
			buf_append(&b, ",", 1);
		buf_json_string(&b, ls->items[i].name, strlen(ls->items[i].name));
		buf_append(&b, ":", 1);
		buf_json_string(&b, ls->items[i].value, strlen(ls->items[i].value));
	}
	buf_append(&b, "}", 1);
	if (b.failed)
	{
		buf_free(&b);
		return NULL;
	}
	return (char *) buf_release(&b, NULL);
}
