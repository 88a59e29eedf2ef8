/*
 * labels.h
 *		Label sets: validation and building of the jsonb that names a series.
 */
#ifndef PARCA_LABELS_H
#define PARCA_LABELS_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

typedef struct LabelPair
{
	const char *name;
	const char *value;
} LabelPair;

/* True if name is a valid Prometheus label name. */
extern bool label_name_is_valid(const char *name);

/* A valid label name made from any string ('' when nothing is left). */
extern char *label_name_sanitize(const char *name);

/*
 * The pairs of a jsonb object of string values; errors name the problem.
 * what says whose labels these are, for messages.
 */
extern LabelPair *labels_from_jsonb(Jsonb *labels, int *npairs, const char *what);

/*
 * A jsonb object of the pairs; on a repeated name the earlier pair wins.
 */
extern Jsonb *labels_to_jsonb(LabelPair *pairs, int npairs);

#endif							/* PARCA_LABELS_H */
