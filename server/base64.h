/* Base64 (RFC 4648), the standard and the URL-safe alphabet, padding optional. */
#ifndef SERVER_BASE64_H
#define SERVER_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* decodes into out (room for outlen bytes); false if not base64 or too long */
bool		base64_decode(const char *in, size_t len, uint8_t *out, size_t outlen, size_t *written);

#endif
