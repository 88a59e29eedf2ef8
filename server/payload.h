/*
 * Bytes as a request carries them, made what the server reads: the body's
 * Content-Encoding undone, a gzipped profile inflated, each within the
 * request's limit, and failures as the HTTP answers they are.
 */
#ifndef SERVER_PAYLOAD_H
#define SERVER_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

/*
 * data inflated if it is gzip, else copied, into *out (the caller frees);
 * what names it in errors ("the profile").
 */
bool		payload_plain(const uint8_t *data, size_t len, size_t limit, const char *what,
						  uint8_t **out, size_t *out_len, Outcome *o);

/*
 * The body with its Content-Encoding (gzip or identity) undone: *out is
 * NULL when the body is already plain, else malloc'd.
 */
bool		payload_decode_body(const RequestInfo *r, uint8_t **out, size_t *out_len, Outcome *o);

#endif
