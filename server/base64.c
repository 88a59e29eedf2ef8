/* base64.c: decoding base64 (base64.h) */
#include "base64.h"

static int
b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

bool
base64_decode(const char *in, size_t len, uint8_t *out, size_t outlen, size_t *written)
{
	size_t		n = 0;
	unsigned	acc = 0;
	int			bits = 0;
	size_t		i = 0;

	for (; i < len && in[i] != '='; i++)
	{
		int			v = b64_value((unsigned char) in[i]);

		if (v < 0)
			return false;
		acc = ((acc << 6) | (unsigned) v) & 0xffffff;
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			if (n >= outlen)
				return false;
			out[n++] = (uint8_t) ((acc >> bits) & 0xff);
		}
	}
	for (; i < len; i++)
		if (in[i] != '=')
			return false;
	if (bits >= 6)
		return false;			/* a lone character cannot end the text */
	*written = n;
	return true;
}
