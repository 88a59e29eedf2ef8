/*
 * jitdump.c
 *		Incremental reading of jitdump files; see jitdump.h.
 *
 * Layout (perf's tools/perf/util/jitdump.h): a header (magic "JiTD" as a
 * native 32-bit word, version, header size, ...), then records, each
 * {u32 id, u32 total_size, u64 timestamp} and its body.
 */
#include "jitdump.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf_map.h"
#include "util.h"

#define JITDUMP_MAGIC 0x4A695444u
#define JIT_CODE_LOAD 0
#define JIT_CODE_MOVE 1
#define JIT_CODE_DEBUG_INFO 2
#define JIT_CODE_CLOSE 3

#define RECORD_HEADER 16
/* the fixed part of a load: pid, tid, vma, code_addr, code_size, code_index */
#define LOAD_FIXED 40
#define MOVE_FIXED 40
/* Longest name, and largest debug record, read. */
#define MAX_NAME 1024
#define MAX_DEBUG_RECORD (1024 * 1024)
/* Line table entries kept per code. */
#define MAX_DEBUG_ENTRIES 512

static uint32_t
get32(const uint8_t *p)
{
	uint32_t	v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t	v;

	memcpy(&v, p, 8);
	return v;
}

static void
forget_debug(JitdumpReader *r)
{
	free(r->debug);
	free(r->debug_file);
	r->debug = NULL;
	r->debug_file = NULL;
	r->ndebug = 0;
	r->debug_addr = 0;
}

void
jitdump_reader_free(JitdumpReader *r)
{
	forget_debug(r);
	memset(r, 0, sizeof(*r));
}

/*
 * A JIT_CODE_LOAD body (of len bytes read): add the code to t, with the
 * lines of the debug record before it if that was its, else the file and
 * line its name carries (V8's "JS:*fib /app.js:12:3").
 */
static void
code_load(JitdumpReader *r, const uint8_t *body, size_t len, JitTable *t)
{
	uint64_t	code_addr;
	uint64_t	code_size;
	const char *name = (const char *) body + LOAD_FIXED;
	const char *nul;
	size_t		name_len;
	size_t		file_at;
	size_t		file_len;
	int32_t		line = 0;
	char		file[MAX_NAME + 1] = "";
	bool		with_lines;

	if (len <= LOAD_FIXED)
		return;
	code_addr = get64(body + 16);
	code_size = get64(body + 24);
	nul = memchr(name, '\0', len - LOAD_FIXED);
	if (nul == NULL)
		return;
	name_len = (size_t) (nul - name);
	if (perf_map_split_source(name, name_len, &file_at, &file_len, &line))
	{
		memcpy(file, name + file_at, file_len);
		file[file_len] = '\0';
		name_len = file_at - 1;
	}
	with_lines = r->ndebug > 0 && r->debug_addr == code_addr;
	jit_table_add(t, code_addr, code_size, name, name_len,
				  with_lines ? r->debug_file : file, with_lines ? r->debug[0].line : line,
				  with_lines ? r->debug : NULL, with_lines ? r->ndebug : 0);
	forget_debug(r);
}

/* A JIT_CODE_DEBUG_INFO body: kept for the load of its code. */
static void
debug_info(JitdumpReader *r, const uint8_t *body, size_t len)
{
	uint64_t	nr;
	size_t		at = 16;

	forget_debug(r);
	if (len < 16)
		return;
	r->debug_addr = get64(body);
	nr = get64(body + 8);
	r->debug = xcalloc(MAX_DEBUG_ENTRIES, sizeof(JitLine));
	for (uint64_t i = 0; i < nr && r->ndebug < MAX_DEBUG_ENTRIES && at + 16 < len; i++)
	{
		uint64_t	addr = get64(body + at);
		int32_t		line = (int32_t) get32(body + at + 8);
		const uint8_t *file = body + at + 16;
		const uint8_t *nul = memchr(file, '\0', len - at - 16);

		if (nul == NULL)
			break;
		at = (size_t) (nul - body) + 1;
		/* ascending offsets in the code, each its line */
		if (addr < r->debug_addr || addr - r->debug_addr > UINT32_MAX || line <= 0 ||
			(r->ndebug > 0 && addr - r->debug_addr < r->debug[r->ndebug - 1].offset))
			continue;
		if (r->debug_file == NULL)
			r->debug_file = xstrdup((const char *) file);
		r->debug[r->ndebug].offset = (uint32_t) (addr - r->debug_addr);
		r->debug[r->ndebug].line = line;
		r->ndebug++;
	}
}

/*
 * The header, at the file's start: its size; 0 if it is not written whole
 * yet (the writer buffers), -1 if it is not a header of this machine's.
 */
static int64_t
read_header(int fd)
{
	uint8_t		h[40];

	if (pread(fd, h, sizeof(h), 0) != (ssize_t) sizeof(h))
		return 0;
	if (get32(h) != JITDUMP_MAGIC || get32(h + 8) < sizeof(h) || get32(h + 8) > 4096)
		return -1;
	return get32(h + 8);
}

bool
jitdump_read(JitdumpReader *r, int fd, JitTable *t, size_t max_read)
{
	size_t		done = 0;
	bool		changed = false;
	uint8_t    *body = NULL;

	if (r->broken)
		return false;
	if (r->offset == 0)
	{
		int64_t		header = read_header(fd);

		r->broken = header < 0;
		if (header <= 0)
			return false;
		r->offset = (uint64_t) header;
	}
	while (done < max_read && !t->full)
	{
		uint8_t		h[RECORD_HEADER];
		uint32_t	id;
		uint32_t	size;
		size_t		want;

		if (pread(fd, h, sizeof(h), (off_t) r->offset) != (ssize_t) sizeof(h))
			break;
		id = get32(h);
		size = get32(h + 4);
		if (size < RECORD_HEADER)
		{
			r->broken = true;
			break;
		}
		want = size - RECORD_HEADER;
		if (id == JIT_CODE_LOAD && want > LOAD_FIXED + MAX_NAME)
			want = LOAD_FIXED + MAX_NAME;	/* the name; not the code */
		else if ((id == JIT_CODE_DEBUG_INFO && want > MAX_DEBUG_RECORD) ||
				 (id != JIT_CODE_LOAD && id != JIT_CODE_DEBUG_INFO && id != JIT_CODE_MOVE))
			want = 0;
		body = xrealloc(body, want + 1);
		/* a record not yet written whole waits for the next read */
		if (want > 0 && pread(fd, body, want, (off_t) (r->offset + RECORD_HEADER)) != (ssize_t) want)
			break;
		{
			uint8_t		last;

			if (pread(fd, &last, 1, (off_t) (r->offset + size - 1)) != 1)
				break;
		}
		if (id == JIT_CODE_LOAD)
			code_load(r, body, want, t);
		else if (id == JIT_CODE_DEBUG_INFO && want > 0)
			debug_info(r, body, want);
		else if (id == JIT_CODE_MOVE && want >= MOVE_FIXED)
			jit_table_move(t, get64(body + 16), get64(body + 24));
		else if (id == JIT_CODE_CLOSE)
			r->broken = true;	/* nothing follows */
		r->offset += size;
		done += want + RECORD_HEADER;
		changed = true;
		if (r->broken)
			break;
	}
	free(body);
	return changed;
}
