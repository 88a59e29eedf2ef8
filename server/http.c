/*
 * http.c: requests received with libmicrohttpd (server.h).
 *
 * One thread polls every connection (epoll), so a slow client costs a
 * socket and a little memory, not a thread.  A request's headers are
 * checked at once (route, method, credentials, size, load), its body is
 * read within the limits, and then the connection is suspended and the
 * request queued for a worker, which resumes it with the answer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "push_api.h"
#include "server.h"
#include "ui_api.h"
#include "ui_files.h"

#define BODY_RESERVE_STEP (64 * 1024)	/* reserved at a time for a body of unknown size */
#define ARG_VALUE_MAX 8192
#define HEADER_VALUE_MAX 1024

double
monotonic_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

typedef struct Route
{
	const char *path;
	Endpoint	ep;
} Route;

static const Route routes[] = {
	{"/ingest", EP_INGEST},
	{"/pyroscope/ingest", EP_INGEST},
	{PUSH_PATH, EP_PUSH},
	{"/v1development/profiles", EP_OTLP},
	{"/v1/profiles", EP_OTLP},
	{"/ready", EP_READY},
	{"/metrics", EP_METRICS},
};

static Endpoint
route(const char *url)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(url, routes[i].path) == 0)
			return routes[i].ep;
	return EP_OTHER;
}

static void
req_free(Req *q)
{
	free(q->info.path);
	for (int i = 0; i < q->info.nargs; i++)
	{
		free(q->info.args[i].key);
		free(q->info.args[i].value);
	}
	free(q->info.content_type);
	free(q->info.content_encoding);
	free(q->info.tenant);
	buf_free(&q->body);
	free(q->response.body);
	if (q->reserved)
		atomic_fetch_sub(&server.body_bytes, q->reserved);
	if (q->counted)
	{
		pthread_mutex_lock(&server.queue_lock);
		atomic_fetch_sub(&server.in_flight, 1);
		pthread_cond_broadcast(&server.idle_cond);
		pthread_mutex_unlock(&server.queue_lock);
	}
	free(q);
}

static char *
header_copy(struct MHD_Connection *conn, const char *name)
{
	const char *v = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);

	return v ? strndup(v, HEADER_VALUE_MAX) : NULL;
}

static enum MHD_Result
collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	Req		   *q = cls;

	if (!key)
		return MHD_YES;
	if (q->info.nargs == QUERY_MAX_ARGS)
	{
		q->info.args_cut = true;
		return MHD_YES;
	}
	if (strlen(key) > 256 || (value && strlen(value) > ARG_VALUE_MAX))
	{
		if (!q->info.args_cut && strlen(key) <= 256)
		{
			size_t		n = 0;

			/* named in the answer: only its plain characters */
			for (const char *k = key; *k && n < sizeof(q->info.cut_key) - 1; k++)
				if ((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') || (*k >= '0' && *k <= '9') ||
					*k == '_' || *k == '-' || *k == '.')
					q->info.cut_key[n++] = *k;
			q->info.cut_key[n] = 0;
		}
		q->info.args_cut = true;
	}
	q->info.args[q->info.nargs].key = strndup(key, 256);
	q->info.args[q->info.nargs].value = strndup(value ? value : "", ARG_VALUE_MAX);
	if (q->info.args[q->info.nargs].key && q->info.args[q->info.nargs].value)
		q->info.nargs++;
	else
	{
		free(q->info.args[q->info.nargs].key);
		free(q->info.args[q->info.nargs].value);
	}
	return MHD_YES;
}

/* sends q->response (built beforehand) */
static enum MHD_Result
send_response(Req *q, const Outcome *o)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char		retry[16];

	resp = MHD_create_response_from_buffer(q->response.len, q->response.body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		return MHD_NO;
	q->response.body = NULL;	/* MHD's now */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, q->response.content_type);
	if (q->response.content_disposition)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, q->response.content_disposition);
	if (o->retry_after > 0)
	{
		snprintf(retry, sizeof(retry), "%d", o->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	}
	/* a browser asks for a user and password on Basic alone: the UI's API offers that */
	if (o->status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
								q->info.ep == EP_API ? "Basic realm=\"parca-server\", charset=\"UTF-8\"" :
								"Bearer realm=\"parca-server\", Basic realm=\"parca-server\"");
	if (o->status == 405)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
								q->info.ep == EP_READY || q->info.ep == EP_METRICS ? "GET, HEAD" :
								q->info.ep == EP_API ? "GET" : "POST");
	if (atomic_load(&server.draining))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	ret = MHD_queue_response(q->conn, (unsigned) q->response.status, resp);
	MHD_destroy_response(resp);
	q->state = REQ_ANSWERED;
	return ret;
}

/* an answer decided before the body was read, or instead of storing it */
static enum MHD_Result
answer_now(Req *q, int status, const char *reason, int retry_after, const char *fmt,...)
	__attribute__((format(printf, 5, 6)));

static enum MHD_Result
answer_now(Req *q, int status, const char *reason, int retry_after, const char *fmt,...)
{
	va_list		ap;
	Outcome    *o = &q->outcome;

	memset(o, 0, sizeof(*o));
	o->status = status;
	o->reason = reason;
	o->retry_after = retry_after;
	va_start(ap, fmt);
	vsnprintf(o->message, sizeof(o->message), fmt, ap);
	va_end(ap);
	response_build(q->info.ep, q->info.content_type, o, &q->response);
	return send_response(q, o);
}

static enum MHD_Result
answer_ready(Req *q)
{
	Outcome    *o = &q->outcome;
	Buf			b;

	memset(o, 0, sizeof(*o));
	buf_init(&b, 0);
	if (atomic_load(&server.draining))
	{
		o->status = 503;
		o->reason = "shutting_down";
		buf_puts(&b, "shutting down\n");
	}
	else if (!atomic_load(&server.db_up))
	{
		o->status = 503;
		o->reason = "database_unavailable";
		o->retry_after = 5;
		pthread_mutex_lock(&server.queue_lock);
		buf_printf(&b, "the database is not ready: %s\n", server.db_error);
		pthread_mutex_unlock(&server.queue_lock);
	}
	else
	{
		o->status = 200;
		buf_puts(&b, "ready\n");
	}
	q->response.status = o->status;
	q->response.content_type = "text/plain; charset=utf-8";
	q->response.body = (char *) buf_release(&b, &q->response.len);
	return send_response(q, o);
}

static enum MHD_Result
answer_metrics(Req *q)
{
	Buf			b;

	memset(&q->outcome, 0, sizeof(q->outcome));
	q->outcome.status = 200;
	buf_init(&b, 0);
	metrics_render(&b, atomic_load(&server.in_flight), atomic_load(&server.body_bytes),
				   atomic_load(&server.db_up));
	q->response.status = 200;
	q->response.content_type = "text/plain; version=0.0.4; charset=utf-8";
	q->response.body = (char *) buf_release(&b, &q->response.len);
	return send_response(q, &q->outcome);
}

/* whether more body bytes fit the budget of all bodies held; reserves them */
static bool
reserve_body(Req *q, size_t bytes)
{
	size_t		before = atomic_fetch_add(&server.body_bytes, bytes);

	if (before + bytes > server.cfg.max_memory)
	{
		atomic_fetch_sub(&server.body_bytes, bytes);
		return false;
	}
	q->reserved += bytes;
	return true;
}

/* the first call for a request: everything its headers decide */
static enum MHD_Result
request_start(Req *q, struct MHD_Connection *conn, const char *url, const char *method)
{
	const union MHD_ConnectionInfo *ci;
	const char *authz;
	const char *cl;
	unsigned long long content_length = 0;
	bool		has_length = false;
	int			in_flight;

	q->conn = conn;
	q->start = monotonic_seconds();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		q->info.received_ns = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	q->info.ep = route(url);
	q->info.path = strndup(url, 256);
	snprintf(q->method, sizeof(q->method), "%.7s", method);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr)
	{
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, q->remote, sizeof(q->remote));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, q->remote, sizeof(q->remote));
	}
	q->info.content_type = header_copy(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	q->info.content_encoding = header_copy(conn, MHD_HTTP_HEADER_CONTENT_ENCODING);
	q->info.tenant = header_copy(conn, "X-Scope-OrgID");
	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, q);

	/* the web UI: its API under /api/, its files at every other path a GET names */
	if (strncmp(url, UI_API_PREFIX, strlen(UI_API_PREFIX)) == 0)
		q->info.ep = EP_API;
	else if (q->info.ep == EP_OTHER && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
	{
		enum MHD_Result ret;

		q->info.ep = EP_UI;
		memset(&q->outcome, 0, sizeof(q->outcome));
		ret = ui_files_answer(conn, server.cfg.web_root, url, method, &q->response.status);
		q->outcome.status = q->response.status;
		q->state = REQ_ANSWERED;
		return ret;
	}
	if (q->info.ep == EP_OTHER)
		return answer_now(q, 404, "not_found", 0, "no such endpoint: %.200s (see docs/push.md)", url);
	if (q->info.ep == EP_READY || q->info.ep == EP_METRICS)
	{
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
			return answer_now(q, 405, "method_not_allowed", 0, "%s takes GET", url);
		return q->info.ep == EP_READY ? answer_ready(q) : answer_metrics(q);
	}
	if (q->info.ep == EP_API ? strcmp(method, "GET") != 0 : strcmp(method, "POST") != 0)
		return answer_now(q, 405, "method_not_allowed", 0, "%s takes %s", url, q->info.ep == EP_API ? "GET" : "POST");
	/*
	 * A parameter cut short could still parse (an application name, a
	 * time, a selector) as another one: the request is refused whole.
	 */
	if (q->info.args_cut)
	{
		if (q->info.cut_key[0])
			return answer_now(q, 414, "parameter_too_long", 0,
							  "the query parameter \"%s\" is longer than the server reads (%d bytes)",
							  q->info.cut_key, ARG_VALUE_MAX);
		return answer_now(q, 414, "parameter_too_long", 0,
						  "a query parameter's name is longer than 256 bytes, or there are more than %d parameters",
						  QUERY_MAX_ARGS);
	}
	if (atomic_load(&server.draining))
		return answer_now(q, 503, "shutting_down", 1, "the server is shutting down");

	/* credentials */
	authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (server.auth && auth_count(server.auth) > 0 && (authz || !server.cfg.allow_anonymous))
	{
		const char *role;

		switch (auth_check(server.auth, authz, &role, &q->who))
		{
			case AUTH_OK:
				q->info.role = role;
				break;
			case AUTH_NONE:
				return answer_now(q, 401, "unauthenticated", 0,
								  "credentials are required: Authorization: Bearer TOKEN, or Basic");
			case AUTH_MALFORMED:
				return answer_now(q, 401, "unauthenticated", 0,
								  "the Authorization header is neither Bearer TOKEN nor Basic base64(user:password)");
			case AUTH_UNKNOWN:
				return answer_now(q, 401, "unauthenticated", 0, "the credentials are not accepted");
		}
	}
	else if (server.cfg.allow_anonymous)
	{
		q->info.role = q->info.ep == EP_API ? server.cfg.anonymous_reader_role : server.cfg.anonymous_role;
		q->who = "anonymous";
	}
	else
		return answer_now(q, 401, "unauthenticated", 0, "credentials are required");

	/* size and load */
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl)
	{
		char	   *end;

		errno = 0;
		content_length = strtoull(cl, &end, 10);
		has_length = !errno && end != cl && !*end;
	}
	if (has_length && content_length > server.cfg.max_body_size)
		return answer_now(q, 413, "body_too_large", 0, "the request body (%llu bytes) is larger than the limit (%zu bytes)",
						  content_length, server.cfg.max_body_size);
	in_flight = atomic_fetch_add(&server.in_flight, 1) + 1;
	q->counted = true;
	if (in_flight > server.cfg.max_requests)
		return answer_now(q, 429, "too_many_requests", 1, "more than %d requests in flight: send again later",
						  server.cfg.max_requests);
	if (has_length && !reserve_body(q, (size_t) content_length))
		return answer_now(q, 503, "memory_limit", 1, "the server holds too many request bodies: send again later");
	buf_init(&q->body, server.cfg.max_body_size);
	return MHD_YES;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
		   const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	Req		   *q = *con_cls;

	if (!q)
	{
		q = calloc(1, sizeof(Req));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		return request_start(q, conn, url, method);
	}
	if (q->state == REQ_ANSWERED)
	{
		/* answered from the headers: what the client still sends is dropped */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (q->state == REQ_QUEUED)
		return send_response(q, &q->outcome);	/* resumed by its worker */

	if (*upload_data_size > 0)
	{
		size_t		n = *upload_data_size;

		*upload_data_size = 0;
		if (monotonic_seconds() - q->start > server.cfg.request_timeout)
		{
			log_msg("warn", "closing a connection from %s: its request took more than %d s to send",
					q->remote, server.cfg.request_timeout);
			return MHD_NO;
		}
		if (q->body.len + n > server.cfg.max_body_size)
			return answer_now(q, 413, "body_too_large", 0, "the request body is larger than the limit (%zu bytes)",
							  server.cfg.max_body_size) == MHD_YES ? MHD_YES : MHD_NO;
		while (q->body.len + n > q->reserved)
			if (!reserve_body(q, BODY_RESERVE_STEP))
				return answer_now(q, 503, "memory_limit", 1,
								  "the server holds too many request bodies: send again later") == MHD_YES ? MHD_YES : MHD_NO;
		q->received += n;
		if (!buf_append(&q->body, upload_data, n))
			return MHD_NO;
		return MHD_YES;
	}
	/* the whole body is here: to a worker (suspended first, so that its resume finds it so) */
	q->state = REQ_QUEUED;
	MHD_suspend_connection(conn);
	workers_enqueue(q);
	return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	Req		   *q = *con_cls;
	Outcome    *o;
	Buf			line;
	double		seconds;
	int			status;

	if (!q)
		return;
	*con_cls = NULL;
	o = &q->outcome;
	seconds = monotonic_seconds() - q->start;
	status = q->state == REQ_ANSWERED ? q->response.status : 499;
	if (q->state != REQ_ANSWERED)
		o->reason = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ? "client_timeout" : "client_disconnected";
	metrics_observe(q->info.ep, status, seconds, q->received,
					o->profiles, o->rows, o->reason);
	if (q->info.ep != EP_READY && q->info.ep != EP_METRICS && q->info.ep != EP_UI)
	{
		log_begin(&line, status >= 500 ? "error" : status >= 400 ? "warn" : "info", "request");
		log_field_str(&line, "method", q->method);
		log_field_str(&line, "path", q->info.path);
		log_field_int(&line, "status", status);
		log_field_num(&line, "seconds", seconds);
		log_field_str(&line, "remote", q->remote);
		log_field_str(&line, "user", q->who);
		log_field_str(&line, "role", q->info.role);
		log_field_str(&line, "tenant", q->info.tenant);
		log_field_int(&line, "bytes", (long long) q->received);
		log_field_int(&line, "profiles", (long long) o->profiles);
		log_field_int(&line, "rows", o->rows);
		if (o->reason)
		{
			log_field_str(&line, "reason", o->reason);
			log_field_str(&line, "error", o->message);
		}
		log_end(&line);
	}
	req_free(q);
}

/* host:port, [v6]:port or :port into an address; false with err */
static bool
parse_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
			 char *err, size_t errlen)
{
	char		host[256];
	const char *port;
	const char *colon = strrchr(listen, ':');
	struct addrinfo hints;
	struct addrinfo *ai = NULL;
	int			rc;

	if (!colon)
	{
		snprintf(err, errlen, "--listen %s: expected host:port, [v6]:port or :port", listen);
		return false;
	}
	port = colon + 1;
	if (listen[0] == '[' && colon > listen && colon[-1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int) (colon - listen - 2), listen + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int) (colon - listen), listen);
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (rc != 0 || !ai)
	{
		snprintf(err, errlen, "--listen %s: %s", listen, gai_strerror(rc));
		return false;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	if (ss->ss_family == AF_INET)
		*loopback = (ntohl(((struct sockaddr_in *) ss)->sin_addr.s_addr) >> 24) == 127;
	else
		*loopback = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *) ss)->sin6_addr);
	if (!host[0])
		*loopback = false;
	return true;
}

static char *
read_file(const char *path, char *err, size_t errlen)
{
	FILE	   *f = fopen(path, "r");
	Buf			b;
	char		chunk[4096];
	size_t		n;

	if (!f)
	{
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	buf_init(&b, 1024 * 1024);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_append(&b, chunk, n);
	fclose(f);
	if (b.failed)
	{
		snprintf(err, errlen, "%s is too large", path);
		buf_free(&b);
		return NULL;
	}
	return (char *) buf_release(&b, NULL);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char		msg[1024];
	size_t		n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	log_msg("warn", "libmicrohttpd: %s", msg);
}

static char *tls_cert_pem;
static char *tls_key_pem;

bool
http_start(char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t	sslen;
	bool		loopback;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
		MHD_USE_ERROR_LOG;

	if (!parse_listen(server.cfg.listen, &ss, &sslen, &loopback, err, errlen))
		return false;
	if (server.cfg.allow_anonymous && !loopback)
	{
		snprintf(err, errlen, "--allow-anonymous needs --listen on a loopback address (127.0.0.1, [::1]), not %s",
				 server.cfg.listen);
		return false;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (server.cfg.tls_cert)
	{
		flags |= MHD_USE_TLS;
		if (!(tls_cert_pem = read_file(server.cfg.tls_cert, err, errlen)) ||
			!(tls_key_pem = read_file(server.cfg.tls_key, err, errlen)))
			return false;
	}
	server.daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL,
									 MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
									 MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss,
									 MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
									 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) server.cfg.idle_timeout,
									 MHD_OPTION_CONNECTION_LIMIT, (unsigned int) server.cfg.max_connections,
									 MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) server.cfg.max_connections_per_ip,
									 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 64 * 1024,
									 tls_cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, tls_cert_pem,
									 MHD_OPTION_HTTPS_MEM_KEY, tls_key_pem,
									 MHD_OPTION_END);
	if (!server.daemon)
	{
		snprintf(err, errlen, "cannot listen on %s%s (in use, or the TLS certificate or key is not valid PEM)",
				 server.cfg.listen, server.cfg.tls_cert ? " with TLS" : "");
		return false;
	}
	return true;
}

void
http_quiesce(void)
{
	MHD_socket	fd = MHD_quiesce_daemon(server.daemon);

	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void
http_stop(void)
{
	if (server.daemon)
		MHD_stop_daemon(server.daemon);
	server.daemon = NULL;
	free(tls_cert_pem);
	if (tls_key_pem)
		memset(tls_key_pem, 0, strlen(tls_key_pem));
	free(tls_key_pem);
}
