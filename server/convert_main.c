/*
 * parca-convert: a JFR recording or an OTLP profiles request to pprof files,
 * with the converters parca-server uses (jfr.c, otlp.c).
 *
 *   parca-convert FILE --jfr|--otlp|--otlp-json --out DIR [--max-bytes N] [--thread-labels]
 *
 * Writes DIR/N-NAME.pb.gz for each profile (N from 1) and prints a line for
 * each: the file, the name and the labels.  Exit status 1 with the
 * converter's message on bad input, 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "jfr.h"
#include "otlp.h"

static void
usage(void)
{
	fprintf(stderr, "usage: parca-convert FILE --jfr|--otlp|--otlp-json --out DIR [--max-bytes N] [--thread-labels]\n");
	exit(2);
}

static uint8_t *
read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *buf = NULL;
	size_t		cap = 0,
				n = 0;

	if (!f)
		return NULL;
	for (;;)
	{
		size_t		got;

		if (n == cap)
		{
			uint8_t    *nb;

			cap = cap ? cap * 2 : 1 << 16;
			nb = realloc(buf, cap);
			if (!nb)
			{
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
	{
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

static bool
write_gzip(const char *path, const uint8_t *data, size_t len)
{
	gzFile		g = gzopen(path, "wb");
	size_t		off = 0;

	if (!g)
		return false;
	while (off < len)
	{
		unsigned	chunk = len - off > (1u << 30) ? (1u << 30) : (unsigned) (len - off);

		if (gzwrite(g, data + off, chunk) != (int) chunk)
		{
			gzclose(g);
			return false;
		}
		off += chunk;
	}
	return gzclose(g) == Z_OK;
}

int
main(int argc, char **argv)
{
	const char *file = NULL,
			   *dir = NULL,
			   *format = NULL;
	PushLimits	limits = {256u << 20, false};
	PushedProfiles out = {0};
	char		err[512];
	uint8_t    *data;
	size_t		len = 0;
	bool		ok;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--jfr") == 0 || strcmp(argv[i], "--otlp") == 0 ||
			strcmp(argv[i], "--otlp-json") == 0)
			format = argv[i] + 2;
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
		{
			char	   *end;

			limits.max_bytes = strtoull(argv[++i], &end, 10);
			if (*end || limits.max_bytes == 0)
				usage();
		}
		else if (strcmp(argv[i], "--thread-labels") == 0)
			limits.thread_labels = true;
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else
			usage();
	}
	if (!file || !dir || !format)
		usage();
	data = read_file(file, &len);
	if (!data)
	{
		fprintf(stderr, "parca-convert: %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (strcmp(format, "jfr") == 0)
		ok = jfr_convert(data, len, &limits, &out, err, sizeof(err));
	else
		ok = otlp_convert(data, len, strcmp(format, "otlp-json") == 0, &limits, &out, err, sizeof(err));
	free(data);
	if (!ok)
	{
		fprintf(stderr, "parca-convert: %s: %s\n", file, err);
		return 1;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
	{
		fprintf(stderr, "parca-convert: %s: %s\n", dir, strerror(errno));
		push_profiles_free(&out);
		return 1;
	}
	for (size_t i = 0; i < out.n; i++)
	{
		char		path[4096];

		snprintf(path, sizeof(path), "%s/%zu-%s.pb.gz", dir, i + 1, out.items[i].name);
		if (!write_gzip(path, out.items[i].pprof, out.items[i].pprof_len))
		{
			fprintf(stderr, "parca-convert: could not write %s\n", path);
			push_profiles_free(&out);
			return 1;
		}
		printf("%s\t%s\t", path, out.items[i].name);
		for (size_t k = 0; k < out.items[i].nlabels; k++)
			printf("%s%s=%s", k ? "," : "", out.items[i].labels[k].name, out.items[i].labels[k].value);
		printf("\n");
	}
	push_profiles_free(&out);
	return 0;
}
