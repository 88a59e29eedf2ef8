/* pyroscope_name.c: Pyroscope's application names and times (pyroscope_name.h) */
#include "pyroscope_name.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_MAX 1024

static bool
service_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '.' || c == '-' || c == '/';
}

static bool
tag_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		c == '_' || c == '.';
}

/* copies s[0..len) without the blanks around it into out */
static bool
trimmed(const char *s, size_t len, char *out, size_t outlen)
{
	while (len && isspace((unsigned char) s[0]))
		s++, len--;
	while (len && isspace((unsigned char) s[len - 1]))
		len--;
	if (len >= outlen)
		return false;
	memcpy(out, s, len);
	out[len] = 0;
	return true;
}

bool
pyroscope_parse_name(const char *text, char *app, size_t applen, LabelSet *tags,
					 char *err, size_t errlen)
{
	const char *brace;
	const char *p;
	char		key[TAG_MAX];
	char		value[TAG_MAX];

	if (!text || !*text)
	{
		snprintf(err, errlen, "the name parameter is missing (an application name such as myapp.cpu{env=prod})");
		return false;
	}
	brace = strchr(text, '{');
	if (!trimmed(text, brace ? (size_t) (brace - text) : strlen(text), app, applen))
	{
		snprintf(err, errlen, "the application name is longer than %zu bytes", applen - 1);
		return false;
	}
	if (!*app)
	{
		snprintf(err, errlen, "the application name is empty");
		return false;
	}
	for (p = app; *p; p++)
		if (!service_name_char(*p))
		{
			snprintf(err, errlen, "the application name may hold only letters, digits and _ . - /, "
					 "not the byte 0x%02x", (unsigned char) *p);
			return false;
		}
	if (!brace)
		return true;
	p = brace + 1;
	for (;;)
	{
		const char *start;
		size_t		n = 0;

		while (isspace((unsigned char) *p))
			p++;
		if (*p == '}')
			break;
		start = p;
		while (*p && *p != '=' && *p != '}' && *p != ',')
			p++;
		if (*p != '=')
		{
			snprintf(err, errlen, "a tag of the name has no '=' and value (the form is name{key=value,...})");
			return false;
		}
		if (!trimmed(start, (size_t) (p - start), key, sizeof(key)) || !*key)
		{
			snprintf(err, errlen, "a tag of the name has an empty or too long key");
			return false;
		}
		for (const char *k = key; *k; k++)
			if (!tag_name_char(*k))
			{
				snprintf(err, errlen, "tag name \"%.64s\" may hold only letters, digits, _ and .", key);
				return false;
			}
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '"')
		{
			p++;
			while (*p && *p != '"')
			{
				char		c = *p++;

				if (c == '\\')
				{
					c = *p++;
					if (c == 'n')
						c = '\n';
					else if (c != '"' && c != '\\')
					{
						snprintf(err, errlen, "tag \"%.64s\" has an unknown escape in its quoted value", key);
						return false;
					}
				}
				if (n + 1 >= sizeof(value))
				{
					snprintf(err, errlen, "the value of tag \"%.64s\" is too long", key);
					return false;
				}
				value[n++] = c;
			}
			if (*p != '"')
			{
				snprintf(err, errlen, "the quoted value of tag \"%.64s\" has no closing quote", key);
				return false;
			}
			value[n] = 0;
			p++;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p != ',' && *p != '}')
			{
				snprintf(err, errlen, "tag \"%.64s\": text after its quoted value", key);
				return false;
			}
		}
		else
		{
			start = p;
			while (*p && *p != ',' && *p != '}')
				p++;
			if (!trimmed(start, (size_t) (p - start), value, sizeof(value)))
			{
				snprintf(err, errlen, "the value of tag \"%.64s\" is too long", key);
				return false;
			}
		}
		if (!*p)
		{
			snprintf(err, errlen, "the tags of the name have no closing '}'");
			return false;
		}
		if (strncmp(key, "__", 2) != 0 &&
			!labelset_set(tags, key, value, true, err, errlen))
			return false;
		if (*p == '}')
			break;
		p++;					/* ',' */
	}
	p++;
	while (isspace((unsigned char) *p))
		p++;
	if (*p)
	{
		snprintf(err, errlen, "text after the closing '}' of the name's tags");
		return false;
	}
	return true;
}

/* seconds in one unit of an offset, as attime's getUnitMultiplier */
static int64_t
unit_seconds(const char *u)
{
	if (u[0] == 's')
		return 1;
	if (strncmp(u, "mon", 3) == 0 || u[0] == 'M')
		return 3600 * 24 * 30;
	if (u[0] == 'm')
		return 60;
	if (u[0] == 'h')
		return 3600;
	if (u[0] == 'd')
		return 3600 * 24;
	if (u[0] == 'w')
		return 3600 * 24 * 7;
	if (u[0] == 'y')
		return 3600 * 24 * 365;
	return -1;
}

bool
pyroscope_parse_time(const char *text, int64_t now_ns, int64_t *out_ns)
{
	char		s[64];
	size_t		n = 0;
	const char *p;

	if (!text)
		return false;
	/* blanks, '_' and ',' are ignored, as attime does */
	for (p = text; *p; p++)
	{
		if (*p == ' ' || *p == '\t' || *p == '_' || *p == ',')
			continue;
		if (n + 1 >= sizeof(s))
			return false;
		s[n++] = *p;
	}
	s[n] = 0;
	if (n == 0)
		return false;
	if (strspn(s, "0123456789") == n)
	{
		unsigned long long v;
		struct tm	tm;

		if (n > 19)
			return false;
		v = strtoull(s, NULL, 10);
		if (n == 8)
		{
			memset(&tm, 0, sizeof(tm));
			tm.tm_year = (int) (v / 10000) - 1900;
			tm.tm_mon = (int) (v / 100 % 100) - 1;
			tm.tm_mday = (int) (v % 100);
			if (tm.tm_year > 0 && tm.tm_mon >= 0 && tm.tm_mon < 12 && tm.tm_mday >= 1 && tm.tm_mday <= 31)
			{
				*out_ns = (int64_t) timegm(&tm) * 1000000000;
				return true;
			}
		}
		if (v > INT64_MAX)
			return false;
		switch (n)
		{
			case 13:
				*out_ns = (int64_t) v * 1000000;
				return true;
			case 16:
				*out_ns = (int64_t) v * 1000;
				return true;
			case 19:
				*out_ns = (int64_t) v;
				return true;
			default:
				if (v > INT64_MAX / 1000000000)
					return false;
				*out_ns = (int64_t) v * 1000000000;
				return true;
		}
	}
	/* a reference ("now"; attime reads no other) and an offset */
	p = s + strcspn(s, "+-");
	if (strncmp(s, "now", (size_t) (p - s)) != 0 || p - s != 3)
		return false;
	{
		int64_t		sign = 1;
		int64_t		total = 0;

		if (*p == '-' || *p == '+')
			sign = *p++ == '-' ? -1 : 1;
		while (*p)
		{
			int64_t		num = 0;
			int64_t		mult;
			char		unit[8];
			size_t		u = 0;

			if (*p < '0' || *p > '9')
				return false;
			while (*p >= '0' && *p <= '9')
			{
				if (num > 1000000000)
					return false;
				num = num * 10 + (*p++ - '0');
			}
			while (*p && (*p < '0' || *p > '9'))
			{
				if (u + 1 >= sizeof(unit))
					return false;
				unit[u++] = *p++;
			}
			unit[u] = 0;
			if (u == 0)
				return false;
			mult = unit_seconds(unit);
			if (mult < 0)
				return false;
			total += num * mult;
			if (total > (int64_t) 100 * 365 * 24 * 3600)
				return false;
		}
		*out_ns = now_ns + sign * total * 1000000000;
		return true;
	}
}
