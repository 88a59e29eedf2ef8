/*
 * demangle.c
 *		C++ names through libstdc++'s demangler (the Itanium C++ ABI one);
 *		Rust's legacy mangling is Itanium-shaped, so it goes through the
 *		same demangler and is then cleaned up: the trailing "::h<16 hex>"
 *		hash goes and the $..$ escapes become the characters they stand
 *		for.  Rust's v0 mangling (_R...) is left as it is.
 */
#include "demangle.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++ (cxxabi.h declares it for C++ only). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* "_ZN...17h0123456789abcdefE": a Rust legacy symbol. */
static bool
is_rust_legacy(const char *name)
{
	size_t		len = strlen(name);

	if (len < 4 + 20 || strncmp(name, "_ZN", 3) != 0 || name[len - 1] != 'E')
		return false;
	if (strncmp(name + len - 20, "17h", 3) != 0)
		return false;
	for (size_t i = len - 17; i < len - 1; i++)
		if (!isxdigit((unsigned char) name[i]))
			return false;
	return true;
}

static const struct
{
	const char *escape;
	char		c;
}			rust_escapes[] =
{
	{"$SP$", '@'}, {"$BP$", '*'}, {"$RF$", '&'}, {"$LT$", '<'}, {"$GT$", '>'},
	{"$LP$", '('}, {"$RP$", ')'}, {"$C$", ','}, {"$u20$", ' '}, {"$u27$", '\''},
	{"$u5b$", '['}, {"$u5d$", ']'}, {"$u7b$", '{'}, {"$u7d$", '}'}, {"$u7e$", '~'},
};

/* Rewrite a demangled Rust legacy name in place. */
static void
rust_cleanup(char *s)
{
	char	   *hash = strstr(s, "::h");
	char	   *r = s;
	char	   *w = s;

	/* The hash is the last path component. */
	while (hash && strstr(hash + 1, "::h"))
		hash = strstr(hash + 1, "::h");
	if (hash && strlen(hash) == 3 + 16)
		*hash = '\0';
	while (*r)
	{
		bool		replaced = false;

		if (*r == '$')
		{
			for (size_t i = 0; i < sizeof(rust_escapes) / sizeof(rust_escapes[0]); i++)
			{
				size_t		n = strlen(rust_escapes[i].escape);

				if (strncmp(r, rust_escapes[i].escape, n) == 0)
				{
					*w++ = rust_escapes[i].c;
					r += n;
					replaced = true;
					break;
				}
			}
		}
		else if (r[0] == '.' && r[1] == '.')
		{
			*w++ = ':';
			*w++ = ':';
			r += 2;
			replaced = true;
		}
		if (!replaced)
			*w++ = *r++;
	}
	*w = '\0';
}

const char *
demangle(const char *name, char *out, size_t outlen)
{
	char	   *d;
	int			status = 0;

	if (strncmp(name, "_Z", 2) != 0)
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (d == NULL || status != 0)
	{
		free(d);
		return name;
	}
	if (is_rust_legacy(name))
		rust_cleanup(d);
	snprintf(out, outlen, "%s", d);
	free(d);
	return out;
}
