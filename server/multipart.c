/* multipart.c: multipart/form-data bodies (multipart.h) */
#include "multipart.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MAX_BOUNDARY 70			/* RFC 2046 */

bool
is_multipart(const char *content_type)
{
	return content_type && strncasecmp(content_type, "multipart/form-data", 19) == 0;
}

static const uint8_t *
find(const uint8_t *hay, size_t haylen, const char *needle, size_t nlen)
{
	if (nlen == 0 || haylen < nlen)
		return NULL;
	for (size_t i = 0; i + nlen <= haylen; i++)
	{
		const uint8_t *p = memchr(hay + i, needle[0], haylen - nlen + 1 - i);

		if (!p)
			return NULL;
		i = (size_t) (p - hay);
		if (memcmp(p, needle, nlen) == 0)
			return p;
	}
	return NULL;
}

/* the boundary parameter of a Content-Type, quoted or not */
static bool
boundary_of(const char *content_type, char *out, size_t outlen)
{
	const char *p = content_type;
	size_t		n = 0;

	while ((p = strchr(p, ';')) != NULL)
	{
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		p += 9;
		if (*p == '"')
		{
			p++;
			while (*p && *p != '"' && n + 1 < outlen)
				out[n++] = *p++;
			if (*p != '"')
				return false;
		}
		else
		{
			while (*p && *p != ';' && *p != ' ' && *p != '\t' && n + 1 < outlen)
				out[n++] = *p++;
			if (*p && *p != ';' && *p != ' ' && *p != '\t')
				return false;
		}
		out[n] = 0;
		return n > 0 && n <= MAX_BOUNDARY;
	}
	return false;
}

/* the name="..." of a part's Content-Disposition header */
static bool
part_name(const uint8_t *headers, size_t len, char *out, size_t outlen)
{
	const uint8_t *line = headers;
	const uint8_t *end = headers + len;

	while (line < end)
	{
		const uint8_t *eol = find(line, (size_t) (end - line), "\r\n", 2);
		size_t		llen = eol ? (size_t) (eol - line) : (size_t) (end - line);

		if (llen > 20 && strncasecmp((const char *) line, "content-disposition:", 20) == 0)
		{
			const uint8_t *p = line + 20;
			const uint8_t *lend = line + llen;

			while (p < lend)
			{
				/* name= at the start of a parameter (not filename=) */
				if ((size_t) (lend - p) > 5 && strncasecmp((const char *) p, "name=", 5) == 0 &&
					(p[-1] == ';' || p[-1] == ' ' || p[-1] == '\t'))
				{
					size_t		n = 0;
					bool		quoted;

					p += 5;
					quoted = p < lend && *p == '"';
					if (quoted)
						p++;
					while (p < lend && (quoted ? *p != '"' : (*p != ';' && *p != ' ')))
					{
						if (n + 1 >= outlen)
							return false;
						out[n++] = (char) *p++;
					}
					out[n] = 0;
					return n > 0;
				}
				p++;
			}
		}
		if (!eol)
			break;
		line = eol + 2;
	}
	return false;
}

bool
multipart_parse(const char *content_type, const uint8_t *body, size_t len,
				Form *form, char *err, size_t errlen)
{
	char		boundary[MAX_BOUNDARY + 2];
	char		delim[MAX_BOUNDARY + 6];
	size_t		dlen;
	const uint8_t *p;
	const uint8_t *end = body + len;

	memset(form, 0, sizeof(*form));
	if (!content_type || !boundary_of(content_type, boundary, sizeof(boundary)))
	{
		snprintf(err, errlen, "multipart/form-data without a valid boundary parameter");
		return false;
	}
	/* the first delimiter has no CRLF before it when it opens the body */
	dlen = (size_t) snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
	if (len >= dlen - 2 && memcmp(body, delim + 2, dlen - 2) == 0)
		p = body + dlen - 2;
	else
	{
		p = find(body, len, delim, dlen);
		if (!p)
		{
			snprintf(err, errlen, "multipart body without its boundary");
			return false;
		}
		p += dlen;
	}
	for (;;)
	{
		const uint8_t *hend;
		const uint8_t *next;
		FormPart   *part;

		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return true;		/* the closing delimiter */
		/* transport padding, then CRLF */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			break;
		p += 2;
		hend = find(p, (size_t) (end - p), "\r\n\r\n", 4);
		if (p + 2 <= end && p[0] == '\r' && p[1] == '\n')
			hend = p - 2;		/* a part without headers */
		if (!hend)
			break;
		next = find(hend + 4, (size_t) (end - hend - 4), delim, dlen);
		if (!next)
			break;
		if (form->nparts == MULTIPART_MAX_PARTS)
		{
			snprintf(err, errlen, "multipart body with more than %d parts", MULTIPART_MAX_PARTS);
			return false;
		}
		part = &form->parts[form->nparts];
		if (hend < p || !part_name(p, (size_t) (hend - p), part->name, sizeof(part->name)))
		{
			snprintf(err, errlen, "multipart part %d has no form-data name", form->nparts + 1);
			return false;
		}
		part->data = hend + 4;
		part->len = (size_t) (next - part->data);
		form->nparts++;
		p = next + dlen;
	}
	snprintf(err, errlen, "multipart body is truncated or malformed");
	return false;
}

const FormPart *
form_part(const Form *form, const char *name)
{
	for (int i = 0; i < form->nparts; i++)
		if (strcmp(form->parts[i].name, name) == 0)
			return &form->parts[i];
	return NULL;
}
