/*
 * A growable byte buffer with a ceiling: every append says whether it fit,
 * so that no input grows memory past what the caller allowed.
 */
#ifndef SERVER_BUF_H
#define SERVER_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
	size_t		limit;			/* the most len may reach; 0: no ceiling */
	bool		failed;			/* an append did not fit or memory ran out */
} Buf;

void		buf_init(Buf *b, size_t limit);
bool		buf_append(Buf *b, const void *data, size_t len);
bool		buf_puts(Buf *b, const char *s);
bool		buf_printf(Buf *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));
/* a JSON string literal of s (quotes included), bytes >= 0x80 passed through */
bool		buf_json_string(Buf *b, const char *s, size_t len);
/* hands the bytes over (NUL-terminated; the caller frees) and empties b */
uint8_t    *buf_release(Buf *b, size_t *len);
void		buf_free(Buf *b);

#endif
