/*
 * callgraph.c
 *		The call graph of a profile, as go tool pprof draws it:
 *		parca_callgraph_nodes(), parca_callgraph_edges() (the two frames of
 *		Grafana's Node graph panel) and parca_callgraph_dot() (Graphviz).
 *
 * A node is a function (unsymbolized frames merged per binary, as in
 * parca_top), with flat (stacks whose leaf it is) and cum (stacks through
 * it, once per stack).  An edge caller -> callee weighs the stacks in
 * which the callee is called by the caller, once per stack.  Trimming is
 * pprof's: the nodes whose cum is below node_fraction of the total are
 * dropped first and the graph is made again from the stacks without them,
 * so that a kept caller and callee with dropped frames between them get a
 * "residual" edge (drawn dotted); a stack whose leaf was dropped gives no
 * flat; then the edges lighter than edge_fraction of the total go.
 */
#include "postgres.h"

#include <math.h>

#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "types/profile.h"
#include "query/symbols.h"

typedef struct GraphEdge
{
	int			src;
	int			dst;
	int64		weight;
	bool		residual;
} GraphEdge;

typedef struct Graph
{
	Symbols    *syms;
	int			nnames;
	int64		total;
	bool	   *kept;			/* per name */
	int64	   *flat;			/* per name */
	int64	   *cum;			/* per name */
	HTAB	   *edges;			/* (src, dst) -> GraphEdge */
} Graph;

typedef struct EdgeKey
{
	int			src;
	int			dst;
} EdgeKey;

typedef struct EdgeEntry
{
	EdgeKey		key;
	GraphEdge	edge;
	int64		seen_in;		/* the last stack that counted it */
} EdgeEntry;

/* The pprof names of a sample, root first, into *names. */
static int
sample_names(Symbols *syms, const ProfileSample *s, int **names, int *cap)
{
	int			n = 0;

	for (int i = s->nframes - 1; i >= 0; i--)
	{
		const SymLocation *loc = symbols_location(syms, profile_sample_frame(s, i));
		int			k = loc->top_names == loc->frames ? loc->nframes : 1;

		if (n + k > *cap)
		{
			*cap = Max(*cap * 2, n + k);
			*names = *names ? repalloc(*names, sizeof(int) * *cap) : palloc(sizeof(int) * *cap);
		}
		for (int j = k - 1; j >= 0; j--)
			(*names)[n++] = loc->top_names[j];
	}
	return n;
}

/*
 * One pass over the stacks: cum (and flat, edges) of the kept names.  With
 * all names kept it is the complete graph.
 */
static void
graph_pass(Graph *g, const struct varlena *profile, bool with_edges)
{
	ProfileReader r;
	ProfileSample s;
	int		   *names = NULL;
	int			cap = 0;
	int64	   *seen = palloc(sizeof(int64) * g->nnames);
	int64		stack = 0;

	for (int i = 0; i < g->nnames; i++)
		seen[i] = -1;
	profile_reader_init(&r, profile);
	while (profile_reader_next(&r, &s))
	{
		int			n = sample_names(g->syms, &s, &names, &cap);
		int			parent = -1;
		bool		residual = false;

		CHECK_FOR_INTERRUPTS();
		stack++;
		profile_value_add(&g->total, s.value);
		for (int i = 0; i < n; i++)
		{
			int			name = names[i];

			if (!g->kept[name])
			{
				residual = true;
				continue;
			}
			if (seen[name] != stack)
			{
				seen[name] = stack;
				profile_value_add(&g->cum[name], s.value);
			}
			if (with_edges && parent >= 0 && parent != name)
			{
				EdgeKey		key = {parent, name};
				bool		found;
				EdgeEntry  *e = hash_search(g->edges, &key, HASH_ENTER, &found);

				if (!found)
				{
					e->edge.src = parent;
					e->edge.dst = name;
					e->edge.weight = 0;
					e->edge.residual = false;
					e->seen_in = -1;
				}
				if (e->seen_in != stack)
				{
					e->seen_in = stack;
					profile_value_add(&e->edge.weight, s.value);
					e->edge.residual |= residual;
				}
			}
			parent = name;
			residual = false;
		}
		if (parent >= 0 && !residual)
			profile_value_add(&g->flat[parent], s.value);
	}
}

static void
check_fraction(double f, const char *what)
{
	if (!(f >= 0 && f <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is a fraction of the total, from 0 to 1", what)));
}

/* The trimmed graph of a plain profile; edges lighter than the cut are left in, marked by weight. */
static Graph *
graph_build(const struct varlena *profile, double node_fraction)
{
	Graph	   *g = palloc0(sizeof(Graph));
	HASHCTL		ctl;
	ProfileReader r;
	int			nids;
	uint64	   *ids;
	int64		cutoff;

	profile_reader_init(&r, profile);
	if (r.meta.is_diff)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the call graph takes a plain profile, not a diff")));
	g->syms = symbols_load(profile);
	/* every location named now, so that the names are all numbered */
	ids = profile_location_ids(profile, &nids);
	for (int i = 0; i < nids; i++)
		symbols_location(g->syms, ids[i]);
	g->nnames = Max(g->syms->names.n, 1);
	g->kept = palloc(sizeof(bool) * g->nnames);
	g->flat = palloc0(sizeof(int64) * g->nnames);
	g->cum = palloc0(sizeof(int64) * g->nnames);
	memset(g->kept, true, sizeof(bool) * g->nnames);

	/* the complete graph's cum values decide which nodes stay */
	graph_pass(g, profile, false);
	cutoff = (int64) ((double) g->total * node_fraction);
	for (int i = 0; i < g->nnames; i++)
	{
		g->kept[i] = g->cum[i] != 0 && Abs(g->cum[i]) >= cutoff;
		g->cum[i] = 0;
		g->flat[i] = 0;
	}
	g->total = 0;

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(EdgeKey);
	ctl.entrysize = sizeof(EdgeEntry);
	ctl.hcxt = CurrentMemoryContext;
	g->edges = hash_create("parca call graph edges", 1024, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	graph_pass(g, profile, true);
	return g;
}

static const Graph *sort_graph;

/* Nodes by cum, heaviest first, then by name. */
static int
cmp_nodes(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	if (sort_graph->cum[x] != sort_graph->cum[y])
		return sort_graph->cum[x] > sort_graph->cum[y] ? -1 : 1;
	return strcmp(sort_graph->syms->names.strings[x], sort_graph->syms->names.strings[y]);
}

/* Edges by weight, heaviest first, then by names. */
static int
cmp_edges(const void *a, const void *b)
{
	const GraphEdge *x = a;
	const GraphEdge *y = b;
	int			c;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	c = strcmp(sort_graph->syms->names.strings[x->src], sort_graph->syms->names.strings[y->src]);
	return c ? c : strcmp(sort_graph->syms->names.strings[x->dst], sort_graph->syms->names.strings[y->dst]);
}

/* The graph's kept nodes and its edges at or above the edge cut, sorted. */
static void
graph_sorted(const struct varlena *profile, double node_fraction, double edge_fraction,
			 Graph **graph, int **nodes, int *nnodes, GraphEdge **edges, int *nedges)
{
	Graph	   *g;
	HASH_SEQ_STATUS it;
	EdgeEntry  *e;
	int64		cutoff;

	check_fraction(node_fraction, "node_fraction");
	check_fraction(edge_fraction, "edge_fraction");
	g = graph_build(profile, node_fraction);
	cutoff = (int64) ((double) g->total * edge_fraction);
	*nodes = palloc(sizeof(int) * g->nnames);
	*nnodes = 0;
	for (int i = 0; i < g->nnames; i++)
		if (g->kept[i] && g->cum[i] != 0)
			(*nodes)[(*nnodes)++] = i;
	*edges = palloc(sizeof(GraphEdge) * Max(hash_get_num_entries(g->edges), 1));
	*nedges = 0;
	hash_seq_init(&it, g->edges);
	while ((e = hash_seq_search(&it)) != NULL)
		if (Abs(e->edge.weight) >= cutoff && g->cum[e->edge.src] != 0 && g->cum[e->edge.dst] != 0)
			(*edges)[(*nedges)++] = e->edge;
	sort_graph = g;
	qsort(*nodes, *nnodes, sizeof(int), cmp_nodes);
	qsort(*edges, *nedges, sizeof(GraphEdge), cmp_edges);
	*graph = g;
}

#define ARG_FRACTION(n, dflt) (PG_ARGISNULL(n) ? (dflt) : PG_GETARG_FLOAT8(n))

PG_FUNCTION_INFO_V1(parca_callgraph_nodes);

/*
 * parca_callgraph_nodes(profile, node_fraction, edge_fraction)
 *   RETURNS TABLE(id, title, mainstat, secondarystat, "detail__flat_percent", "detail__cum_percent")
 */
Datum
parca_callgraph_nodes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Graph	   *g;
	int		   *nodes;
	int			nnodes;
	GraphEdge  *edges;
	int			nedges;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	graph_sorted(PG_GETARG_PROFILE_P(0), ARG_FRACTION(1, 0.005), ARG_FRACTION(2, 0.001),
				 &g, &nodes, &nnodes, &edges, &nedges);
	for (int i = 0; i < nnodes; i++)
	{
		int			n = nodes[i];
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};

		values[0] = CStringGetTextDatum(g->syms->names.strings[n]);
		values[1] = values[0];
		values[2] = Int64GetDatum(g->flat[n]);
		values[3] = Int64GetDatum(g->cum[n]);
		nulls[4] = nulls[5] = g->total == 0;
		if (g->total != 0)
		{
			values[4] = Float8GetDatum(100.0 * (double) g->flat[n] / fabs((double) g->total));
			values[5] = Float8GetDatum(100.0 * (double) g->cum[n] / fabs((double) g->total));
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(parca_callgraph_edges);

/*
 * parca_callgraph_edges(profile, node_fraction, edge_fraction)
 *   RETURNS TABLE(id, source, target, mainstat, residual)
 */
Datum
parca_callgraph_edges(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Graph	   *g;
	int		   *nodes;
	int			nnodes;
	GraphEdge  *edges;
	int			nedges;

	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		return (Datum) 0;
	graph_sorted(PG_GETARG_PROFILE_P(0), ARG_FRACTION(1, 0.005), ARG_FRACTION(2, 0.001),
				 &g, &nodes, &nnodes, &edges, &nedges);
	for (int i = 0; i < nedges; i++)
	{
		const char *src = g->syms->names.strings[edges[i].src];
		const char *dst = g->syms->names.strings[edges[i].dst];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = CStringGetTextDatum(psprintf("%s -> %s", src, dst));
		values[1] = CStringGetTextDatum(src);
		values[2] = CStringGetTextDatum(dst);
		values[3] = Int64GetDatum(edges[i].weight);
		values[4] = BoolGetDatum(edges[i].residual);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* A DOT string literal. */
static void
append_dot_string(StringInfo buf, const char *s)
{
	appendStringInfoChar(buf, '"');
	for (; *s; s++)
	{
		if (*s == '"' || *s == '\\')
			appendStringInfoChar(buf, '\\');
		if (*s == '\n')
			appendStringInfoString(buf, "\\n");
		else
			appendStringInfoChar(buf, *s);
	}
	appendStringInfoChar(buf, '"');
}

PG_FUNCTION_INFO_V1(parca_callgraph_dot);

/*
 * parca_callgraph_dot(profile, node_fraction, edge_fraction) RETURNS text
 * The graph in Graphviz's DOT language: a box per node labelled with its
 * name, flat and cum, an arrow per edge labelled with its weight, dotted
 * when residual.
 */
Datum
parca_callgraph_dot(PG_FUNCTION_ARGS)
{
	Graph	   *g;
	int		   *nodes;
	int			nnodes;
	GraphEdge  *edges;
	int			nedges;
	StringInfoData buf;
	int		   *node_number;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	graph_sorted(PG_GETARG_PROFILE_P(0), ARG_FRACTION(1, 0.005), ARG_FRACTION(2, 0.001),
				 &g, &nodes, &nnodes, &edges, &nedges);
	node_number = palloc0(sizeof(int) * g->nnames);
	initStringInfo(&buf);
	appendStringInfoString(&buf, "digraph \"profile\" {\n  node [shape=box, fontname=\"Helvetica\"];\n");
	for (int i = 0; i < nnodes; i++)
	{
		int			n = nodes[i];

		node_number[n] = i + 1;
		appendStringInfo(&buf, "  N%d [label=", i + 1);
		append_dot_string(&buf, psprintf("%s\n" INT64_FORMAT " of " INT64_FORMAT " (%.2f%%)",
										 g->syms->names.strings[n], g->flat[n], g->cum[n],
										 g->total ? 100.0 * (double) g->cum[n] / fabs((double) g->total) : 0.0));
		appendStringInfoString(&buf, "];\n");
	}
	for (int i = 0; i < nedges; i++)
		appendStringInfo(&buf, "  N%d -> N%d [label=\"" INT64_FORMAT "\"%s];\n",
						 node_number[edges[i].src], node_number[edges[i].dst], edges[i].weight,
						 edges[i].residual ? " style=dotted" : "");
	appendStringInfoString(&buf, "}\n");
	PG_RETURN_TEXT_P(cstring_to_text(buf.data));
}
