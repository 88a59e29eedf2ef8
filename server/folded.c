/* folded.c: folded stack text to pprof through the profile builder (folded.h) */
#include "folded.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_builder.h"

/* a line's stack: its frames (leaf first, as pprof has them) into locs */
static bool
add_stack(ProfileBuilder *pb, char *stack, size_t len, int64_t value, uint64_t *locs,
		  size_t lineno, char *err, size_t errlen)
{
	size_t		n = 0;
	size_t		end = len;

	/* from the last frame (the leaf) back to the first */
	for (;;)
	{
		size_t		start = end;

		while (start > 0 && stack[start - 1] != ';')
			start--;
		if (end > start)
		{
			if (n == FOLDED_MAX_DEPTH)
			{
				snprintf(err, errlen, "line %zu: a stack deeper than %d frames", lineno, FOLDED_MAX_DEPTH);
				return false;
			}
			stack[end] = 0;
			locs[n] = pb_frame(pb, stack + start, "", 0, "");
			if (locs[n] == 0)
			{
				snprintf(err, errlen, "%s", pb_error(pb));
				return false;
			}
			n++;
		}
		if (start == 0)
			break;
		end = start - 1;
	}
	if (n == 0)
		return true;
	if (!pb_sample(pb, locs, n, &value, NULL, 0))
	{
		snprintf(err, errlen, "%s", pb_error(pb));
		return false;
	}
	return true;
}

/* identical lines of the "lines" format counted once */
static int
cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

bool
folded_to_pprof(const uint8_t *text, size_t len, bool one_per_line, const FoldedMeta *meta,
				size_t memory_limit, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
	ProfileBuilder *pb = NULL;
	char	   *copy = NULL;
	char	  **lines = NULL;
	size_t		nlines = 0;
	uint64_t   *locs = NULL;
	bool		ok = false;
	size_t		samples = 0;

	*out = NULL;
	*out_len = 0;
	if (len > memory_limit / 2)
	{
		snprintf(err, errlen, "the profile is larger than the limit (%zu bytes)", memory_limit / 2);
		return false;
	}
	copy = malloc(len + 1);
	locs = malloc(FOLDED_MAX_DEPTH * sizeof(uint64_t));
	pb = pb_create(memory_limit);
	if (!copy || !locs || !pb)
	{
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	memcpy(copy, text, len);
	copy[len] = 0;
	if (memchr(copy, 0, len))
	{
		snprintf(err, errlen, "the profile text holds a NUL byte");
		goto done;
	}
	pb_sample_type(pb, meta->sample_type, meta->sample_unit);
	if (meta->period_type)
		pb_period(pb, meta->period_type, meta->period_unit, meta->period);
	pb_time(pb, meta->time_nanos, meta->duration_nanos);

	/* split into lines (LF or CRLF) */
	for (size_t i = 0; i <= len; i++)
		if (i == len || copy[i] == '\n')
			nlines++;
	lines = malloc(nlines * sizeof(char *));
	if (!lines)
	{
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	nlines = 0;
	for (char *p = copy; p;)
	{
		char	   *nl = strchr(p, '\n');
		size_t		l;

		if (nl)
			*nl = 0;
		l = strlen(p);
		if (l && p[l - 1] == '\r')
			p[--l] = 0;
		if (l)
			lines[nlines++] = p;
		p = nl ? nl + 1 : NULL;
	}

	if (one_per_line)
	{
		qsort(lines, nlines, sizeof(char *), cmp_lines);
		for (size_t i = 0; i < nlines;)
		{
			size_t		j = i;
			int64_t		count;

			while (j < nlines && strcmp(lines[j], lines[i]) == 0)
				j++;
			count = (int64_t) (j - i);
			if (meta->period > 0)
				count *= meta->period;
			if (!add_stack(pb, lines[i], strlen(lines[i]), count, locs, i + 1, err, errlen))
				goto done;
			samples++;
			i = j;
		}
	}
	else
	{
		for (size_t i = 0; i < nlines; i++)
		{
			char	   *space = strrchr(lines[i], ' ');
			char	   *end;
			long long	count;

			if (!space)
				continue;		/* as Pyroscope: a line without a count is skipped */
			errno = 0;
			count = strtoll(space + 1, &end, 10);
			if (errno || end == space + 1 || *end || count < 0)
			{
				snprintf(err, errlen, "line %zu: the count after the last space must be a whole number, "
						 "not \"%.32s\"", i + 1, space + 1);
				goto done;
			}
			if (count == 0)
				continue;
			if (meta->period > 0 && count > INT64_MAX / meta->period)
			{
				snprintf(err, errlen, "line %zu: the count %lld times the period overflows", i + 1, count);
				goto done;
			}
			if (meta->period > 0)
				count *= meta->period;
			*space = 0;
			if (!add_stack(pb, lines[i], (size_t) (space - lines[i]), count, locs, i + 1, err, errlen))
				goto done;
			samples++;
		}
	}
	if (samples == 0)
	{
		ok = true;				/* nothing to store: *out stays NULL */
		goto done;
	}
	if (!pb_encode(pb, out, out_len))
	{
		snprintf(err, errlen, "%s", pb_error(pb));
		goto done;
	}
	ok = true;
done:
	if (pb)
		pb_destroy(pb);
	free(lines);
	free(locs);
	free(copy);
	return ok;
}
