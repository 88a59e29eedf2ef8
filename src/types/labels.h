/*
 * labels.h
 *		Label sets: validation and building of the jsonb that names a series.
 */
#ifndef PARCA_LABELS_H
#define PARCA_LABELS_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/array.h"
#include "utils/jsonb.h"

/*
 * The largest label set, as jsonb: the unique index of parca.series holds
 * one compressed in 2.7 kB, which no text longer than some 250 kB fits, so
 * that no larger set is ever stored.
 */
#define LABELS_MAX_BYTES (1024 * 1024)

typedef struct LabelPair
{
	const char *name;
	const char *value;
} LabelPair;

/* True if name is a valid Prometheus label name. */
extern bool label_name_is_valid(const char *name);

/* An error unless name is a valid label name; what says where it was given. */
extern void label_name_validate(const char *name, const char *what);

/*
 * The longest label name a query may name (group_by, sum_by): every group
 * a query makes holds each name, so a long one would be held once a group.
 */
#define LABEL_NAME_QUERY_MAX 1024

/*
 * The label names of a text[] (NULLs left out) as a List of C strings:
 * at most max elements, counted before any is read, each a valid name of
 * at most LABEL_NAME_QUERY_MAX bytes.
 */
extern List *label_names_from_array(ArrayType *names, int max, const char *what);

/* A valid label name made from any string ('' when nothing is left). */
extern char *label_name_sanitize(const char *name);

/*
 * The pairs of a jsonb object of string values, of at most
 * LABELS_MAX_BYTES; errors name the problem.  what says whose labels these
 * are, for messages.
 */
extern LabelPair *labels_from_jsonb(Jsonb *labels, int *npairs, const char *what);

/*
 * A jsonb object of the pairs; on a repeated name the earlier pair wins.
 */
extern Jsonb *labels_to_jsonb(LabelPair *pairs, int npairs);

#endif							/* PARCA_LABELS_H */
