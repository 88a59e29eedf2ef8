/*
 * Label sets of a pushed profile: what the request names (the app name's
 * tags, the tenant) and what a converter adds, checked and made into the
 * jsonb argument of parca_ingest_pprof.
 */
#ifndef SERVER_LABELS_H
#define SERVER_LABELS_H

#include <stdbool.h>
#include <stddef.h>

#define LABELS_MAX 64			/* per profile */
#define LABEL_NAME_MAX 128		/* bytes */
#define LABEL_VALUE_MAX 1024	/* bytes */

typedef struct Label
{
	char	   *name;
	char	   *value;
} Label;

typedef struct LabelSet
{
	Label		items[LABELS_MAX];
	size_t		n;
} LabelSet;

void		labelset_init(LabelSet *ls);
void		labelset_free(LabelSet *ls);
bool		labelset_copy(LabelSet *dst, const LabelSet *src);

/*
 * Adds name=value; a name already there keeps its value unless overwrite.
 * The name is made a Prometheus label name (label_name_sanitize); an empty
 * value removes the label, as an empty value means no label in Prometheus.
 * False with err when the label is not text or too long, or the set is full.
 */
bool		labelset_set(LabelSet *ls, const char *name, const char *value, bool overwrite,
						 char *err, size_t errlen);
const char *labelset_get(const LabelSet *ls, const char *name);

/* {"name": "value", ...} (malloc'd) */
char	   *labelset_json(const LabelSet *ls);

/*
 * Writes name as a Prometheus label name into out: each byte outside
 * [a-zA-Z0-9_] becomes '_' (OpenTelemetry's `service.name` is
 * `service_name`), and a leading digit gets a '_' before it.
 */
void		label_name_sanitize(const char *name, char *out, size_t outlen);

bool		utf8_valid(const char *s, size_t len);

#endif
