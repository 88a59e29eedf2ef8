/* pushed.c: converted profiles into the batch (pushed.h) */
#include "pushed.h"

#include <stdio.h>

bool
pushed_to_batch(const RequestInfo *r, const LabelSet *base, PushedProfiles *profiles,
				StoreBatch *batch, Outcome *o)
{
	char		err[256];

	for (size_t i = 0; i < profiles->n; i++)
	{
		PushedProfile *pp = &profiles->items[i];
		LabelSet	labels;
		bool		ok;

		if (base && !labelset_copy(&labels, base))
		{
			outcome_fail(o, 503, "out_of_memory", "out of memory");
			return false;
		}
		if (!base)
			labelset_init(&labels);
		ok = true;
		for (size_t k = 0; ok && k < pp->nlabels; k++)
			if (!labelset_set(&labels, pp->labels[k].name, pp->labels[k].value, false, err, sizeof(err)))
			{
				outcome_fail(o, 400, "bad_labels", "profile %zu (%.64s): %s", i + 1,
							 pp->name ? pp->name : "?", err);
				ok = false;
			}
		ok = ok && request_labels(r, &labels, o);
		if (ok && (!pp->name || !*pp->name))
		{
			outcome_fail(o, 400, "invalid_profile", "profile %zu has no name", i + 1);
			ok = false;
		}
		if (ok)
		{
			ok = batch_add(batch, pp->name, &labels, pp->pprof, pp->pprof_len, o);
			pp->pprof = NULL;	/* the batch's now, or freed */
		}
		labelset_free(&labels);
		if (!ok)
			return false;
	}
	return true;
}
