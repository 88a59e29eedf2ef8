/*
 * relabel.c
 *		Label sets and relabeling rules; see relabel.h.
 *
 * labeldrop and labelkeep rules depend on label names only, and a sample's
 * label names come from a small fixed set, so each rule remembers its
 * answer per name (by the name's address: names are the agent's own
 * constant strings and the --label ones, each stored once).  keep and
 * drop rules match values, which vary, and run their regex every time.
 */
#include "relabel.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

typedef enum RuleAction
{
	RULE_KEEP,
	RULE_DROP,
	RULE_LABELDROP,
	RULE_LABELKEEP
} RuleAction;

/* A labeldrop/labelkeep rule's answer for one name. */
typedef struct NameAnswer
{
	const char *name;
	bool		matches;
} NameAnswer;

typedef struct Rule
{
	RuleAction	action;
	char	   *label;			/* keep, drop: the label whose value is matched */
	regex_t		re;
	NameAnswer	answers[LABELSET_MAX];
	int			nanswers;
} Rule;

static Rule *rules;
static int	nrules;

void
labelset_add(LabelSet *set, const char *name, const char *value)
{
	int			i = 0;

	if (value == NULL || value[0] == '\0')
		return;
	/* A name given twice keeps the last value (as jsonb would). */
	while (i < set->n && strcmp(set->labels[i].name, name) != 0)
		i++;
	if (i == LABELSET_MAX)
		return;
	set->labels[i].name = name;
	set->labels[i].value = value;
	if (i == set->n)
		set->n++;
}

void
labelset_json(const LabelSet *set, Buf *out)
{
	buf_append(out, "{", 1);
	for (int i = 0; i < set->n; i++)
	{
		if (i > 0)
			buf_append(out, ",", 1);
		buf_append(out, "\"", 1);
		buf_json_escape(out, set->labels[i].name);
		buf_append(out, "\":\"", 3);
		buf_json_escape(out, set->labels[i].value);
		buf_append(out, "\"", 1);
	}
	buf_append(out, "}", 2);	/* with the NUL */
}

/* Compile a regex anchored at both ends; false if it is not one. */
static bool
compile_anchored(regex_t *re, const char *text)
{
	Buf			anchored = {0};
	int			rc;

	buf_printf(&anchored, "^(%s)$", text);
	rc = regcomp(re, anchored.data, REG_EXTENDED | REG_NOSUB);
	buf_free(&anchored);
	return rc == 0;
}

/* Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]*. */
static bool
is_label_name(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
	{
		char		c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

const char *
relabel_add_rule(const char *text)
{
	Rule		r = {0};
	const char *colon = strchr(text, ':');
	size_t		alen = colon ? (size_t) (colon - text) : 0;
	const char *arg = colon ? colon + 1 : "";
	const char *regex = arg;

	if (alen == 4 && strncmp(text, "keep", 4) == 0)
		r.action = RULE_KEEP;
	else if (alen == 4 && strncmp(text, "drop", 4) == 0)
		r.action = RULE_DROP;
	else if (alen == 9 && strncmp(text, "labeldrop", 9) == 0)
		r.action = RULE_LABELDROP;
	else if (alen == 9 && strncmp(text, "labelkeep", 9) == 0)
		r.action = RULE_LABELKEEP;
	else
		return "a rule starts with keep:, drop:, labeldrop: or labelkeep:";
	if (r.action == RULE_KEEP || r.action == RULE_DROP)
	{
		const char *op = strstr(arg, "=~");

		if (op == NULL || !is_label_name(arg, (size_t) (op - arg)))
			return "keep and drop rules are NAME=~REGEX, NAME a label name";
		r.label = strndup(arg, (size_t) (op - arg));
		if (strcmp(r.label, "unwind") == 0)
		{
			free(r.label);
			return "keep and drop rules cannot use the unwind label, known only after them";
		}
		regex = op + 2;
	}
	if (!compile_anchored(&r.re, regex))
	{
		free(r.label);
		return "invalid regular expression";
	}
	rules = xrealloc(rules, (nrules + 1) * sizeof(Rule));
	rules[nrules++] = r;
	return NULL;
}

const char *
relabel_add_drop_list(const char *names)
{
	Buf			rule = {0};
	const char *err = NULL;

	buf_append(&rule, "labeldrop:", 10);
	for (const char *p = names; *p && err == NULL;)
	{
		size_t		len = strcspn(p, ",");

		if (!is_label_name(p, len))
			err = "--label-drop wants label names separated by commas";
		if (p != names)
			buf_append(&rule, "|", 1);
		buf_append(&rule, p, len);
		p += len + (p[len] == ',');
	}
	buf_append(&rule, "", 1);
	if (err == NULL)
		err = relabel_add_rule(rule.data);
	buf_free(&rule);
	return err;
}

/* Does the labeldrop/labelkeep rule's regex match this name? */
static bool
name_matches(Rule *r, const char *name)
{
	for (int i = 0; i < r->nanswers; i++)
		if (r->answers[i].name == name)
			return r->answers[i].matches;
	if (r->nanswers < LABELSET_MAX)
	{
		r->answers[r->nanswers].name = name;
		r->answers[r->nanswers].matches = regexec(&r->re, name, 0, NULL, 0) == 0;
		return r->answers[r->nanswers++].matches;
	}
	return regexec(&r->re, name, 0, NULL, 0) == 0;
}

static const char *
value_of(const LabelSet *set, const char *name)
{
	for (int i = 0; i < set->n; i++)
		if (strcmp(set->labels[i].name, name) == 0)
			return set->labels[i].value;
	return "";
}

bool
relabel_apply(LabelSet *set)
{
	for (int i = 0; i < nrules; i++)
	{
		Rule	   *r = &rules[i];
		int			kept = 0;

		switch (r->action)
		{
			case RULE_KEEP:
			case RULE_DROP:
				if ((regexec(&r->re, value_of(set, r->label), 0, NULL, 0) == 0) !=
					(r->action == RULE_KEEP))
					return false;
				break;
			case RULE_LABELDROP:
			case RULE_LABELKEEP:
				for (int j = 0; j < set->n; j++)
					if (name_matches(r, set->labels[j].name) == (r->action == RULE_LABELKEEP))
						set->labels[kept++] = set->labels[j];
				set->n = kept;
				break;
		}
	}
	return true;
}

bool
relabel_keeps_name(const char *name)
{
	for (int i = 0; i < nrules; i++)
		if ((rules[i].action == RULE_LABELDROP || rules[i].action == RULE_LABELKEEP) &&
			(regexec(&rules[i].re, name, 0, NULL, 0) == 0) !=
			(rules[i].action == RULE_LABELKEEP))
			return false;
	return true;
}
