/*
 * http.c
 *		Scrapes as HTTP transfers on one libcurl multi handle.
 *
 * Every scrape is its own easy handle on the worker's multi handle, so a
 * slow target (a CPU profile takes a whole interval) never holds up the
 * others; each has its own timeout.  Connections are kept and reused
 * between scrapes of the same host.  libcurl tells which sockets to watch
 * (CURLMOPT_SOCKETFUNCTION) and when to call it back (CURLMOPT_TIMERFUNCTION);
 * the sockets sit in an epoll set, so a wake-up costs in proportion to the
 * sockets that are ready, not to the hundreds of CPU profiles that are
 * waiting out their interval.
 *
 * Memory: a response is buffered whole, because a pprof is ingested in one
 * transaction and a partial one must never be stored.  The buffer is
 * malloc'd (curl's callbacks must not raise PostgreSQL errors), sized from
 * Content-Length when the server sends it, grown by doubling otherwise, and
 * never beyond parca.max_profile_size: a larger response, announced or
 * streaming without end, is cut off at that size.  The buffer starts with
 * room for a varlena header, so the finished body is passed to SQL as a
 * bytea without another copy.  Gzip data whose trailer announces more than
 * parca.max_profile_size is refused before ingestion (ingestion itself
 * stops inflating at that size, for data that lies in its trailer).
 *
 * All response buffers together stay within parca.max_profile_size, but
 * for one transfer at a time (the "big" one), which may fill a buffer of
 * its own up to that size: at most twice parca.max_profile_size in all,
 * however many scrapes run at once.  A transfer that would need more is
 * paused (libcurl keeps the data it offered) until buffers are freed.
 *
 * Redirects: a target could send the worker anywhere its network position
 * reaches (a service on another port of the database server, say).  With
 * parca.scrape_redirects = same_origin (the default) the worker follows
 * itself, hop by hop, only redirects to the target URL's own scheme, host
 * and port; none follows none; any lets libcurl follow any to http(s).  At
 * most MAX_REDIRECTS are followed, all within the scrape's timeout.
 */
#include "postgres.h"

#include <sys/epoll.h>

#include <curl/curl.h>

#include "lib/ilist.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "scrape/scrape_internal.h"

struct ScrapeTransfer
{
	dlist_node	node;			/* in transfers */
	CURL	   *easy;
	ScrapeTarget *target;
	char	   *buf;			/* VARHDRSZ bytes of header room, then data */
	size_t		len;			/* data bytes */
	size_t		cap;			/* data bytes the buffer holds */
	size_t		max_bytes;		/* parca.max_profile_size when it started */
	bool		too_large;
	bool		out_of_memory;
	bool		paused;			/* waiting for buffer space */
	int			redirects;		/* followed so far */
	TimestampTz started;
	char		errbuf[CURL_ERROR_SIZE];
};

#define MAX_REDIRECTS 5

static CURLM *multi = NULL;
static int	nrunning = 0;		/* transfers added and not yet finished */
static dlist_head transfers = DLIST_STATIC_INIT(transfers);
static size_t buffered = 0;		/* bytes of all response buffers */
static ScrapeTransfer *big = NULL;	/* may exceed the shared budget */
static int	npaused = 0;
static int	epoll_fd = -1;
static TimestampTz curl_deadline = DT_NOEND;	/* when libcurl wants a call */

static int
socket_changed(CURL *easy, curl_socket_t sock, int what, void *arg, void *sockp)
{
	struct epoll_event ev = {0};

	if (what == CURL_POLL_REMOVE)
	{
		epoll_ctl(epoll_fd, EPOLL_CTL_DEL, sock, NULL);
		return 0;
	}
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
	ev.data.fd = sock;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, sock, &ev) != 0 && errno == ENOENT)
		epoll_ctl(epoll_fd, EPOLL_CTL_ADD, sock, &ev);
	return 0;
}

static int
timer_changed(CURLM *m, long timeout_ms, void *arg)
{
	if (timeout_ms < 0)
		curl_deadline = DT_NOEND;
	else
		curl_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	return 0;
}

void
scrape_http_init(void)
{
	if (curl_global_init(CURL_GLOBAL_ALL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not initialize libcurl")));
	multi = curl_multi_init();
	if (multi == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create a libcurl multi handle")));
	curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long) scrape_concurrency);
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_changed);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_changed);
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0)
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not create an epoll set: %m")));
}

int
scrape_http_running(void)
{
	return nrunning;
}

typedef enum
{
	RESERVE_OK,
	RESERVE_FAILED,
	RESERVE_LATER
} ReserveResult;

static ReserveResult
reserve(ScrapeTransfer *t, size_t need)
{
	size_t		cap;
	char	   *buf;

	if (need <= t->cap)
		return RESERVE_OK;
	cap = Max(t->cap * 2, Max(need, (size_t) 16384));
	cap = Min(cap, t->max_bytes);
	if (t != big && buffered + (cap - t->cap) > t->max_bytes)
	{
		if (big != NULL)
			return RESERVE_LATER;
		big = t;
	}
	buf = realloc(t->buf, VARHDRSZ + cap);
	if (buf == NULL)
	{
		t->out_of_memory = true;
		return RESERVE_FAILED;
	}
	buffered += cap - t->cap;
	t->buf = buf;
	t->cap = cap;
	return RESERVE_OK;
}

static size_t
write_body(char *data, size_t size, size_t nmemb, void *arg)
{
	ScrapeTransfer *t = arg;
	size_t		n = size * nmemb;
	ReserveResult r = RESERVE_OK;

	if (t->len + n > t->max_bytes)
	{
		t->too_large = true;
		return 0;
	}
	if (t->cap == 0)
	{
		curl_off_t	announced = -1;

		/* size the buffer once from Content-Length, when it is given */
		curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &announced);
		if (announced > 0)
			r = reserve(t, (size_t) announced);
	}
	if (r == RESERVE_OK)
		r = reserve(t, t->len + n);
	if (r == RESERVE_LATER)
	{
		t->paused = true;
		npaused++;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (r == RESERVE_FAILED)
		return 0;
	memcpy(t->buf + VARHDRSZ + t->len, data, n);
	t->len += n;
	return n;
}

/* Buffer space was freed: let paused transfers try again. */
static void
resume_paused(void)
{
	dlist_mutable_iter iter;

	if (npaused == 0)
		return;
	dlist_foreach_modify(iter, &transfers)
	{
		ScrapeTransfer *t = dlist_container(ScrapeTransfer, node, iter.cur);

		if (t->paused)
		{
			t->paused = false;
			npaused--;
			curl_easy_pause(t->easy, CURLPAUSE_CONT);
		}
	}
}

static void
transfer_free(ScrapeTransfer *t)
{
	curl_multi_remove_handle(multi, t->easy);
	curl_easy_cleanup(t->easy);
	dlist_delete(&t->node);
	if (t->paused)
		npaused--;
	if (big == t)
		big = NULL;
	if (t->buf != NULL)
	{
		free(t->buf);
		buffered -= t->cap;
		resume_paused();
	}
	pfree(t);
	nrunning--;
}

/* Start scraping a target (what can go wrong here is out of memory). */
void
scrape_http_start(ScrapeTarget *target, size_t max_bytes)
{
	ScrapeTransfer *t;
	CURL	   *easy = curl_easy_init();

	if (easy == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not create a libcurl handle")));
	t = MemoryContextAllocZero(TopMemoryContext, sizeof(ScrapeTransfer));
	t->easy = easy;
	t->target = target;
	t->max_bytes = max_bytes;
	t->started = GetCurrentTimestamp();

	curl_easy_setopt(easy, CURLOPT_URL, target->url);
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION,
					 (long) (scrape_redirects == SCRAPE_REDIRECTS_ANY));
	curl_easy_setopt(easy, CURLOPT_MAXREDIRS, (long) MAX_REDIRECTS);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) target->timeout_ms);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long) Min(target->timeout_ms, 10000));
	curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) max_bytes);
	curl_easy_setopt(easy, CURLOPT_USERAGENT, "parca-postgresql-scraper/0.1");
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, t);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->errbuf);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, t);

	if (curl_multi_add_handle(multi, easy) != CURLM_OK)
	{
		curl_easy_cleanup(easy);
		pfree(t);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not add a scrape of \"%s\" to libcurl", target->url)));
	}
	target->transfer = t;
	dlist_push_tail(&transfers, &t->node);
	nrunning++;
}

/* The target moved (the configuration was reloaded). */
void
scrape_http_retarget(ScrapeTransfer *transfer, ScrapeTarget *target)
{
	transfer->target = target;
}

/* Abandon a target's transfer (the target is going away). */
void
scrape_http_cancel(ScrapeTarget *target)
{
	if (target->transfer == NULL)
		return;
	transfer_free(target->transfer);
	target->transfer = NULL;
}

/*
 * Move the transfers along, waiting up to timeout_ms for network activity.
 * Signals interrupt the wait.
 */
void
scrape_http_wait(int timeout_ms)
{
	struct epoll_event events[64];
	int			still;
	int			n;
	TimestampTz now = GetCurrentTimestamp();

	if (curl_deadline != DT_NOEND)
		timeout_ms = (int) Min(timeout_ms, (Max(curl_deadline - now, 0) + 999) / 1000);
	n = epoll_wait(epoll_fd, events, lengthof(events), timeout_ms);
	for (int i = 0; i < n; i++)
	{
		int			flags = 0;

		if (events[i].events & EPOLLIN)
			flags |= CURL_CSELECT_IN;
		if (events[i].events & EPOLLOUT)
			flags |= CURL_CSELECT_OUT;
		if (events[i].events & (EPOLLERR | EPOLLHUP))
			flags |= CURL_CSELECT_ERR;
		curl_multi_socket_action(multi, events[i].data.fd, flags, &still);
	}
	if (curl_deadline != DT_NOEND && GetCurrentTimestamp() >= curl_deadline)
	{
		curl_deadline = DT_NOEND;
		curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &still);
	}
}

/* Whether gzip data announces (in its trailer) more than the size limit. */
static bool
gzip_too_large(const unsigned char *data, size_t len, size_t max_bytes, uint32 *announced)
{
	if (len < 18 || data[0] != 0x1f || data[1] != 0x8b)
		return false;
	*announced = (uint32) data[len - 4] | ((uint32) data[len - 3] << 8) |
		((uint32) data[len - 2] << 16) | ((uint32) data[len - 1] << 24);
	return *announced > max_bytes;
}

/* Whether two URLs have the same scheme, host and port. */
static bool
same_origin(const char *a, const char *b)
{
	static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
	CURLU	   *ua = curl_url();
	CURLU	   *ub = curl_url();
	bool		same = ua != NULL && ub != NULL &&
		curl_url_set(ua, CURLUPART_URL, a, 0) == CURLUE_OK &&
		curl_url_set(ub, CURLUPART_URL, b, 0) == CURLUE_OK;

	for (int i = 0; i < lengthof(parts) && same; i++)
	{
		char	   *x = NULL;
		char	   *y = NULL;
		unsigned int flags = parts[i] == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0;

		same = curl_url_get(ua, parts[i], &x, flags) == CURLUE_OK &&
			curl_url_get(ub, parts[i], &y, flags) == CURLUE_OK &&
			pg_strcasecmp(x, y) == 0;
		curl_free(x);
		curl_free(y);
	}
	curl_url_cleanup(ua);
	curl_url_cleanup(ub);
	return same;
}

/*
 * A redirect the transfer got (libcurl did not follow it): follow it on
 * the same handle if parca.scrape_redirects allows, within the scrape's
 * timeout, and return true; otherwise say why in error and return false.
 */
static bool
follow_redirect(ScrapeTransfer *t, const char *location, char *error, size_t errlen)
{
	int64		left_ms = t->target->timeout_ms -
		(GetCurrentTimestamp() - t->started) / 1000;

	if (scrape_redirects == SCRAPE_REDIRECTS_NONE ||
		!same_origin(t->target->url, location))
	{
		snprintf(error, errlen, "redirect to \"%s\" not followed (parca.scrape_redirects = %s)",
				 location, scrape_redirects == SCRAPE_REDIRECTS_NONE ? "none" : "same_origin");
		return false;
	}
	if (t->redirects == MAX_REDIRECTS)
	{
		snprintf(error, errlen, "more than %d redirects", MAX_REDIRECTS);
		return false;
	}
	if (left_ms <= 0)
	{
		snprintf(error, errlen, "timeout after %lld ms", (long long) t->target->timeout_ms);
		return false;
	}
	curl_multi_remove_handle(multi, t->easy);
	curl_easy_setopt(t->easy, CURLOPT_URL, location);
	curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long) left_ms);
	t->redirects++;
	t->len = 0;
	if (curl_multi_add_handle(multi, t->easy) != CURLM_OK)
	{
		snprintf(error, errlen, "could not follow a redirect to \"%s\"", location);
		return false;
	}
	return true;
}

/*
 * The next finished scrape, or NULL.  On success result->body holds the
 * response (free it with scrape_http_result_free); otherwise
 * result->error says why.
 */
ScrapeTarget *
scrape_http_next_done(ScrapeResult *result)
{
	CURLMsg    *msg;
	int			queued;

	while ((msg = curl_multi_info_read(multi, &queued)) != NULL)
	{
		ScrapeTransfer *t;
		ScrapeTarget *target;
		long		status = 0;
		uint32		announced;
		char	   *location = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **) &t);
		target = t->target;
		memset(result, 0, sizeof(*result));
		result->duration_us = GetCurrentTimestamp() - t->started;
		curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &location);

		if (t->too_large || msg->data.result == CURLE_FILESIZE_EXCEEDED)
			snprintf(result->error, sizeof(result->error),
					 "response larger than parca.max_profile_size (%zu bytes)",
					 t->max_bytes);
		else if (t->out_of_memory)
			snprintf(result->error, sizeof(result->error),
					 "out of memory buffering the response");
		else if (msg->data.result == CURLE_OPERATION_TIMEDOUT)
			snprintf(result->error, sizeof(result->error),
					 "timeout after %lld ms", (long long) target->timeout_ms);
		else if (msg->data.result != CURLE_OK)
			snprintf(result->error, sizeof(result->error), "%s",
					 t->errbuf[0] ? t->errbuf : curl_easy_strerror(msg->data.result));
		else if (location != NULL && status >= 300 && status < 400)
		{
			/* the handle owns location until its URL changes */
			location = pstrdup(location);
			if (follow_redirect(t, location, result->error, sizeof(result->error)))
				continue;
		}
		else if (status != 200)
			snprintf(result->error, sizeof(result->error),
					 "server returned HTTP status %ld", status);
		else if (t->len == 0)
			snprintf(result->error, sizeof(result->error), "empty response");
		else if (gzip_too_large((unsigned char *) t->buf + VARHDRSZ, t->len, t->max_bytes,
								&announced))
			snprintf(result->error, sizeof(result->error),
					 "gzip response would inflate to %u bytes, more than parca.max_profile_size (%zu bytes)",
					 announced, t->max_bytes);
		else
		{
			SET_VARSIZE(t->buf, VARHDRSZ + t->len);
			result->body = (struct varlena *) t->buf;
			result->buffered = t->cap;
			t->buf = NULL;
		}
		target->transfer = NULL;
		transfer_free(t);
		return target;
	}
	return NULL;
}

void
scrape_http_result_free(ScrapeResult *result)
{
	if (result->body == NULL)
		return;
	free(result->body);
	result->body = NULL;
	buffered -= result->buffered;
	resume_paused();
}
