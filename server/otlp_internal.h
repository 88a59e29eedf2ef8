/*
 * otlp_internal.h
 *		What the OTLP converter's files share (otlp.c: a request to pprof
 *		profiles; otlp_json.c: OTLP/JSON decoded into protobuf-c's
 *		structures): the converter's state.
 */
#ifndef SERVER_OTLP_INTERNAL_H
#define SERVER_OTLP_INTERNAL_H

#include "otlp.h"
#include "otlp.pb-c.h"
#include "profile_builder.h"

typedef Parca__Otlp__ExportProfilesServiceRequest Request;
typedef Parca__Otlp__ProfilesDictionary Dictionary;
typedef Parca__Otlp__AnyValue AnyValue;
typedef Parca__Otlp__KeyValue KeyValue;

typedef struct Otlp
{
	PushConv	conv;			/* the budget, and the error ("OTLP profiles: ...") */
	PushArena  *arena;			/* the JSON request's structures */
	const Dictionary *dict;
	/* the profile being converted: dictionary index -> builder id, 0 not yet */
	uint64_t   *loc_ids;
	uint64_t   *mapping_ids;
	uint64_t   *function_ids;
	uint64_t   *locs;
	PbLine	   *lines;
	size_t		cap_lines;
} Otlp;

/*
 * An OTLP/JSON request decoded into the structures protobuf-c makes of the
 * protobuf one, in o->arena; NULL on failure (o->conv says why).
 */
extern Request *otlp_request_from_json(Otlp *o, const uint8_t *data, size_t len);

#endif							/* SERVER_OTLP_INTERNAL_H */
