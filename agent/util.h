/*
 * util.h
 *		Small helpers shared by the agent's modules: allocation that
 *		aborts on failure, logging, a growable byte buffer and a hash map
 *		from 64-bit keys to pointers.
 */
#ifndef AGENT_UTIL_H
#define AGENT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern void *xmalloc(size_t size);
extern void *xcalloc(size_t n, size_t size);
extern void *xrealloc(void *p, size_t size);
extern char *xstrdup(const char *s);

/* Log levels: messages above the level set with log_set_level are dropped. */
enum
{
	LOG_ERROR,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG
};
extern void log_set_level(int level);
extern bool log_enabled(int level);
extern void log_msg(int level, const char *fmt,...) __attribute__((format(printf, 2, 3)));

/* Nanoseconds from CLOCK_MONOTONIC and CLOCK_REALTIME. */
extern uint64_t now_monotonic_ns(void);
extern uint64_t now_realtime_ns(void);

/*
 * The agent's resident memory in bytes (/proc/self/statm): all of it, or
 * only its file-backed (and shared) pages.
 */
extern uint64_t resident_memory(bool file_backed_only);

/* Read a whole (small) file, NUL-terminated; NULL if it cannot be read. */
extern char *read_file(const char *path, size_t *len);
/*
 * The last pid of the NSpid line of a /proc/PID/status text: the pid the
 * process knows itself by, in its own pid namespace; 0 without one.
 */
extern uint32_t status_namespace_pid(const char *status);

/* Read len bytes at addr of process pid's memory (process_vm_readv); false unless all. */
extern bool read_remote(uint32_t pid, uint64_t addr, void *buf, size_t len);

/* A growable byte buffer. */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

/* Make room for extra more bytes. */
extern void buf_reserve(Buf *b, size_t extra);
extern void buf_append(Buf *b, const void *data, size_t len);
extern void buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void buf_put_be16(Buf *b, uint16_t v);
extern void buf_put_be32(Buf *b, uint32_t v);
extern void buf_put_be64(Buf *b, uint64_t v);
/* Append s as the body of a JSON string (no quotes added). */
extern void buf_json_escape(Buf *b, const char *s);
extern void buf_free(Buf *b);

/*
 * A hash map from 64-bit keys to pointers (open addressing), hashed with a
 * key random per process (keyed_hash.h): its order of iteration differs
 * from run to run.
 */
typedef struct U64Map
{
	uint64_t   *keys;
	void	  **values;
	size_t		cap;			/* a power of two, or 0 */
	size_t		count;
} U64Map;

extern void *u64map_get(const U64Map *m, uint64_t key);
/* Insert or replace; returns the previous value or NULL. */
extern void *u64map_put(U64Map *m, uint64_t key, void *value);
/* Remove; returns the value removed or NULL. */
extern void *u64map_remove(U64Map *m, uint64_t key);
/* Iterate: start with *pos = 0; returns false when done. */
extern bool u64map_next(const U64Map *m, size_t *pos, uint64_t *key, void **value);
/*
 * Remove the entries for which stale(value, arg) is true, handing each
 * removed value to free_value(value, arg).
 */
extern void u64map_remove_if(U64Map *m, bool (*stale) (void *value, void *arg),
							 void (*free_value) (void *value, void *arg), void *arg);
/* Forget every entry (the values are the caller's). */
extern void u64map_clear(U64Map *m);
extern void u64map_free(U64Map *m);

/*
 * A cache of byte strings by 64-bit key, bounded in bytes: strcache_trim
 * (at every flush) forgets the entries not used since the previous trim
 * when the cache holds more than its bound, and everything if that is not
 * enough.
 */
typedef struct StrCache
{
	U64Map		map;
	size_t		bytes;
	uint64_t	epoch;			/* trims so far */
} StrCache;

/* The string stored under key (marked used), or NULL. */
extern const char *strcache_get(StrCache *c, uint64_t key);
/* Store len bytes (a NUL is added) under key; returns the stored copy. */
extern const char *strcache_put(StrCache *c, uint64_t key, const char *data, size_t len);
extern void strcache_trim(StrCache *c, size_t max_bytes);

#endif							/* AGENT_UTIL_H */
