/* responses.c: answers in each protocol's form (responses.h) */
#include "responses.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"

/* Connect's code for an HTTP status of ours, and the status Connect gives it */
static const char *
connect_code(int status, int *http_status)
{
	switch (status)
	{
		case 400:
		case 413:				/* too large: retrying will not help */
			*http_status = 400;
			return "invalid_argument";
		case 401:
			*http_status = 401;
			return "unauthenticated";
		case 403:
			*http_status = 403;
			return "permission_denied";
		case 404:
			*http_status = 404;
			return "unimplemented";
		case 415:
			*http_status = 415;
			return "invalid_argument";
		case 429:
			*http_status = 429;
			return "resource_exhausted";
		case 503:
			*http_status = 503;
			return "unavailable";
		case 504:
			*http_status = 504;
			return "deadline_exceeded";
		default:
			*http_status = status >= 500 ? 500 : 400;
			return status >= 500 ? "internal" : "invalid_argument";
	}
}

/* the google.rpc.Status code of an HTTP status */
static int
grpc_code(int status)
{
	switch (status)
	{
		case 400:
		case 413:
		case 415:
			return 3;			/* INVALID_ARGUMENT */
		case 401:
			return 16;			/* UNAUTHENTICATED */
		case 403:
			return 7;			/* PERMISSION_DENIED */
		case 404:
			return 12;			/* UNIMPLEMENTED */
		case 429:
			return 8;			/* RESOURCE_EXHAUSTED */
		case 503:
			return 14;			/* UNAVAILABLE */
		case 504:
			return 4;			/* DEADLINE_EXCEEDED */
		default:
			return 13;			/* INTERNAL */
	}
}

static bool
is_json(const char *content_type)
{
	return media_type_is(content_type, "application/json");
}

static void
put_varint(Buf *b, unsigned long long v)
{
	do
	{
		uint8_t		byte = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));

		buf_append(b, &byte, 1);
		v >>= 7;
	} while (v);
}

void
response_build(Endpoint ep, const char *request_content_type, const Outcome *o, Response *out)
{
	Buf			b;
	bool		ok = o->status >= 200 && o->status < 300;

	buf_init(&b, 0);
	out->status = o->status;
	out->content_disposition = NULL;
	switch (ep)
	{
		case EP_PUSH:
			if (ok)
			{
				/* an empty PushResponse */
				out->content_type = is_json(request_content_type) ? "application/json" : "application/proto";
				if (is_json(request_content_type))
					buf_puts(&b, "{}");
			}
			else
			{
				const char *code = connect_code(o->status, &out->status);

				out->content_type = "application/json";
				buf_printf(&b, "{\"code\":\"%s\",\"message\":", code);
				buf_json_string(&b, o->message, strlen(o->message));
				buf_puts(&b, "}");
			}
			break;
		case EP_OTLP:
			if (is_json(request_content_type))
			{
				out->content_type = "application/json";
				if (ok)
					buf_puts(&b, "{}");
				else
				{
					buf_printf(&b, "{\"code\":%d,\"message\":", grpc_code(o->status));
					buf_json_string(&b, o->message, strlen(o->message));
					buf_puts(&b, "}");
				}
			}
			else
			{
				/* an empty ExportProfilesServiceResponse, or a google.rpc.Status */
				out->content_type = "application/x-protobuf";
				if (!ok)
				{
					size_t		n = strlen(o->message);

					buf_append(&b, "\x08", 1);
					put_varint(&b, (unsigned long long) grpc_code(o->status));
					buf_append(&b, "\x12", 1);
					put_varint(&b, n);
					buf_append(&b, o->message, n);
				}
			}
			break;
		case EP_API:
			/* the web UI's API: {"error": ..., "reason": ...} */
			out->content_type = "application/json";
			if (!ok)
			{
				buf_puts(&b, "{\"error\":");
				buf_json_string(&b, o->message, strlen(o->message));
				buf_puts(&b, ",\"reason\":");
				buf_json_string(&b, o->reason ? o->reason : "", o->reason ? strlen(o->reason) : 0);
				buf_puts(&b, "}");
			}
			break;
		default:
			out->content_type = "text/plain; charset=utf-8";
			if (!ok)
			{
				buf_puts(&b, o->message);
				buf_puts(&b, "\n");
			}
			break;
	}
	out->body = (char *) buf_release(&b, &out->len);
}
