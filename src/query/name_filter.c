/*
 * name_filter.c
 *		Which function names a function view reports.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "metastore/metastore_read.h"
#include "query/grow_array.h"
#include "query/name_filter.h"
#include "types/valid_text.h"

static const struct
{
	const char *name;
	NameMatch	match;
	bool		negate;
}			matches[] = {
	{"equal", NAME_EQUAL, false}, {"not_equal", NAME_EQUAL, true},
	{"contains", NAME_CONTAINS, false}, {"not_contains", NAME_CONTAINS, true},
	{"starts_with", NAME_STARTS_WITH, false}, {"not_starts_with", NAME_STARTS_WITH, true},
};

struct NameFilter
{
	const char *text;
	int			kind;			/* index into matches */
	char	   *decided;		/* per name number: 0 not yet, 1 wanted, 2 not */
	int			ndecided;
};

NameFilter *
name_filter_create(MemoryContext cxt, const char *text, const char *match)
{
	NameFilter *f;
	int			kind = -1;

	for (int i = 0; i < lengthof(matches) && kind < 0; i++)
		if (strcmp(match, matches[i].name) == 0)
			kind = i;
	if (kind < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown match %s", message_quote_cstring(match)),
				 errhint("One of equal, not_equal, contains, not_contains, starts_with, not_starts_with.")));
	f = MemoryContextAllocZero(cxt, sizeof(NameFilter));
	f->text = MemoryContextStrdup(cxt, text);
	f->kind = kind;
	return f;
}

bool
name_filter_is(const NameFilter *f, const char *text, const char *match)
{
	return strcmp(f->text, text) == 0 && strcmp(matches[f->kind].name, match) == 0;
}

void
name_filter_free(NameFilter *f)
{
	if (f->ndecided)
		pfree(f->decided);
	pfree((char *) f->text);
	pfree(f);
}

bool
name_filter_wants(NameFilter *f, const Symbols *syms, int name)
{
	if (name >= f->ndecided)
	{
		int			n = grow_cap(f->ndecided, (int64) name + 1, 0);

		f->decided = grow_array(GetMemoryChunkContext(f), f->decided, 1, f->ndecided, n, 0);
		f->ndecided = n;
	}
	if (f->decided[name] == 0)
	{
		const char *s = syms->names.strings[name];
		NameMatch	how = matches[f->kind].match;
		bool		m;

		if (how == NAME_EQUAL)
			m = strcmp(s, f->text) == 0;
		else if (how == NAME_CONTAINS)
			m = strstr(s, f->text) != NULL;
		else
			m = strncmp(s, f->text, strlen(f->text)) == 0;
		f->decided[name] = m != matches[f->kind].negate ? 1 : 2;
	}
	return f->decided[name] == 1;
}
