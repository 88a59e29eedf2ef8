/* log.c: structured logs (log.h) */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

void
log_begin(Buf *line, const char *level, const char *msg)
{
	struct timeval tv;
	struct tm	tm;
	char		ts[64];

	buf_init(line, 64 * 1024);
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	buf_printf(line, "{\"ts\":\"%s.%03dZ\",\"level\":\"%s\",\"msg\":", ts, (int) (tv.tv_usec / 1000), level);
	buf_json_string(line, msg, strlen(msg));
}

void
log_field_str(Buf *line, const char *key, const char *value)
{
	if (!value)
		return;
	buf_printf(line, ",\"%s\":", key);
	buf_json_string(line, value, strlen(value));
}

void
log_field_int(Buf *line, const char *key, long long value)
{
	buf_printf(line, ",\"%s\":%lld", key, value);
}

void
log_field_num(Buf *line, const char *key, double value)
{
	buf_printf(line, ",\"%s\":%.3f", key, value);
}

void
log_end(Buf *line)
{
	buf_append(line, "}\n", 2);
	if (line->failed)
	{
		buf_free(line);
		log_begin(line, "error", "log line too long");
		buf_append(line, "}\n", 2);
	}
	/* one write, so that lines of several threads do not mix */
	if (write(STDERR_FILENO, line->data, line->len) < 0)
	{
		/* nowhere left to say it */
	}
	buf_free(line);
}

void
log_msg(const char *level, const char *fmt,...)
{
	char		msg[2048];
	va_list		ap;
	Buf			line;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_begin(&line, level, msg);
	log_end(&line);
}
