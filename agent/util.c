/*
 * util.c
 *		Helpers shared by the agent's modules; see util.h.
 */
#define _GNU_SOURCE 1			/* process_vm_readv */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ids/ids.h"
#include "keyed_hash/keyed_hash.h"

static int	log_level = LOG_INFO;

void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "parca-agent: out of memory\n");
		abort();
	}
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
	{
		fprintf(stderr, "parca-agent: out of memory\n");
		abort();
	}
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (p == NULL)
	{
		fprintf(stderr, "parca-agent: out of memory\n");
		abort();
	}
	return p;
}

char *
xstrdup(const char *s)
{
	size_t		len = strlen(s);
	char	   *p = xmalloc(len + 1);

	memcpy(p, s, len + 1);
	return p;
}

void
log_set_level(int level)
{
	log_level = level;
}

bool
log_enabled(int level)
{
	return level <= log_level;
}

void
log_msg(int level, const char *fmt,...)
{
	static const char *const names[] = {"error", "warning", "info", "debug"};
	char		stamp[32];
	time_t		t = time(NULL);
	struct tm	tm;
	va_list		ap;

	if (level > log_level)
		return;
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(stderr, "%s parca-agent %s: ", stamp, names[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t
clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

uint64_t
now_monotonic_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t
now_realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

uint64_t
resident_memory(bool file_backed_only)
{
	static uint64_t page;
	char	   *text = read_file("/proc/self/statm", NULL);
	char	   *p = text;
	uint64_t	resident = 0;
	uint64_t	shared = 0;

	if (page == 0)
		page = (uint64_t) sysconf(_SC_PAGESIZE);
	/* "size resident shared ...", in pages */
	if (text)
	{
		strtoull(p, &p, 10);
		resident = strtoull(p, &p, 10);
		shared = strtoull(p, &p, 10);
	}
	free(text);
	return (file_backed_only ? shared : resident) * page;
}

char *
read_file(const char *path, size_t *lenp)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	Buf			b = {0};
	char		chunk[4096];

	if (fd < 0)
		return NULL;
	for (;;)
	{
		ssize_t		n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			close(fd);
			buf_free(&b);
			return NULL;
		}
		if (n == 0)
			break;
		buf_append(&b, chunk, (size_t) n);
	}
	close(fd);
	buf_append(&b, "", 1);
	if (lenp)
		*lenp = b.len - 1;
	return b.data;
}

void
buf_reserve(Buf *b, size_t extra)
{
	if (b->len + extra > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;

		while (cap < b->len + extra)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
}

void
buf_append(Buf *b, const void *data, size_t len)
{
	buf_reserve(b, len);
	if (len > 0)
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

void
buf_printf(Buf *b, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	buf_reserve(b, (size_t) n + 1);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

void
buf_put_be16(Buf *b, uint16_t v)
{
	unsigned char x[2] = {v >> 8, v};

	buf_append(b, x, 2);
}

void
buf_put_be32(Buf *b, uint32_t v)
{
	unsigned char x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char) (v >> (24 - 8 * i));
	buf_append(b, x, 4);
}

void
buf_put_be64(Buf *b, uint64_t v)
{
	unsigned char x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char) (v >> (56 - 8 * i));
	buf_append(b, x, 8);
}

/* Label values too are repaired into valid UTF-8 (parca_utf8_repair). */
void
buf_json_escape(Buf *b, const char *raw)
{
	char	   *copy;
	const char *s = parca_utf8_repair(raw, &copy);

	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
		{
			buf_append(b, "\\", 1);
			buf_append(b, s, 1);
		}
		else if (c < 0x20)
			buf_printf(b, "\\u%04x", c);
		else
			buf_append(b, s, 1);
	}
	free(copy);
}

void
buf_free(Buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

/*
 * U64Map: linear probing; a slot is empty when its value is NULL, so
 * values must not be NULL.  Removal shifts later entries of the probe run
 * back, so no tombstones are needed.  A key's first slot is its keyed hash:
 * keys are ids and hashes of what processes run (addresses, names in a
 * perf map), which a process of any user could choose to share low bits.
 */
static inline size_t
home_slot(uint64_t key, size_t mask)
{
	return keyed_hash_u64(key) & mask;
}

void *
u64map_get(const U64Map *m, uint64_t key)
{
	size_t		mask = m->cap - 1;

	if (m->cap == 0)
		return NULL;
	for (size_t i = home_slot(key, mask);; i = (i + 1) & mask)
	{
		if (m->values[i] == NULL)
			return NULL;
		if (m->keys[i] == key)
			return m->values[i];
	}
}

static void
u64map_grow(U64Map *m)
{
	U64Map		bigger = {0};

	bigger.cap = m->cap ? m->cap * 2 : 64;
	bigger.keys = xcalloc(bigger.cap, sizeof(uint64_t));
	bigger.values = xcalloc(bigger.cap, sizeof(void *));
	for (size_t i = 0; i < m->cap; i++)
		if (m->values[i])
			u64map_put(&bigger, m->keys[i], m->values[i]);
	free(m->keys);
	free(m->values);
	*m = bigger;
}

void *
u64map_put(U64Map *m, uint64_t key, void *value)
{
	size_t		mask;

	if ((m->count + 1) * 4 > m->cap * 3)
		u64map_grow(m);
	mask = m->cap - 1;
	for (size_t i = home_slot(key, mask);; i = (i + 1) & mask)
	{
		if (m->values[i] == NULL)
		{
			m->keys[i] = key;
			m->values[i] = value;
			m->count++;
			return NULL;
		}
		if (m->keys[i] == key)
		{
			void	   *old = m->values[i];

			m->values[i] = value;
			return old;
		}
	}
}

void *
u64map_remove(U64Map *m, uint64_t key)
{
	size_t		mask = m->cap - 1;
	size_t		i;
	void	   *old;

	if (m->cap == 0)
		return NULL;
	for (i = home_slot(key, mask);; i = (i + 1) & mask)
	{
		if (m->values[i] == NULL)
			return NULL;
		if (m->keys[i] == key)
			break;
	}
	old = m->values[i];
	m->values[i] = NULL;
	m->count--;
	/* Move back entries whose probe run passed through slot i. */
	for (size_t j = (i + 1) & mask; m->values[j] != NULL; j = (j + 1) & mask)
	{
		size_t		home = home_slot(m->keys[j], mask);

		if (((j - home) & mask) >= ((j - i) & mask))
		{
			m->keys[i] = m->keys[j];
			m->values[i] = m->values[j];
			m->values[j] = NULL;
			i = j;
		}
	}
	return old;
}

bool
u64map_next(const U64Map *m, size_t *pos, uint64_t *key, void **value)
{
	while (*pos < m->cap)
	{
		size_t		i = (*pos)++;

		if (m->values[i])
		{
			if (key)
				*key = m->keys[i];
			*value = m->values[i];
			return true;
		}
	}
	return false;
}

void
u64map_remove_if(U64Map *m, bool (*stale) (void *value, void *arg),
				 void (*free_value) (void *value, void *arg), void *arg)
{
	size_t		pos = 0;
	uint64_t	key;
	void	   *v;
	uint64_t   *keys = xcalloc(m->count, sizeof(uint64_t));
	size_t		n = 0;

	/* Keys first: removing moves entries within the table. */
	while (u64map_next(m, &pos, &key, &v))
		if (stale(v, arg))
			keys[n++] = key;
	for (size_t i = 0; i < n; i++)
		free_value(u64map_remove(m, keys[i]), arg);
	free(keys);
}

void
u64map_clear(U64Map *m)
{
	if (m->cap)
		memset(m->values, 0, m->cap * sizeof(void *));
	m->count = 0;
}

void
u64map_free(U64Map *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof(*m));
}

typedef struct StrEntry
{
	uint64_t	last_used;		/* the cache's epoch when last used */
	size_t		len;
	char		data[];
} StrEntry;

const char *
strcache_get(StrCache *c, uint64_t key)
{
	StrEntry   *e = u64map_get(&c->map, key);

	if (e == NULL)
		return NULL;
	e->last_used = c->epoch;
	return e->data;
}

const char *
strcache_put(StrCache *c, uint64_t key, const char *data, size_t len)
{
	StrEntry   *e = xmalloc(sizeof(StrEntry) + len + 1);
	StrEntry   *old;

	e->last_used = c->epoch;
	e->len = len;
	memcpy(e->data, data, len);
	e->data[len] = '\0';
	old = u64map_put(&c->map, key, e);
	if (old)
	{
		c->bytes -= sizeof(StrEntry) + old->len + 1;
		free(old);
	}
	c->bytes += sizeof(StrEntry) + len + 1;
	return e->data;
}

static bool
strentry_unused(void *v, void *arg)
{
	return ((StrEntry *) v)->last_used != ((StrCache *) arg)->epoch;
}

static bool
strentry_any(void *v, void *arg)
{
	return true;
}

static void
strentry_free(void *v, void *arg)
{
	((StrCache *) arg)->bytes -= sizeof(StrEntry) + ((StrEntry *) v)->len + 1;
	free(v);
}

void
strcache_trim(StrCache *c, size_t max_bytes)
{
	if (c->bytes > max_bytes)
		u64map_remove_if(&c->map, strentry_unused, strentry_free, c);
	if (c->bytes > max_bytes)
		u64map_remove_if(&c->map, strentry_any, strentry_free, c);
	c->epoch++;
}

bool
read_remote(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *) (uintptr_t) addr, len};

	return process_vm_readv((pid_t) pid, &local, 1, &remote, 1, 0) == (ssize_t) len;
}

uint32_t
status_namespace_pid(const char *status)
{
	const char *line = status ? strstr(status, "\nNSpid:") : NULL;
	const char *p;
	uint32_t	ns_pid = 0;

	if (line == NULL)
		return 0;
	p = line + 7;
	for (;;)
	{
		char	   *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		ns_pid = (uint32_t) v;
		p = end;
	}
	return ns_pid;
}
