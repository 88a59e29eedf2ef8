/* ui_files.c: the web UI's files (ui_files.h) */
#include "ui_files.h"

#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_SUCH_PATH "no such endpoint or file (the push API: docs/push.md; the web UI: docs/web.md)\n"

typedef struct MediaType
{
	const char *suffix;
	const char *type;
} MediaType;

static const MediaType media_types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".svg", "image/svg+xml"},
	{".png", "image/png"},
	{".woff2", "font/woff2"},
	{".ttf", "font/ttf"},
	{".map", "application/json"},
};

/* a path of the bundle's own names: no "..", no hidden files, plain bytes */
static bool
safe_path(const char *p)
{
	if (*p != '/' || strlen(p) > 200 || strstr(p, "/.") || strstr(p, "//"))
		return false;
	for (; *p; p++)
		if (!(((*p | 32) >= 'a' && (*p | 32) <= 'z') || (*p >= '0' && *p <= '9') ||
			  *p == '/' || *p == '.' || *p == '-' || *p == '_'))
			return false;
	return true;
}

/* q=0 (0, 0., 0.000): the coding is refused */
static bool
q_is_zero(const char *p, size_t len)
{
	if (len == 0 || p[0] != '0')
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(p[i] == '.' && i == 1) && p[i] != '0')
			return false;
	return true;
}

/*
 * Whether an Accept-Encoding header takes gzip (RFC 9110 12.5.3): named
 * with a q above 0, or not named and "*" with a q above 0.
 */
static bool
accepts_gzip(const char *header)
{
	int			gzip = -1;		/* unnamed */
	int			any = -1;
	const char *p = header;

	while (p && *p)
	{
		size_t		name_len;
		const char *name;
		bool		zero = false;

		p += strspn(p, " \t,");
		name = p;
		name_len = strcspn(p, " \t,;");
		p += name_len;
		/* parameters up to the next coding */
		while (*p && *p != ',')
		{
			size_t		len;

			p += strspn(p, " \t;");
			len = strcspn(p, " \t,;");
			if (len > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
				zero = q_is_zero(p + 2, len - 2);
			p += len;
		}
		if (name_len == 4 && strncasecmp(name, "gzip", 4) == 0)
			gzip = !zero;
		else if (name_len == 1 && *name == '*')
			any = !zero;
	}
	return gzip >= 0 ? gzip : any > 0;
}

/*
 * The file at path, or its gzipped copy (path.gz, made by web/build.sh)
 * when the client takes gzip: an open descriptor of a regular file (st
 * set), or -1.
 */
static int
open_file(const char *path, bool gzip, struct stat *st, bool *gzipped)
{
	char		gz[PATH_MAX];
	int			fd;

	*gzipped = false;
	if (gzip && snprintf(gz, sizeof(gz), "%s.gz", path) < (int) sizeof(gz))
	{
		fd = open(gz, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, st) == 0 && S_ISREG(st->st_mode))
		{
			*gzipped = true;
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)))
	{
		close(fd);
		fd = -1;
	}
	return fd;
}

static enum MHD_Result
answer_text(struct MHD_Connection *conn, int status, const char *text)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), (void *) text,
																  MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, (unsigned) status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result
ui_files_answer(struct MHD_Connection *conn, const char *web_root, const char *url, const char *method,
				int *status)
{
	char		path[PATH_MAX];
	const char *type = "application/octet-stream";
	struct stat st;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	int			fd;
	bool		gzipped;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return answer_text(conn, *status = 405, "the web UI's files take GET\n");
	if (strcmp(url, "/") == 0)
		url = "/index.html";
	if (!safe_path(url))
		return answer_text(conn, *status = 404, NO_SUCH_PATH);
	snprintf(path, sizeof(path), "%s%s", web_root, url);
	fd = open_file(path, accepts_gzip(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
																   MHD_HTTP_HEADER_ACCEPT_ENCODING)),
				   &st, &gzipped);
	if (fd < 0)
	{
		bool		no_ui = strcmp(url, "/index.html") == 0;

		*status = no_ui ? 503 : 404;
		return answer_text(conn, *status, no_ui ?
						   "the web UI is not installed in --web-root: build it with `make web` and "
						   "install it with `make install-server` (docs/web.md)\n" : NO_SUCH_PATH);
	}
	for (size_t i = 0; i < sizeof(media_types) / sizeof(media_types[0]); i++)
	{
		size_t		n = strlen(url);
		size_t		k = strlen(media_types[i].suffix);

		if (n > k && strcmp(url + n - k, media_types[i].suffix) == 0)
			type = media_types[i].type;
	}
	resp = MHD_create_response_from_fd((size_t) st.st_size, fd);	/* MHD closes fd */
	if (!resp)
	{
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (gzipped)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	/* the answer depends on Accept-Encoding: caches must keep both */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	/* the bundle and its styles are the server's own; nothing is fetched elsewhere */
	MHD_add_response_header(resp, "Content-Security-Policy",
							"default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
							"font-src 'self' data:; frame-ancestors 'none'");
	*status = 200;
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}
