/* buf.c: growable byte buffers with a ceiling (buf.h) */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
buf_init(Buf *b, size_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit;
}

/* room for len more bytes and a NUL after them */
static bool
buf_reserve(Buf *b, size_t len)
{
	size_t		need;
	size_t		cap;
	uint8_t    *data;

	if (b->failed)
		return false;
	if (len > SIZE_MAX - b->len - 1 || (b->limit && b->len + len > b->limit))
	{
		b->failed = true;
		return false;
	}
	need = b->len + len + 1;
	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->limit && cap > b->limit + 1)
		cap = b->limit + 1 > need ? b->limit + 1 : need;
	data = realloc(b->data, cap);
	if (!data)
	{
		b->failed = true;
		return false;
	}
	b->data = data;
	b->cap = cap;
	return true;
}

bool
buf_append(Buf *b, const void *data, size_t len)
{
	if (!buf_reserve(b, len))
		return false;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
	return true;
}

bool
buf_puts(Buf *b, const char *s)
{
	return buf_append(b, s, s ? strlen(s) : 0);
}

bool
buf_printf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	char		small[256];
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
	{
		b->failed = true;
		return false;
	}
	if ((size_t) n < sizeof(small))
		return buf_append(b, small, (size_t) n);
	if (!buf_reserve(b, (size_t) n))
		return false;
	va_start(ap, fmt);
	vsnprintf((char *) b->data + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
	return true;
}

bool
buf_json_string(Buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t		i;

	if (!buf_append(b, "\"", 1))
		return false;
	for (i = 0; s && i < len; i++)
	{
		unsigned char c = (unsigned char) s[i];

		if (c == '"' || c == '\\')
		{
			char		esc[2] = {'\\', (char) c};

			buf_append(b, esc, 2);
		}
		else if (c < 0x20)
		{
			char		esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

			buf_append(b, esc, 6);
		}
		else
			buf_append(b, &s[i], 1);
	}
	return buf_append(b, "\"", 1);
}

uint8_t *
buf_release(Buf *b, size_t *len)
{
	uint8_t    *data = b->data;

	if (!data)
		data = calloc(1, 1);
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return data;
}

void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
