/*
 * multipart/form-data bodies (RFC 7578), as the Pyroscope SDKs send them:
 * the parts point into the body, nothing is copied.
 */
#ifndef SERVER_MULTIPART_H
#define SERVER_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MULTIPART_MAX_PARTS 16

typedef struct FormPart
{
	char		name[64];		/* the form field's name */
	const uint8_t *data;
	size_t		len;
} FormPart;

typedef struct Form
{
	FormPart	parts[MULTIPART_MAX_PARTS];
	int			nparts;
} Form;

/* true if content_type is multipart/form-data (any parameters) */
bool		is_multipart(const char *content_type);

/* Splits body by the boundary of content_type; false with err on bad input. */
bool		multipart_parse(const char *content_type, const uint8_t *body, size_t len,
							Form *form, char *err, size_t errlen);

/* the part named name, or NULL */
const FormPart *form_part(const Form *form, const char *name);

#endif
