/*
 * profile_type.c
 *		Parsing, formatting and validating profile type strings.
 */
#include "postgres.h"

#include "types/profile_type.h"
#include "types/valid_text.h"

bool
profile_type_char_ok(char c)
{
	return c != ':' && c != '{' && c != '}' && c != '"' && c != ' ' &&
		(unsigned char) c >= 0x20 && c != 0x7f;
}

ProfileTypeError
profile_type_parse(const char *text, int len, ProfileType *type, int *error_at)
{
	int			starts[6];
	int			nfields = 1;
	char	   *fields[5];
	ProfileTypeError err = PROFILE_TYPE_OK;
	int			at = 0;

	starts[0] = 0;
	for (int i = 0; i < len && err == PROFILE_TYPE_OK; i++)
	{
		if (text[i] == ':')
		{
			if (nfields == 6)
				err = PROFILE_TYPE_TOO_MANY_FIELDS, at = i;
			else
				starts[nfields++] = i + 1;
		}
		else if (!profile_type_char_ok(text[i]))
			err = PROFILE_TYPE_BAD_CHAR, at = i;
	}
	/* then the form: five or six fields, a name, and only "delta" sixth */
	if (err == PROFILE_TYPE_OK && nfields < 5)
		err = PROFILE_TYPE_TOO_FEW_FIELDS, at = len;
	else if (err == PROFILE_TYPE_OK && starts[1] == 1)
		err = PROFILE_TYPE_EMPTY_NAME, at = 0;
	else if (err == PROFILE_TYPE_OK && nfields == 6 &&
			 !(len - starts[5] == 5 && strncmp(text + starts[5], "delta", 5) == 0))
		err = PROFILE_TYPE_NOT_DELTA, at = starts[5];
	if (err != PROFILE_TYPE_OK)
	{
		if (error_at)
			*error_at = at;
		return err;
	}

	for (int f = 0; f < 5; f++)
	{
		int			end = f + 1 < nfields ? starts[f + 1] - 1 : len;

		fields[f] = pnstrdup(text + starts[f], end - starts[f]);
	}
	type->name = fields[0];
	type->sample_type = fields[1];
	type->sample_unit = fields[2];
	type->period_type = fields[3];
	type->period_unit = fields[4];
	type->delta = nfields == 6;
	return PROFILE_TYPE_OK;
}

void
profile_type_parse_or_error(const char *text, ProfileType *type)
{
	if (profile_type_parse(text, (int) strlen(text), type, NULL) != PROFILE_TYPE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid profile type %s", message_quote_cstring(text)),
				 errdetail("A profile type is name:sample_type:sample_unit:period_type:period_unit, optionally followed by :delta; the name is not empty, and no field contains '{', '}', '\"', white space or control characters.")));
}

char *
profile_type_format(const ProfileType *type)
{
	return psprintf("%s:%s:%s:%s:%s%s", type->name, type->sample_type, type->sample_unit,
					type->period_type, type->period_unit, type->delta ? ":delta" : "");
}

bool
profile_type_is_sample_count(const ProfileType *type)
{
	return strcmp(type->sample_type, "samples") == 0 && strcmp(type->sample_unit, "count") == 0;
}

void
profile_name_validate(const char *name)
{
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("profile name must not be empty")));
	for (const char *p = name; *p; p++)
		if (!profile_type_char_ok(*p))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid profile name %s", message_quote_cstring(name)),
					 errdetail("A profile name may not contain ':', '{', '}', '\"', white space or control characters.")));
}

void
profile_type_field_validate(const char *field, const char *what)
{
	for (const char *p = field; *p; p++)
		if (!profile_type_char_ok(*p))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid profile: %s %s cannot be part of a profile type", what,
							message_quote_cstring(field)),
					 errdetail("A profile type is name:sample_type:sample_unit:period_type:period_unit; no selector could name one whose fields contain ':', '{', '}', '\"', white space or control characters.")));
}
