/*
 * A bound on what parsing a JSON text costs: json-c makes an object of
 * every value (some hundred bytes each) and has no allocator to charge, so
 * a text of a few MB of `1,1,1,...` would take hundreds of MB.  The values
 * are counted first, without allocating.
 */
#ifndef SERVER_JSON_LIMITS_H
#define SERVER_JSON_LIMITS_H

#include <stdbool.h>
#include <stddef.h>

#define JSON_MAX_VALUES 65536

/* whether the text has at most max_values values (an upper bound is counted) */
bool		json_values_within(const char *text, size_t len, size_t max_values);

#endif
