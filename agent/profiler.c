/*
 * profiler.c
 *		From a raw sample to a counted stack; see profiler.h.
 *
 * A stack is the kernel frames (leaf first) followed by the user frames
 * (leaf first).  User frames are checked once more here: every address
 * must lie in an executable mapping of the process, else the walk is cut
 * there.  A cut or broken walk ends with the synthetic location
 * "[truncated]" so that flame graphs show it, unless its last frame is a
 * known bottom of a stack (a thread's start, __libc_start_call_main): code
 * without frame pointers below that point is expected.
 */
#include "profiler.h"

#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "kernel.h"
#include "metastore.h"
#include "process.h"
#include "symbols.h"
#include "util.h"

#define MAX_FRAMES (SAMPLE_MAX_KERNEL_FRAMES + SAMPLE_MAX_USER_FRAMES + 1)
#define KERNEL_FILE "[kernel.kallsyms]"

static char *common;
static ProfilerStats stats;

void
profiler_init(const char *common_labels)
{
	common = xstrdup(common_labels);
}

const ProfilerStats *
profiler_stats(void)
{
	return &stats;
}

static uint64_t
kernel_location(uint64_t addr)
{
	const char *build_id = kernel_build_id();
	MsLocation *loc = ms_find_address(ms_mapping(build_id, KERNEL_FILE), addr);

	if (loc == NULL)
	{
		const char *module = "";
		const char *name = kernel_symbol(addr, &module);
		FrameLine	line = {name, name, "", 0, 0};

		loc = ms_location(build_id, KERNEL_FILE, addr, name ? 1 : 0, &line);
	}
	return loc->id;
}

static uint64_t
user_location(const Process *p, const ExecMapping *m, uint64_t offset)
{
	MsLocation *loc = ms_find_address(m->mapping_id, offset);

	if (loc == NULL)
	{
		FrameLine	lines[SYMBOLS_MAX_LINES];
		int			n = 0;

		if (m->is_file)
		{
			char		path[4200];

			process_open_path(p, m, path, sizeof(path));
			n = symbols_lookup(path, m->dev, m->ino, offset, lines);
		}
		loc = ms_location(m->build_id, m->file, offset, n, lines);
	}
	return loc->id;
}

static uint64_t
truncated_location(void)
{
	static const FrameLine line = {"[truncated]", "[truncated]", "", 0, 0};

	return ms_location(NULL, NULL, 0, 1, &line)->id;
}

/* Is the location's outermost function where stacks begin? */
static bool
is_stack_bottom(uint64_t location_id)
{
	static const char *const bottoms[] = {
		"_start", "__libc_start_main", "__libc_start_call_main",
		"start_thread", "clone", "clone3", "__clone", "__clone3",
	};
	MsLocation *loc = ms_get_location(location_id);
	MsFunction *f;

	if (loc == NULL || loc->nlines == 0)
		return false;
	f = ms_get_function(loc->function_ids[loc->nlines - 1]);
	for (size_t i = 0; f && i < sizeof(bottoms) / sizeof(bottoms[0]); i++)
		if (strcmp(f->system_name, bottoms[i]) == 0)
			return true;
	return false;
}

void
profiler_on_sample(const struct parca_sample *s, void *arg)
{
	uint64_t	frames[MAX_FRAMES];
	int			n = 0;
	int			nkernel = s->nkernel < SAMPLE_MAX_KERNEL_FRAMES ? s->nkernel : SAMPLE_MAX_KERNEL_FRAMES;
	int			nuser = s->nuser < SAMPLE_MAX_USER_FRAMES ? s->nuser : SAMPLE_MAX_USER_FRAMES;
	char		comm[sizeof(s->comm) + 1];
	Process    *p;
	Buf			labels = {0};
	char		title[64];
	bool		truncated = false;

	memcpy(comm, s->comm, sizeof(s->comm));
	comm[sizeof(s->comm)] = '\0';
	p = process_get(s->pid, comm);
	stats.samples++;

	for (int i = 0; i < nkernel; i++)
		frames[n++] = kernel_location(s->kstack[i]);

	if (s->unwind_end == UNWIND_END_NONE)
		stats.kernel_only++;
	else
	{
		int			first_user = n;

		for (int i = 0; i < nuser; i++)
		{
			const ExecMapping *m = process_find_mapping(p, s->ustack[i]);
			uint64_t	offset;

			if (m == NULL)
			{
				truncated = true;
				break;
			}
			offset = s->ustack[i] - m->start + m->pgoff;
			/* A return address: name the call instruction before it. */
			if (i > 0)
				offset--;
			frames[n++] = user_location(p, m, offset);
		}
		if (s->unwind_end != UNWIND_END_CLEAN &&
			!(n > first_user && is_stack_bottom(frames[n - 1])))
			truncated = true;
		if (truncated)
		{
			frames[n++] = truncated_location();
			stats.truncated++;
		}
		else
			stats.complete++;
	}

	buf_printf(&labels, "{%s,%s", common, p->labels);
	buf_append(&labels, ",\"thread_name\":\"", 16);
	buf_json_escape(&labels, comm);
	buf_append(&labels, "\"}", 3);
	snprintf(title, sizeof(title), "%s (%u)", comm, s->pid);
	agg_add(labels.data, title, frames, n);
	buf_free(&labels);
}
