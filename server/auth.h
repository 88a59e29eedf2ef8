/*
 * Credentials of pushing clients, each mapped to the PostgreSQL role the
 * server writes its profiles as (docs/push.md, "Authentication").
 */
#ifndef SERVER_AUTH_H
#define SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct AuthTable AuthTable;

typedef enum AuthResult
{
	AUTH_NONE,					/* no Authorization header */
	AUTH_OK,
	AUTH_UNKNOWN,				/* credentials that match no entry */
	AUTH_MALFORMED				/* an Authorization header we cannot read */
} AuthResult;

/*
 * Reads `bearer TOKEN ROLE` and `basic USER PASSWORD ROLE` lines ('#'
 * starts a comment).  The file may not be readable by every user.
 */
AuthTable  *auth_load(const char *path, char *err, size_t errlen);
void		auth_free(AuthTable *t);
int			auth_count(const AuthTable *t);

/* *role and *who (the user, or "token N" for the Nth bearer line) on AUTH_OK */
AuthResult	auth_check(const AuthTable *t, const char *authorization,
					   const char **role, const char **who);

#endif
