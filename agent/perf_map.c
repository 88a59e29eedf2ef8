/*
 * perf_map.c
 *		Incremental reading of perf maps; see perf_map.h.
 */
#include "perf_map.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ids/ids.h"

/* Longest line kept: a name longer than this is not a name anyone reads. */
#define MAX_LINE 4096
#define CHUNK (64 * 1024)
/* Bytes before the read offset compared to notice a rewrite. */
#define TAIL 64

static const char *
parse_hex(const char *s, const char *end, uint64_t *v, bool *ok)
{
	int			digits = 0;

	*v = 0;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && isxdigit((unsigned char) *s) && digits <= 16; s++, digits++)
		*v = (*v << 4) | (uint64_t) (isdigit((unsigned char) *s) ? *s - '0' :
									 tolower((unsigned char) *s) - 'a' + 10);
	*ok = digits > 0 && digits <= 16;
	return s;
}

bool
perf_map_split_source(const char *name, size_t len, size_t *file_at, size_t *file_len, int32_t *line)
{
	const char *space = NULL;
	const char *end = name + len;
	const char *colon[2] = {NULL, NULL};
	long		v;

	for (const char *c = name; c < end; c++)
		if (*c == ' ')
			space = c;
	if (space == NULL || space == name || space + 1 == end)
		return false;
	/* the last one or two ":digits" of the token after the last space */
	for (const char *c = end - 1; c > space; c--)
	{
		if (*c == ':')
		{
			colon[1] = colon[0];
			colon[0] = c;
			if (colon[1] != NULL)
				break;
			continue;
		}
		if (!isdigit((unsigned char) *c))
			break;
	}
	if (colon[0] == NULL || colon[0] == space + 1 || colon[0] + 1 == end ||
		(colon[1] != NULL && colon[1] + 1 == end) || colon[0] + 1 == colon[1])
		return false;
	v = strtol(colon[0] + 1, NULL, 10);
	if (v < 0 || v > INT32_MAX)
		return false;
	*file_at = (size_t) (space + 1 - name);
	*file_len = (size_t) (colon[0] - space - 1);
	*line = (int32_t) v;
	return true;
}

/* One line (without its newline): add it to t if it is "START SIZE NAME". */
static void
parse_line(const char *line, size_t len, JitTable *t)
{
	const char *end = line + len;
	const char *c;
	uint64_t	start;
	uint64_t	size;
	bool		ok;
	size_t		file_at;
	size_t		file_len;
	int32_t		lineno;

	if (len > 0 && end[-1] == '\r')
		end--;
	c = parse_hex(line, end, &start, &ok);
	if (!ok || c == end || *c != ' ')
		return;
	c = parse_hex(c + 1, end, &size, &ok);
	if (!ok || c == end || *c != ' ' || c + 1 == end)
		return;
	c++;
	if (perf_map_split_source(c, (size_t) (end - c), &file_at, &file_len, &lineno))
	{
		char		file[MAX_LINE];
		size_t		name_len = file_at - 1;

		memcpy(file, c + file_at, file_len);
		file[file_len] = '\0';
		/* (a NUL inside the line ends the file name: still its own bytes) */
		jit_table_add(t, start, size, c, name_len, file, lineno, NULL, 0);
	}
	else
		jit_table_add(t, start, size, c, (size_t) (end - c), NULL, 0, NULL, 0);
}

/* Was the file rewritten since r read it: are the bytes before offset others? */
static bool
rewritten(PerfMapReader *r, int fd, const struct stat *st)
{
	char		tail[TAIL];

	if ((uint64_t) st->st_dev != r->dev || (uint64_t) st->st_ino != r->ino ||
		(uint64_t) st->st_size < r->offset)
		return true;
	if (r->tail_len == 0)
		return false;
	if (pread(fd, tail, r->tail_len, (off_t) (r->offset - r->tail_len)) != (ssize_t) r->tail_len)
		return true;
	return parca_hash64(tail, r->tail_len) != r->tail_hash;
}

bool
perf_map_read(PerfMapReader *r, int fd, JitTable *t, size_t max_read)
{
	struct stat st;
	char	   *buf;
	size_t		have = 0;
	size_t		done = 0;
	bool		changed = false;

	if (fstat(fd, &st) != 0)
		return false;
	if (rewritten(r, fd, &st))
	{
		changed = r->offset > 0 || t->nsymbols > 0;
		memset(r, 0, sizeof(*r));
		r->dev = (uint64_t) st.st_dev;
		r->ino = (uint64_t) st.st_ino;
		jit_table_reset(t);
	}
	if ((uint64_t) st.st_size == r->offset)
		return changed;
	buf = malloc(CHUNK);
	if (buf == NULL)
		return changed;
	while (done < max_read && !t->full)
	{
		ssize_t		got = pread(fd, buf + have, CHUNK - have, (off_t) (r->offset + have));
		size_t		line_start = 0;

		if (got <= 0)
			break;
		have += (size_t) got;
		done += (size_t) got;
		for (size_t i = 0; i < have; i++)
		{
			if (buf[i] != '\n')
				continue;
			if (!r->skipping && i - line_start <= MAX_LINE)
				parse_line(buf + line_start, i - line_start, t);
			r->skipping = false;
			line_start = i + 1;
		}
		/* a line longer than a chunk: skipped to its end */
		if (line_start == 0 && have == CHUNK)
		{
			r->skipping = true;
			line_start = have;
		}
		if (line_start > 0)
		{
			size_t		keep = line_start < TAIL ? line_start : TAIL;

			r->tail_len = (uint32_t) keep;
			r->tail_hash = parca_hash64(buf + line_start - keep, keep);
			r->offset += line_start;
			memmove(buf, buf + line_start, have - line_start);
			have -= line_start;
			changed = true;
		}
	}
	free(buf);
	return changed;
}
