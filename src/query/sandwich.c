/*
 * sandwich.c
 *		parca_sandwich_callers() and parca_sandwich_callees(): the two
 *		halves of Parca's sandwich view of one function, each as the data
 *		frame of Grafana's flame graph panel.
 *
 * Only the stacks that contain the function count.  The callees tree is
 * each such stack from the function down to the leaf, re-rooted at the
 * function; the callers tree is the stack from the function up to the
 * root frame, inverted, so that the function is the root and its direct
 * callers are its children.  A recursive function appears several times
 * in a stack, but the stack is counted once: the callees start at its
 * outermost occurrence and the callers at its innermost, so the other
 * occurrences show inside the trees and both roots weigh the function's
 * cumulative value (parca_top's cum).
 */
#include "postgres.h"

#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "query/calltree.h"

/*
 * The tree of one side for the frames named `function`, or NULL when no
 * frame has that name.
 */
static CallTree *
sandwich_tree(const struct varlena *profile, const char *function, bool callers)
{
	ProfileReader r;
	ProfileSample s;
	Symbols    *syms = symbols_load(profile);
	int			name;
	CallTree   *t;
	int		   *names = NULL;
	int			cap = 0;
	int		   *path = NULL;
	int			path_cap = 0;
	uint64	   *ids;
	int			nids;

	profile_reader_init(&r, profile);
	if (r.meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the sandwich view takes a plain profile, not a diff")));
	/*
	 * Frame names are numbered as locations are named; a location the
	 * metastore lacks is named on first use, so name them all first.
	 */
	ids = profile_location_ids(profile, &nids);
	for (int i = 0; i < nids; i++)
		symbols_location(syms, ids[i]);
	name = string_table_find(&syms->names, function);
	if (name < 0)
		return NULL;
	t = calltree_create(syms, &r.meta, name);
	while (profile_reader_next(&r, &s))
	{
		int			n;
		int			at = -1;
		int			len = 0;

		CHECK_FOR_INTERRUPTS();
		n = calltree_sample_names(syms, &s, &names, &cap);
		/* callees from the outermost occurrence, callers from the innermost */
		for (int i = 0; i < n; i++)
			if (names[i] == name)
			{
				at = i;
				if (!callers)
					break;
			}
		if (at < 0)
			continue;
		if (!callers)
		{
			calltree_add_path(t, names + at + 1, n - at - 1, s.value, 0);
			continue;
		}
		if (at > path_cap)
		{
			path_cap = Max(at, path_cap * 2);
			path = path ? repalloc(path, sizeof(int) * path_cap) : palloc(sizeof(int) * path_cap);
		}
		for (int i = at - 1; i >= 0; i--)
			path[len++] = names[i];
		calltree_add_path(t, path, len, s.value, 0);
	}
	return t;
}

static void
sandwich_rows(FunctionCallInfo fcinfo, bool callers)
{
	const char *fname = callers ? "parca_sandwich_callers" : "parca_sandwich_callees";
	int			max_nodes = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT32(2);
	double		threshold = PG_ARGISNULL(3) ? 0 : PG_GETARG_FLOAT8(3);
	CallTree   *t;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		return;
	calltree_check_trim(max_nodes, threshold);
	t = sandwich_tree(PG_GETARG_PROFILE_P(0), text_to_cstring(PG_GETARG_TEXT_PP(1)), callers);
	if (t != NULL)
		calltree_icicle_rows(fcinfo, t, fname, max_nodes, threshold);
}

PG_FUNCTION_INFO_V1(parca_sandwich_callers);
PG_FUNCTION_INFO_V1(parca_sandwich_callees);

/*
 * parca_sandwich_callers(profile, function text, max_nodes int DEFAULT 0,
 *                        node_trim_threshold float8 DEFAULT 0)
 *   RETURNS TABLE(level, value, self, label)
 */
Datum
parca_sandwich_callers(PG_FUNCTION_ARGS)
{
	sandwich_rows(fcinfo, true);
	PG_RETURN_VOID();
}

/*
 * parca_sandwich_callees(profile, function text, max_nodes int DEFAULT 0,
 *                        node_trim_threshold float8 DEFAULT 0)
 *   RETURNS TABLE(level, value, self, label)
 */
Datum
parca_sandwich_callees(PG_FUNCTION_ARGS)
{
	sandwich_rows(fcinfo, false);
	PG_RETURN_VOID();
}
