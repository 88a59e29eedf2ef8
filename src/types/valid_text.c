/*
 * valid_text.c
 *		Making bytes from outside valid text (valid_text.h).
 */
#include "postgres.h"

#include <limits.h>

#include "fmgr.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

#include "types/valid_text.h"

const char *
valid_text(const char *s, Size len, bool *repaired)
{
	int			encoding = GetDatabaseEncoding();
	const char *replacement = encoding == PG_UTF8 ? "\xEF\xBF\xBD" : "?";
	StringInfoData buf;

	*repaired = len > INT_MAX || pg_encoding_verifymbstr(encoding, s, (int) len) != (int) len;
	if (!*repaired)
		return s;
	initStringInfo(&buf);
	while (len > 0)
	{
		int			n = *s == '\0' ? -1 : pg_encoding_verifymbchar(encoding, s, (int) Min(len, INT_MAX));

		if (n > 0)
			appendBinaryStringInfo(&buf, s, n);
		else
			appendStringInfoString(&buf, replacement);
		n = Max(n, 1);
		s += n;
		len -= n;
	}
	return buf.data;
}

char *
message_quote(const char *s, Size len)
{
	/* a prefix long enough for the characters shown, made valid text */
	Size		head = Min(len, (Size) MESSAGE_QUOTE_CHARS * MAX_MULTIBYTE_CHAR_LEN + 1);
	bool		repaired;
	const char *shown = valid_text(s, head, &repaired);
	int			shown_len = repaired ? (int) strlen(shown) : (int) head;
	int			cut = pg_mbcharcliplen(shown, shown_len, MESSAGE_QUOTE_CHARS);

	if (cut == shown_len && head == len)
		return psprintf("\"%.*s\"", cut, shown);
	return psprintf("\"%.*s...\" (%zu bytes)", cut, shown, len);
}

char *
message_quote_cstring(const char *s)
{
	return message_quote(s, strlen(s));
}

/* parca.text_is_valid(text): whether it is valid in the database encoding. */
PG_FUNCTION_INFO_V1(parca_text_is_valid);
Datum
parca_text_is_valid(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	int			len = VARSIZE_ANY_EXHDR(t);

	PG_RETURN_BOOL(pg_encoding_verifymbstr(GetDatabaseEncoding(), VARDATA_ANY(t), len) == len);
}

/* parca.message_quote(text): message_quote() for SQL and PL/pgSQL functions' messages. */
PG_FUNCTION_INFO_V1(parca_message_quote);
Datum
parca_message_quote(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);

	PG_RETURN_TEXT_P(cstring_to_text(message_quote(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t))));
}
