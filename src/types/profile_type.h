/*
 * profile_type.h
 *		The profile type string, Parca's
 *		name:sample_type:sample_unit:period_type:period_unit[:delta]: its one
 *		parser, its one formatter, and what a field may hold.
 *
 * Ingestion makes the string from a pprof's value types, selectors name
 * it, queries and exports read its fields back.  A field may hold any
 * character but ':' (the separator), '{', '}' and '"' (a selector's own),
 * white space and control characters (which would end a selector's type or
 * could not be typed): so every type that ingestion stores can be named by
 * a selector.  Fields other than the name may be empty (a pprof without a
 * period type).
 */
#ifndef PARCA_PROFILE_TYPE_H
#define PARCA_PROFILE_TYPE_H

#include "postgres.h"

typedef struct ProfileType
{
	const char *name;		/* never empty */
	const char *sample_type;
	const char *sample_unit;
	const char *period_type;
	const char *period_unit;
	bool		delta;			/* ends in :delta */
} ProfileType;

/* Why a string is not a profile type. */
typedef enum ProfileTypeError
{
	PROFILE_TYPE_OK,
	PROFILE_TYPE_BAD_CHAR,		/* a character no field may hold */
	PROFILE_TYPE_EMPTY_NAME,
	PROFILE_TYPE_TOO_FEW_FIELDS,
	PROFILE_TYPE_TOO_MANY_FIELDS,
	PROFILE_TYPE_NOT_DELTA		/* a sixth field other than "delta" */
} ProfileTypeError;

/* Whether the byte c may appear in a field (bytes of multibyte characters may). */
extern bool profile_type_char_ok(char c);

/*
 * Parses text[0..len) into *type (fields palloc'd).  On failure returns
 * why, and *error_at (if not NULL) is the offset in text of the fault.
 */
extern ProfileTypeError profile_type_parse(const char *text, int len,
										   ProfileType *type, int *error_at);

/* Parses a whole string; an error naming it if it is not a profile type. */
extern void profile_type_parse_or_error(const char *text, ProfileType *type);

/* The string of a profile type (palloc'd). */
extern char *profile_type_format(const ProfileType *type);

/* Whether values of this type are samples:count (reported times the period). */
extern bool profile_type_is_sample_count(const ProfileType *type);

/* Checks the name a caller gives to the types of a pprof. */
extern void profile_name_validate(const char *name);

/*
 * Checks a pprof string that becomes a field of a profile type (what names
 * it in the message: "sample type", ...).
 */
extern void profile_type_field_validate(const char *field, const char *what);

#endif							/* PARCA_PROFILE_TYPE_H */
