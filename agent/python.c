/*
 * python.c
 *		CPython processes and their frames; see python.h.
 *
 * An interpreter is recognized by its symbols: a file (the executable, as
 * Debian links libpython into /usr/bin/python3.11, or a libpython shared
 * library) that defines _PyRuntime.  Its version is Py_Version (3.11 and
 * later), else the "X.Y" of its file name.  The BPF program walks the
 * sampled thread's frame chain with the offsets of the table below (read
 * from the interpreters' DWARF: Debian's python3.11-dbg for 3.11.2,
 * pyenv's builds for 3.11.7 and 3.12.1) and sends, per frame, its code
 * object's address and its last instruction.  The agent reads each code
 * object once per process (through process_vm_readv: names, file, first
 * line and line table) and computes the line of the instruction.
 */
#include "python.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_names.h"
#include "ids/ids.h"
#include "metastore_cache.h"
#include "util.h"

/* The layout of one CPython minor version (x86-64), as the agent reads it. */
typedef struct PythonVersion
{
	int			major;
	int			minor;
	struct python_process walk;	/* the BPF program's offsets */
	/* the code object's fields read here */
	uint32_t	code_filename;
	uint32_t	code_name;
	uint32_t	code_qualname;
	uint32_t	code_linetable;
	uint32_t	code_firstlineno;
	/* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject) */
	uint32_t	ascii_data;
	uint32_t	compact_data;
} PythonVersion;

static const PythonVersion versions[] = {
	{3, 11, {.runtime_interpreters_head = 40, .interpreter_threads_head = 16,
			.thread_next = 8, .thread_id = 152, .thread_cframe = 56,
			.cframe_current_frame = 8, .frame_code = 32, .frame_previous = 48,
			.frame_prev_instr = 56, .frame_is_entry = 68, .frame_owner = 69,
	.owner_cstack = -1, .code_bytecode = 184},
	112, 120, 128, 136, 72, 48, 72},
	{3, 12, {.runtime_interpreters_head = 40, .interpreter_threads_head = 72,
			.thread_next = 8, .thread_id = 136, .thread_cframe = 56,
			.cframe_current_frame = 0, .frame_code = 0, .frame_previous = 8,
			.frame_prev_instr = 56, .frame_is_entry = -1, .frame_owner = 70,
	.owner_cstack = 3, .code_bytecode = 192},
	112, 120, 128, 136, 68, 40, 56},
};

/* What the agent keeps per process in Process.python (see process.h). */
struct ProcessPython
{
	const PythonVersion *version;	/* NULL: not one the agent reads */
	uint64_t	dev;			/* the interpreter's file */
	uint64_t	ino;
	bool		exe_checked;	/* the executable was looked at */
};

/* Longest name, file name and line table read from a code object. */
#define PY_MAX_STRING 1024
#define PY_MAX_LINETABLE 65536

/* hash(pid, start time, code address) -> CodeInfo, serialized (see read_code) */
static StrCache code_cache;

/*
 * hash(dev, ino) -> (void *) 1: the executables found not to be CPython,
 * so that the processes of a program are not looked at again (a symbol
 * table scan each).  A few bytes per program the machine runs.
 */
static U64Map not_python;

typedef struct CodeInfo
{
	int32_t		firstlineno;
	uint32_t	linetable_len;
	uint32_t	name_len;		/* "module.qualname" */
	uint32_t	filename_len;
	/* linetable, name, NUL, filename, NUL follow */
} CodeInfo;

/* "X.Y" from a file name such as python3.10 or libpython3.10.so.1.0. */
static bool
version_from_name(const char *file, int *major, int *minor)
{
	const char *base = strrchr(file, '/');
	const char *v = strstr(base ? base : file, "python");

	return v != NULL && sscanf(v + 6, "%d.%d", major, minor) == 2;
}

static bool
is_libpython(const char *file)
{
	const char *base = strrchr(file, '/');

	return strncmp(base ? base + 1 : file, "libpython", 9) == 0;
}

void
python_check(Sampler *sampler, Process *p, const ExecMapping *m)
{
	bool		is_exe = m->ino == p->exe_ino;
	ObjFile    *f;
	uint64_t	runtime;
	uint64_t	version_addr;
	uint64_t	size;
	uint64_t	vaddr;
	const unsigned char *hex;
	int			major = 0;
	int			minor = 0;
	struct ProcessPython *py;
	struct python_process walk;
	uint64_t	file_key[2];
	uint64_t	key;

	if (p->python == NULL)
		p->python = xcalloc(1, sizeof(struct ProcessPython));
	py = p->python;
	if (py->ino != 0 || (is_exe ? py->exe_checked : !is_libpython(m->file)))
		return;
	if (is_exe)
		py->exe_checked = true;
	file_key[0] = m->dev;
	file_key[1] = m->ino;
	key = parca_hash64(file_key, sizeof(file_key));
	if (u64map_get(&not_python, key) != NULL)
		return;
	if ((f = process_objfile(p, m)) == NULL ||
		!objfile_dynamic_symbol(f, "_PyRuntime", &runtime, &size) ||
		!objfile_vaddr(f, m->pgoff, &vaddr))
	{
		if (f != NULL && objfile_is_open(f))
			u64map_put(&not_python, key, (void *) 1);
		return;
	}
	py->dev = m->dev;
	py->ino = m->ino;
	if (objfile_dynamic_symbol(f, "Py_Version", &version_addr, &size) &&
		(hex = objfile_bytes(f, version_addr, 4)) != NULL)
	{
		uint32_t	v;

		memcpy(&v, hex, 4);
		major = v >> 24;
		minor = (v >> 16) & 0xff;
	}
	else
		version_from_name(m->file, &major, &minor);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (versions[i].major == major && versions[i].minor == minor)
			py->version = &versions[i];
	if (py->version == NULL)
	{
		if (major == 0)
			log_msg(LOG_INFO, "pid %u (%s): CPython of unknown version (%s: no Py_Version, "
					"no version in its name): native frames only", p->pid, p->comm, m->file);
		else
			log_msg(LOG_INFO, "pid %u (%s): CPython %d.%d (%s) is not one the agent reads "
					"(3.11, 3.12): native frames only", p->pid, p->comm, major, minor, m->file);
		return;
	}
	walk = py->version->walk;
	walk.start_time = p->start_time;
	/* the mapping's start is the file offset pgoff's address */
	walk.runtime = runtime - vaddr + m->start;
	if (!sampler_add_python_process(sampler, p->pid, &walk))
	{
		log_msg(LOG_INFO, "pid %u (%s): CPython %d.%d (%s): native frames only (this "
				"kernel has no bpf_loop to walk Python frames: Linux 5.17)",
				p->pid, p->comm, major, minor, m->file);
		py->version = NULL;
		return;
	}
	log_msg(LOG_INFO, "pid %u (%s): CPython %d.%d (%s): Python frames unwound",
			p->pid, p->comm, major, minor, m->file);
}

bool
python_is_eval_frame(const Process *p, const ExecMapping *m, uint64_t offset)
{
	const struct ProcessPython *py = p->python;
	ObjFile    *f;
	uint64_t	vaddr;
	const char *name;

	if (py == NULL || py->version == NULL || m->ino != py->ino || m->dev != py->dev ||
		(f = process_objfile(p, m)) == NULL || !objfile_vaddr(f, offset, &vaddr) ||
		(name = objfile_symbol(f, vaddr)) == NULL)
		return false;
	/* (and its parts split off by the compiler: _PyEval_EvalFrameDefault.cold) */
	return strncmp(name, "_PyEval_EvalFrameDefault", 24) == 0 &&
		(name[24] == '\0' || name[24] == '.');
}

/*
 * A str object's text as UTF-8 into out (at most PY_MAX_STRING / 4
 * characters):
 * compact strings only, which code objects' names and file names are.
 */
static bool
read_string(uint32_t pid, const PythonVersion *v, uint64_t addr, Buf *out)
{
	unsigned char head[80];
	int64_t		length;
	uint32_t	state;
	int			kind;
	unsigned char *data;
	size_t		bytes;

	if (addr == 0 || !read_remote(pid, addr, head, v->compact_data))
		return false;
	memcpy(&length, head + 16, sizeof(length));
	memcpy(&state, head + 32, sizeof(state));
	kind = (state >> 2) & 7;
	if (length < 0 || (state & (1 << 5)) == 0 || (kind != 1 && kind != 2 && kind != 4))
		return false;
	if (length > PY_MAX_STRING / 4)
		length = PY_MAX_STRING / 4;
	bytes = (size_t) length * kind;
	data = xmalloc(bytes + 1);
	if (!read_remote(pid, addr + ((state & (1 << 6)) ? v->ascii_data : v->compact_data),
					 data, bytes))
	{
		free(data);
		return false;
	}
	for (int64_t i = 0; i < length; i++)
	{
		uint32_t	c = kind == 1 ? data[i] :
			kind == 2 ? ((uint16_t *) data)[i] : ((uint32_t *) data)[i];
		char		u[4];

		if (c < 0x80)
			buf_append(out, (char[]) {(char) c}, 1);
		else if (c < 0x800)
			buf_append(out, (char[]) {(char) (0xc0 | c >> 6), (char) (0x80 | (c & 0x3f))}, 2);
		else if (c < 0x10000)
		{
			u[0] = (char) (0xe0 | c >> 12);
			u[1] = (char) (0x80 | ((c >> 6) & 0x3f));
			u[2] = (char) (0x80 | (c & 0x3f));
			buf_append(out, u, 3);
		}
		else
		{
			u[0] = (char) (0xf0 | c >> 18);
			u[1] = (char) (0x80 | ((c >> 12) & 0x3f));
			u[2] = (char) (0x80 | ((c >> 6) & 0x3f));
			u[3] = (char) (0x80 | (c & 0x3f));
			buf_append(out, u, 4);
		}
	}
	free(data);
	/* NUL-terminated, not counted in out->len */
	buf_append(out, "", 1);
	out->len--;
	return true;
}

/*
 * Read a code object: its CodeInfo, serialized into the cache, or NULL.
 * The function's name is its module's (the file's base name without
 * ".py") and its qualified name: "prog.Worker.run".
 */
static const CodeInfo *
read_code(Process *p, const PythonVersion *v, uint64_t code, uint64_t key)
{
	uint64_t	fields[4];		/* co_filename, co_name, co_qualname, co_linetable */
	int32_t		firstlineno;
	int64_t		linetable_len;
	CodeInfo	info = {0};
	Buf			rec = {0};
	Buf			qualname = {0};
	Buf			filename = {0};
	const char *module;
	size_t		module_len;
	const CodeInfo *cached = NULL;

	if (!read_remote(p->pid, code + v->code_filename, fields, sizeof(fields)) ||
		!read_remote(p->pid, code + v->code_firstlineno, &firstlineno, sizeof(firstlineno)) ||
		!read_remote(p->pid, fields[3] + 16, &linetable_len, sizeof(linetable_len)) ||
		linetable_len < 0 || linetable_len > PY_MAX_LINETABLE ||
		!read_string(p->pid, v, fields[2] ? fields[2] : fields[1], &qualname) ||
		!read_string(p->pid, v, fields[0], &filename))
		goto done;
	module = strrchr(filename.data, '/');
	module = module ? module + 1 : filename.data;
	module_len = strlen(module);
	if (module_len > 3 && strcmp(module + module_len - 3, ".py") == 0)
		module_len -= 3;

	info.firstlineno = firstlineno;
	info.linetable_len = (uint32_t) linetable_len;
	buf_append(&rec, &info, sizeof(info));
	buf_reserve(&rec, info.linetable_len);
	if (!read_remote(p->pid, fields[3] + 32, rec.data + rec.len, info.linetable_len))
		goto done;
	rec.len += info.linetable_len;
	buf_printf(&rec, "%.*s.%.*s", (int) module_len, module,
			   (int) qualname.len, qualname.data);
	((CodeInfo *) rec.data)->name_len = (uint32_t) (rec.len - sizeof(info) - info.linetable_len);
	buf_append(&rec, "", 1);
	buf_append(&rec, filename.data, filename.len);
	((CodeInfo *) rec.data)->filename_len = (uint32_t) filename.len;
	cached = (const CodeInfo *) strcache_put(&code_cache, key, rec.data, rec.len);
done:
	buf_free(&rec);
	buf_free(&qualname);
	buf_free(&filename);
	return cached;
}

/* An unsigned varint of the location table: 6 bits a byte, bit 6 to go on. */
static uint32_t
read_varint(const unsigned char *t, uint32_t len, uint32_t *i)
{
	uint32_t	v = 0;
	int			shift = 0;
	unsigned char b;

	do
	{
		b = *i < len ? t[(*i)++] : 0;
		if (shift < 32)
			v |= (uint32_t) (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int32_t
read_svarint(const unsigned char *t, uint32_t len, uint32_t *i)
{
	uint32_t	v = read_varint(t, len, i);

	return (v & 1) ? -(int32_t) (v >> 1) : (int32_t) (v >> 1);
}

/*
 * The line of instruction lasti (in code units) from the code's location
 * table (3.11 and 3.12: Objects/locations.md in CPython's sources): each
 * entry covers 1 to 8 code units, its first byte 1CCCCLLL (C: its kind, L:
 * units - 1); kinds 0-9 (short form, same line) and 10-12 (one line,
 * delta C - 10) carry 1 and 2 bytes of columns, 13 (no columns) a signed
 * line delta, 14 (long form) a signed line delta, then end line delta,
 * start and end columns, 15 no location.  0 when unknown.
 */
static int64_t
code_line(const CodeInfo *c, int32_t lasti)
{
	const unsigned char *t = (const unsigned char *) (c + 1);
	uint32_t	i = 0;
	int64_t		line = c->firstlineno;
	int64_t		unit = 0;

	if (lasti < 0)
		return c->firstlineno;
	while (i < c->linetable_len)
	{
		unsigned char b = t[i++];
		int			kind = (b >> 3) & 15;
		int			units = (b & 7) + 1;

		if (kind == 15)
		{
			if (lasti < unit + units)
				return 0;
		}
		else
		{
			if (kind == 14)
			{
				line += read_svarint(t, c->linetable_len, &i);
				read_varint(t, c->linetable_len, &i);
				read_varint(t, c->linetable_len, &i);
				read_varint(t, c->linetable_len, &i);
			}
			else if (kind == 13)
				line += read_svarint(t, c->linetable_len, &i);
			else if (kind >= 10)
			{
				line += kind - 10;
				i += 2;
			}
			else
				i += 1;
			if (lasti < unit + units)
				return line;
		}
		unit += units;
	}
	return 0;
}

static uint64_t
python_location(Process *p, uint64_t code, int32_t lasti)
{
	const PythonVersion *v = p->python->version;
	uint64_t	k[3] = {p->pid, p->start_time, code};
	uint64_t	key = parca_hash64(k, sizeof(k));
	const CodeInfo *c = (const CodeInfo *) strcache_get(&code_cache, key);
	FrameLine	line = {"[unknown Python frame]", "[unknown Python frame]", "", 0, 0};

	if (c == NULL)
		c = read_code(p, v, code, key);
	if (c != NULL)
	{
		const char *name = (const char *) (c + 1) + c->linetable_len;

		line.name = line.system_name = name;
		line.filename = name + c->name_len + 1;
		line.start_line = c->firstlineno;
		line.line = code_line(c, lasti);
	}
	return ms_location(NULL, NULL, 0, 1, &line, true)->id;
}

void
python_add_frames(Process *p, const struct parca_sample *s, int *next, bool all,
				  uint64_t *frames, int *n)
{
	int			nframes = s->py_nframes < SAMPLE_MAX_PY_FRAMES ? s->py_nframes : SAMPLE_MAX_PY_FRAMES;

	if (p->python == NULL || p->python->version == NULL)
		return;
	while (*next < nframes)
	{
		uint64_t	code = s->py_code[*next];

		frames[(*n)++] = python_location(p, code & ~(uint64_t) PY_FRAME_ENTRY,
										 s->py_lasti[*next]);
		(*next)++;
		if ((code & PY_FRAME_ENTRY) && !all)
			break;
	}
}

void
python_trim(size_t max_bytes)
{
	strcache_trim(&code_cache, max_bytes);
}

size_t
python_cache_bytes(void)
{
	return code_cache.bytes;
}
