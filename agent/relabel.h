/*
 * relabel.h
 *		The label set of a sample, and the user's rules over it (in the
 *		spirit of Prometheus relabeling): which samples are kept and which
 *		labels become part of their series.
 *
 * Rules, applied in the order given (see docs/agent.md, "Labels"):
 *	 keep:NAME=~REGEX	keep only the samples whose label NAME matches
 *	 drop:NAME=~REGEX	drop the samples whose label NAME matches
 *	 labeldrop:REGEX	remove the labels whose names match
 *	 labelkeep:REGEX	remove the labels whose names do not match
 * Regexes are POSIX extended ones, anchored at both ends (as Prometheus
 * anchors them); a label a sample does not have matches as "".
 * --label-drop=a,b is labeldrop:a|b.
 */
#ifndef AGENT_RELABEL_H
#define AGENT_RELABEL_H

#include <stdbool.h>

#include "util.h"

/* Every label a sample can have: the agent's own and the --label ones. */
#define LABELSET_MAX 64

typedef struct Label
{
	const char *name;			/* a string that lives as long as the agent */
	const char *value;
} Label;

typedef struct LabelSet
{
	Label		labels[LABELSET_MAX];
	int			n;
} LabelSet;

/*
 * Add a label, or replace the value of the one of that name; an empty value
 * adds nothing (absent and empty are alike).
 */
extern void labelset_add(LabelSet *set, const char *name, const char *value);

/* The set as a JSON object, names in the order added. */
extern void labelset_json(const LabelSet *set, Buf *out);

/*
 * Parse a rule (above) and add it after the others; NULL on success, else
 * why it is not one.  keep and drop rules cannot name the label "unwind",
 * known only after the rules ran (samples they drop are not unwound).
 */
extern const char *relabel_add_rule(const char *rule);

/* --label-drop: a comma-separated list of label names; as relabel_add_rule. */
extern const char *relabel_add_drop_list(const char *names);

/* Apply the rules to the set; false when they drop the sample. */
extern bool relabel_apply(LabelSet *set);

/* Does a label of this name outlive the labeldrop and labelkeep rules? */
extern bool relabel_keeps_name(const char *name);

#endif							/* AGENT_RELABEL_H */
