/* push_profile.c: the converters' list of profiles (push_profile.h) */
#include "push_profile.h"

#include <stdlib.h>
#include <string.h>

static void
pushed_profile_free(PushedProfile *pp)
{
	for (size_t k = 0; k < pp->nlabels; k++)
	{
		free(pp->labels[k].name);
		free(pp->labels[k].value);
	}
	free(pp->labels);
	free(pp->name);
	free(pp->pprof);
}

void
push_profiles_free(PushedProfiles *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		pushed_profile_free(&p->items[i]);
	free(p->items);
	p->items = NULL;
	p->n = 0;
}

bool
push_profiles_add(PushedProfiles *p, const char *name, const PushLabel *labels, size_t nlabels,
				  uint8_t *pprof, size_t pprof_len)
{
	PushedProfile pp = {0};
	PushedProfile *items;

	pp.pprof = pprof;
	pp.pprof_len = pprof_len;
	pp.name = strdup(name ? name : "");
	pp.labels = nlabels ? calloc(nlabels, sizeof(PushLabel)) : NULL;
	items = realloc(p->items, (p->n + 1) * sizeof(PushedProfile));
	if (items)
		p->items = items;
	if (!pp.name || (nlabels && !pp.labels) || !items)
		goto fail;
	for (size_t k = 0; k < nlabels; k++, pp.nlabels++)
	{
		pp.labels[k].name = strdup(labels[k].name);
		pp.labels[k].value = strdup(labels[k].value);
		if (!pp.labels[k].name || !pp.labels[k].value)
		{
			pp.nlabels++;
			goto fail;
		}
	}
	p->items[p->n++] = pp;
	return true;
fail:
	pushed_profile_free(&pp);
	return false;
}
