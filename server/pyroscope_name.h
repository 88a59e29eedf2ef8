/*
 * The query parameters of Pyroscope's /ingest: the application name with
 * its tags (`app.cpu{env=prod,region=eu}`) and the times `from`/`until`.
 */
#ifndef SERVER_PYROSCOPE_NAME_H
#define SERVER_PYROSCOPE_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "labels.h"

#define APP_NAME_MAX 256

/*
 * Parses `name{key=value,...}` as Pyroscope's labelset.Parse does: the
 * name is [a-zA-Z0-9_.\-/]+ (spaces around it trimmed); tag names are
 * [a-zA-Z0-9_.]+ and values run to the next ',' or '}', trimmed.  A value
 * may also be written in double quotes, with \" \\ and \n escapes, to
 * hold ',' or '}' (an addition of ours).  Tags whose names start with
 * "__" (the SDKs' __session_id__) are left out, as their values change at
 * every start of a program and would make a new series each time.
 */
bool		pyroscope_parse_name(const char *text, char *app, size_t applen, LabelSet *tags,
								 char *err, size_t errlen);

/*
 * A time as Pyroscope's attime.Parse reads it, in nanoseconds since the
 * epoch: digits are seconds, or milliseconds, microseconds, nanoseconds
 * when they are 13, 16 or 19 digits long, or a date YYYYMMDD when 8;
 * "now" with an offset ("now-1h", "now-10min") is relative to now_ns.
 */
bool		pyroscope_parse_time(const char *text, int64_t now_ns, int64_t *out_ns);

#endif
