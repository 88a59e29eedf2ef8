/*
 * svg.c
 *		parca_flamegraph_svg(): a self-contained interactive flame graph.
 *
 * The call tree is drawn as an icicle (root on top, callees below), one
 * <g class="f"> per frame holding a <title> (the browser's tooltip), a
 * <rect> and a <text>.  A small script embedded in the SVG makes it
 * interactive: clicking a frame zooms to it (its ancestors span the
 * width, its subtree is stretched, everything else is hidden), "Reset
 * zoom" undoes it, "Search" (or Ctrl-F) highlights the frames whose name
 * matches a regular expression and tells their share, and hovering shows
 * a frame's details in the status line.  Diff profiles are coloured by
 * change: red where the compared side grew, blue where it shrank.
 *
 * Frames narrower than MIN_WIDTH pixels at full scale are not drawn (they
 * stay counted in their parents' width).
 */
#include "postgres.h"

#include <math.h>

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "types/profile_type.h"
#include "query/calltree.h"

#define SVG_WIDTH	1200.0
#define SVG_PAD		10.0
#define FRAME_H		16
#define HEADER_H	50
#define FOOTER_H	24
#define MIN_WIDTH	0.1
#define SVG_TITLE_MAX	4096		/* bytes of the title */

static void
append_xml(StringInfo buf, const char *s)
{
	for (; *s; s++)
	{
		switch (*s)
		{
			case '&':
				appendStringInfoString(buf, "&amp;");
				break;
			case '<':
				appendStringInfoString(buf, "&lt;");
				break;
			case '>':
				appendStringInfoString(buf, "&gt;");
				break;
			case '"':
				appendStringInfoString(buf, "&quot;");
				break;
			default:
				appendStringInfoChar(buf, *s);
		}
	}
}

/* The sample unit of a profile's type; "" if the profile has no type. */
static const char *
profile_unit(const char *profile_type)
{
	ProfileType type;

	if (profile_type_parse(profile_type, (int) strlen(profile_type), &type, NULL) != PROFILE_TYPE_OK)
		return "";
	return type.sample_unit;
}

/* A value with its unit, scaled for reading: "1.25 s", "3.40 MB", "1234". */
static void
append_value(StringInfo buf, int64 v, const char *unit)
{
	double		d = (double) v;
	double		a = fabs(d);

	if (strcmp(unit, "nanoseconds") == 0)
	{
		if (a >= 1e9)
			appendStringInfo(buf, "%.2f s", d / 1e9);
		else if (a >= 1e6)
			appendStringInfo(buf, "%.2f ms", d / 1e6);
		else if (a >= 1e3)
			appendStringInfo(buf, "%.2f µs", d / 1e3);
		else
			appendStringInfo(buf, "%lld ns", (long long) v);
	}
	else if (strcmp(unit, "bytes") == 0)
	{
		if (a >= 1024.0 * 1024 * 1024)
			appendStringInfo(buf, "%.2f GiB", d / (1024.0 * 1024 * 1024));
		else if (a >= 1024.0 * 1024)
			appendStringInfo(buf, "%.2f MiB", d / (1024.0 * 1024));
		else if (a >= 1024.0)
			appendStringInfo(buf, "%.2f KiB", d / 1024.0);
		else
			appendStringInfo(buf, "%lld B", (long long) v);
	}
	else
		appendStringInfo(buf, "%lld", (long long) v);
}

/* A frame's width before scaling: both sides of a diff; in double, which cannot overflow. */
static double
node_width(const CallNode *node)
{
	return fabs((double) node->value) + fabs((double) node->value_right);
}

/* Warm colours for plain profiles, stable per name. */
static void
frame_colour(StringInfo buf, const char *name)
{
	uint32		h = hash_bytes((const unsigned char *) name, (int) strlen(name));

	appendStringInfo(buf, "rgb(%d,%d,%d)", 205 + (int) (h % 50),
					 80 + (int) ((h >> 8) % 130), 40 + (int) ((h >> 16) % 50));
}

/* Red for growth, blue for shrinking, pale when unchanged. */
static void
diff_colour(StringInfo buf, int64 base, int64 compared)
{
	double		sum = fabs((double) base) + fabs((double) compared);
	double		change = sum > 0 ? ((double) compared - (double) base) / sum : 0.0;
	int			fade = (int) (220 * (1.0 - fabs(change)));

	if (change >= 0)
		appendStringInfo(buf, "rgb(255,%d,%d)", 35 + fade, 35 + fade);
	else
		appendStringInfo(buf, "rgb(%d,%d,255)", 35 + fade, 35 + fade);
}

static const char svg_script[] =
"(function () {\n"
"var W = 1200, PAD = 10, frames = [], status;\n"
"function attr(e, n) { return e.getAttribute(n); }\n"
"function init() {\n"
"  status = document.getElementById('status');\n"
"  var gs = document.querySelectorAll('#frames g.f');\n"
"  for (var i = 0; i < gs.length; i++) {\n"
"    var g = gs[i], r = g.querySelector('rect');\n"
"    g.bx = +attr(r, 'x'); g.bw = +attr(r, 'width'); g.by = +attr(r, 'y');\n"
"    g.fill = attr(r, 'fill');\n"
"    frames.push(g); fit(g, g.bx, g.bw);\n"
"  }\n"
"  var root = document.getElementById('frames');\n"
"  root.addEventListener('click', function (e) { var g = e.target.closest('g.f'); if (g) zoom(g); });\n"
"  root.addEventListener('mouseover', function (e) { var g = e.target.closest('g.f'); if (g) status.textContent = attr(g, 'data-d'); });\n"
"  root.addEventListener('mouseout', function () { status.textContent = ' '; });\n"
"  document.getElementById('reset').addEventListener('click', unzoom);\n"
"  document.getElementById('search').addEventListener('click', function () { search(prompt('Search frames (regular expression):', '')); });\n"
"  document.getElementById('clear').addEventListener('click', function () { search(null); });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(prompt('Search frames (regular expression):', '')); }\n"
"    if (e.key === 'Escape') unzoom();\n"
"  });\n"
"}\n"
"function fit(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text'), name = attr(g, 'data-n');\n"
"  r.setAttribute('x', x); r.setAttribute('width', w); t.setAttribute('x', x + 3);\n"
"  var n = Math.floor((w - 6) / 7);\n"
"  t.textContent = n < 3 ? '' : (name.length <= n ? name : name.substring(0, n - 2) + '..');\n"
"}\n"
"function show(g, on) { g.style.display = on ? '' : 'none'; }\n"
"function zoom(z) {\n"
"  var x0 = z.bx, w0 = z.bw, s = (W - 2 * PAD) / w0, eps = 1e-6;\n"
"  for (var i = 0; i < frames.length; i++) {\n"
"    var g = frames[i];\n"
"    if (g.by < z.by) {\n"
"      var anc = g.bx <= x0 + eps && g.bx + g.bw >= x0 + w0 - eps;\n"
"      show(g, anc); if (anc) fit(g, PAD, W - 2 * PAD);\n"
"    } else {\n"
"      var inside = g.bx >= x0 - eps && g.bx + g.bw <= x0 + w0 + eps;\n"
"      show(g, inside); if (inside) fit(g, PAD + (g.bx - x0) * s, g.bw * s);\n"
"    }\n"
"  }\n"
"  document.getElementById('reset').style.display = '';\n"
"}\n"
"function unzoom() {\n"
"  for (var i = 0; i < frames.length; i++) { show(frames[i], true); fit(frames[i], frames[i].bx, frames[i].bw); }\n"
"  document.getElementById('reset').style.display = 'none';\n"
"}\n"
"function search(term) {\n"
"  var re = null, spans = [], total = 0;\n"
"  if (term) { try { re = new RegExp(term, 'i'); } catch (e) { status.textContent = 'invalid regular expression'; return; } }\n"
"  for (var i = 0; i < frames.length; i++) {\n"
"    var g = frames[i], hit = re !== null && re.test(attr(g, 'data-n'));\n"
"    g.querySelector('rect').setAttribute('fill', hit ? 'rgb(230,0,230)' : g.fill);\n"
"    if (hit) spans.push([g.bx, g.bx + g.bw]);\n"
"  }\n"
"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
"  var end = -1;\n"
"  for (var j = 0; j < spans.length; j++) {\n"
"    var a = Math.max(spans[j][0], end);\n"
"    if (spans[j][1] > a) total += spans[j][1] - a;\n"
"    end = Math.max(end, spans[j][1]);\n"
"  }\n"
"  var m = document.getElementById('matched');\n"
"  m.textContent = re ? 'Matched: ' + (100 * total / (W - 2 * PAD)).toFixed(1) + '%' : ' ';\n"
"  document.getElementById('clear').style.display = re ? '' : 'none';\n"
"}\n"
"window.addEventListener('load', init);\n"
"})();\n";

PG_FUNCTION_INFO_V1(parca_flamegraph_svg);

Datum
parca_flamegraph_svg(PG_FUNCTION_ARGS)
{
	struct varlena *profile;
	const char *title;
	CallTree   *t;
	int		   *order;
	int			n;
	double	   *x;
	double	   *next_x;
	double		total;
	double		scale;
	int			max_depth = 0;
	const char *unit;
	StringInfoData buf;
	int			height;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	profile = PG_GETARG_PROFILE_P(0);
	/* a line of text (escaped, each byte may take six) */
	if (!PG_ARGISNULL(1) && VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(1)) > SVG_TITLE_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the title of a flame graph is at most %d bytes", SVG_TITLE_MAX)));
	title = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	t = calltree_build(profile);
	order = calltree_preorder(t, &n);
	unit = profile_unit(t->meta.profile_type);
	if (title == NULL)
		title = t->meta.profile_type[0] ? t->meta.profile_type : "Flame graph";

	total = node_width(&t->nodes[0]);
	scale = total > 0 ? (SVG_WIDTH - 2 * SVG_PAD) / total : 0.0;
	x = palloc(sizeof(double) * t->nnodes);
	next_x = palloc(sizeof(double) * t->nnodes);
	for (int i = 0; i < n; i++)
	{
		const CallNode *node = &t->nodes[order[i]];

		if (node->depth > max_depth &&
			node_width(node) * scale >= MIN_WIDTH)
			max_depth = node->depth;
	}
	height = HEADER_H + (max_depth + 1) * FRAME_H + FOOTER_H;

	initStringInfo(&buf);
	appendStringInfo(&buf,
					 "<?xml version=\"1.0\" standalone=\"no\"?>\n"
					 "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
					 "<style>\n"
					 "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
					 "#frames g.f { cursor: pointer; }\n"
					 "#frames g.f:hover rect { stroke: #000; stroke-width: 0.5; }\n"
					 "#frames text { pointer-events: none; }\n"
					 ".button { fill: #2060c0; cursor: pointer; }\n"
					 "</style>\n"
					 "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n"
					 "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n",
					 (int) SVG_WIDTH, height, (int) SVG_WIDTH, height, svg_script);
	appendStringInfo(&buf, "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" style=\"font-size: 16px\">",
					 (int) (SVG_WIDTH / 2));
	append_xml(&buf, title);
	appendStringInfoString(&buf, "</text>\n");
	appendStringInfo(&buf,
					 "<text id=\"reset\" class=\"button\" x=\"%d\" y=\"40\" style=\"display: none\">Reset zoom</text>\n"
					 "<text id=\"search\" class=\"button\" x=\"%d\" y=\"40\">Search</text>\n"
					 "<text id=\"clear\" class=\"button\" x=\"%d\" y=\"40\" style=\"display: none\">Clear</text>\n"
					 "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n"
					 "<text id=\"status\" x=\"%d\" y=\"%d\"> </text>\n",
					 (int) SVG_PAD, (int) (SVG_WIDTH - SVG_PAD - 120),
					 (int) (SVG_WIDTH - SVG_PAD - 60),
					 (int) (SVG_WIDTH - SVG_PAD - 120), height - 8,
					 (int) SVG_PAD, height - 8);
	appendStringInfoString(&buf, "<g id=\"frames\">\n");

	for (int i = 0; i < n; i++)
	{
		int			id = order[i];
		const CallNode *node = &t->nodes[id];
		double		w = node_width(node) * scale;
		const char *label = calltree_label(t, id);
		int			y = HEADER_H + node->depth * FRAME_H;
		StringInfoData desc;

		CHECK_FOR_INTERRUPTS();
		x[id] = node->parent < 0 ? SVG_PAD : next_x[node->parent];
		next_x[id] = x[id];
		if (node->parent >= 0)
			next_x[node->parent] += w;
		if (w < MIN_WIDTH)
			continue;

		/* the description: tooltip and status line */
		initStringInfo(&desc);
		appendStringInfo(&desc, "%s: ", label);
		if (t->meta.is_diff)
		{
			appendStringInfoString(&desc, "base ");
			append_value(&desc, node->value, unit);
			appendStringInfoString(&desc, ", compared ");
			append_value(&desc, node->value_right, unit);
			if (node->value != 0)
				appendStringInfo(&desc, " (%+.2f%%)",
								 100.0 * ((double) node->value_right - (double) node->value) /
								 fabs((double) node->value));
			else
				appendStringInfoString(&desc, " (new)");
		}
		else
		{
			append_value(&desc, node->value, unit);
			appendStringInfo(&desc, " (%.2f%% of total; self ", total > 0 ? 100.0 * fabs((double) node->value) / total : 0.0);
			append_value(&desc, node->self, unit);
			appendStringInfoChar(&desc, ')');
		}

		appendStringInfoString(&buf, "<g class=\"f\" data-n=\"");
		append_xml(&buf, label);
		appendStringInfoString(&buf, "\" data-d=\"");
		append_xml(&buf, desc.data);
		appendStringInfoString(&buf, "\"><title>");
		append_xml(&buf, desc.data);
		appendStringInfo(&buf, "</title><rect x=\"%.3f\" y=\"%d\" width=\"%.3f\" height=\"%d\" fill=\"",
						 x[id], y, w, FRAME_H - 1);
		if (t->meta.is_diff)
			diff_colour(&buf, node->value, node->value_right);
		else
			frame_colour(&buf, label);
		appendStringInfo(&buf, "\" rx=\"1\"/><text x=\"%.3f\" y=\"%d\"></text></g>\n",
						 x[id] + 3, y + FRAME_H - 4);
		pfree(desc.data);
	}
	appendStringInfoString(&buf, "</g>\n</svg>\n");
	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}
