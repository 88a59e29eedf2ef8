/* auth.c: credentials and their roles (auth.h) */
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base64.h"

#define SECRET_MAX 512

typedef struct AuthEntry
{
	bool		bearer;
	char	   *user;			/* basic: the user; bearer: "token N" */
	char	   *secret;			/* the token, or the password */
	char	   *role;
} AuthEntry;

struct AuthTable
{
	AuthEntry  *entries;
	int			n;
};

int
auth_count(const AuthTable *t)
{
	return t ? t->n : 0;
}

void
auth_free(AuthTable *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n; i++)
	{
		free(t->entries[i].user);
		if (t->entries[i].secret)
			memset(t->entries[i].secret, 0, strlen(t->entries[i].secret));
		free(t->entries[i].secret);
		free(t->entries[i].role);
	}
	free(t->entries);
	free(t);
}

AuthTable *
auth_load(const char *path, char *err, size_t errlen)
{
	FILE	   *f;
	struct stat st;
	char		line[2048];
	int			lineno = 0;
	AuthTable  *t = calloc(1, sizeof(AuthTable));

	if (!t)
	{
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f = fopen(path, "r");
	if (!f)
	{
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		free(t);
		return NULL;
	}
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH))
	{
		snprintf(err, errlen, "%s is readable by every user: chmod o-r it (it holds secrets)", path);
		fclose(f);
		free(t);
		return NULL;
	}
	while (fgets(line, sizeof(line), f))
	{
		char	   *fields[5];
		int			nf = 0;
		char	   *save = NULL;
		char	   *tok;
		AuthEntry  *e;
		AuthEntry  *grown;

		lineno++;
		for (tok = strtok_r(line, " \t\r\n", &save); tok && nf < 5; tok = strtok_r(NULL, " \t\r\n", &save))
		{
			if (tok[0] == '#')
				break;
			fields[nf++] = tok;
		}
		if (nf == 0)
			continue;
		if (!((nf == 3 && strcmp(fields[0], "bearer") == 0) || (nf == 4 && strcmp(fields[0], "basic") == 0)) ||
			strlen(fields[nf - 2]) > SECRET_MAX || strlen(fields[nf - 1]) > 63)
		{
			snprintf(err, errlen, "%s:%d: expected `bearer TOKEN ROLE` or `basic USER PASSWORD ROLE` "
					 "(secrets up to %d bytes, role names up to 63)", path, lineno, SECRET_MAX);
			fclose(f);
			auth_free(t);
			return NULL;
		}
		grown = realloc(t->entries, (t->n + 1) * sizeof(AuthEntry));
		if (!grown)
		{
			snprintf(err, errlen, "out of memory");
			fclose(f);
			auth_free(t);
			return NULL;
		}
		t->entries = grown;
		e = &t->entries[t->n++];
		memset(e, 0, sizeof(*e));
		e->bearer = nf == 3;
		if (e->bearer)
		{
			char		who[32];

			snprintf(who, sizeof(who), "token %d", lineno);
			e->user = strdup(who);
		}
		else
			e->user = strdup(fields[1]);
		e->secret = strdup(fields[nf - 2]);
		e->role = strdup(fields[nf - 1]);
		if (!e->user || !e->secret || !e->role)
		{
			snprintf(err, errlen, "out of memory");
			fclose(f);
			auth_free(t);
			return NULL;
		}
	}
	memset(line, 0, sizeof(line));
	fclose(f);
	return t;
}

/* equal, in a time that depends only on the lengths */
static bool
secret_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char diff = alen != blen;

	for (size_t i = 0; i < alen; i++)
		diff |= (unsigned char) a[i] ^ (unsigned char) b[i % (blen ? blen : 1)];
	return diff == 0 && blen > 0;
}

/* base64 into out as a C string; false if not base64, too long, or holding a NUL */
static bool
b64_text(const char *in, char *out, size_t outlen)
{
	size_t		n;

	if (!base64_decode(in, strlen(in), (uint8_t *) out, outlen - 1, &n))
		return false;
	out[n] = 0;
	return strlen(out) == n;
}

AuthResult
auth_check(const AuthTable *t, const char *authorization, const char **role, const char **who)
{
	const char *p;
	const AuthEntry *match = NULL;

	*role = NULL;
	*who = NULL;
	if (!authorization || !*authorization)
		return AUTH_NONE;
	if (strncasecmp(authorization, "Bearer ", 7) == 0)
	{
		p = authorization + 7;
		while (*p == ' ')
			p++;
		if (!*p || strlen(p) > SECRET_MAX)
			return AUTH_MALFORMED;
		/* every entry compared, so that the time tells nothing */
		for (int i = 0; t && i < t->n; i++)
			if (t->entries[i].bearer &&
				secret_equal(p, strlen(p), t->entries[i].secret, strlen(t->entries[i].secret)) && !match)
				match = &t->entries[i];
	}
	else if (strncasecmp(authorization, "Basic ", 6) == 0)
	{
		char		decoded[2 * SECRET_MAX];
		char	   *colon;

		p = authorization + 6;
		while (*p == ' ')
			p++;
		if (!b64_text(p, decoded, sizeof(decoded)) || !(colon = strchr(decoded, ':')))
			return AUTH_MALFORMED;
		*colon = 0;
		for (int i = 0; t && i < t->n; i++)
		{
			const AuthEntry *e = &t->entries[i];
			bool		user_ok;
			bool		password_ok;

			if (e->bearer)
				continue;
			user_ok = strcmp(e->user, decoded) == 0;
			password_ok = secret_equal(colon + 1, strlen(colon + 1), e->secret, strlen(e->secret));
			if (user_ok && password_ok && !match)
				match = e;
		}
		memset(decoded, 0, sizeof(decoded));
	}
	else
		return AUTH_MALFORMED;
	if (!match)
		return AUTH_UNKNOWN;
	*role = match->role;
	*who = match->user;
	return AUTH_OK;
}
