/* Structured logs: one JSON object a line on stderr. */
#ifndef SERVER_LOG_H
#define SERVER_LOG_H

#include "buf.h"

/* starts a line with "ts", "level" and "msg"; add fields with log_field_* */
void		log_begin(Buf *line, const char *level, const char *msg);
void		log_field_str(Buf *line, const char *key, const char *value);
void		log_field_int(Buf *line, const char *key, long long value);
void		log_field_num(Buf *line, const char *key, double value);
/* closes the object, writes the line at once, frees it */
void		log_end(Buf *line);

/* a line with just a message */
void		log_msg(const char *level, const char *fmt,...) __attribute__((format(printf, 2, 3)));

#endif
