/*
 * kernel.c
 *		Kernel symbols, release and build id; see kernel.h.
 *
 * Text symbols are kept sorted by address, as 32-bit offsets from the
 * lowest (the kernel image, its modules and BPF programs lie within 4 GB
 * of each other), and their names with their modules' ("name\0module\0")
 * in blocks of SYMBOLS_PER_BLOCK compressed with zlib: a kernel's 120,000
 * text symbols cost about 2 MB instead of 5.  A lookup decompresses one
 * block (the last one is kept); lookups happen only for kernel addresses
 * the agent has not seen before.
 */
#include "kernel.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <zlib.h>

#include "util.h"

#define SYMBOLS_PER_BLOCK 64

/* A symbol while loading. */
typedef struct LoadedSymbol
{
	uint64_t	addr;
	uint32_t	name;			/* offset into the names being loaded */
	uint32_t	module;			/* likewise; 0 is "" */
} LoadedSymbol;

static uint64_t base_addr;
static uint32_t *offsets;		/* address - base_addr, sorted */
static size_t nsyms;
static uint32_t *block_start;	/* offset of each block in packed, and the end */
static uint32_t *block_size;	/* each block's size uncompressed */
static unsigned char *packed;
static long cached_block = -1;
static char *block_text;		/* cached_block, uncompressed */
static char release[256];
static char build_id[256];

static int
loaded_cmp(const void *a, const void *b)
{
	const LoadedSymbol *x = a;
	const LoadedSymbol *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Compress the names of the sorted symbols into blocks. */
static void
pack(const LoadedSymbol *syms, const char *names)
{
	size_t		nblocks = (nsyms + SYMBOLS_PER_BLOCK - 1) / SYMBOLS_PER_BLOCK;
	Buf			out = {0};
	Buf			text = {0};

	block_start = xcalloc(nblocks + 1, sizeof(uint32_t));
	block_size = xcalloc(nblocks, sizeof(uint32_t));
	for (size_t b = 0; b < nblocks; b++)
	{
		uLongf		len;

		text.len = 0;
		for (size_t i = b * SYMBOLS_PER_BLOCK; i < nsyms && i < (b + 1) * SYMBOLS_PER_BLOCK; i++)
		{
			const char *name = names + syms[i].name;
			const char *module = names + syms[i].module;

			buf_append(&text, name, strlen(name) + 1);
			buf_append(&text, module, strlen(module) + 1);
		}
		len = compressBound(text.len);
		buf_reserve(&out, len);
		compress2((Bytef *) out.data + out.len, &len, (const Bytef *) text.data, text.len,
				  Z_BEST_COMPRESSION);
		block_start[b] = (uint32_t) out.len;
		block_size[b] = (uint32_t) text.len;
		out.len += len;
	}
	block_start[nblocks] = (uint32_t) out.len;
	packed = xrealloc(out.data, out.len ? out.len : 1);
	buf_free(&text);
}

int
kernel_load_symbols(void)
{
	FILE	   *f = fopen("/proc/kallsyms", "re");
	char		line[512];
	size_t		cap = 0;
	LoadedSymbol *syms = NULL;
	Buf			names = {0};
	uint32_t	last_module = 0;
	char		last_module_name[128] = "";

	if (f == NULL)
		return 0;
	buf_append(&names, "", 1);
	while (fgets(line, sizeof(line), f))
	{
		unsigned long long addr;
		char		type;
		char		name[256];
		char		module[128] = "";
		int			n = sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, module);

		if (n < 3 || addr == 0)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (nsyms == cap)
		{
			cap = cap ? cap * 2 : 65536;
			syms = xrealloc(syms, cap * sizeof(LoadedSymbol));
		}
		syms[nsyms].addr = addr;
		syms[nsyms].name = (uint32_t) names.len;
		buf_append(&names, name, strlen(name) + 1);
		if (module[0] == '\0')
			syms[nsyms].module = 0;
		else
		{
			if (strcmp(module, last_module_name) != 0)
			{
				last_module = (uint32_t) names.len;
				buf_append(&names, module, strlen(module) + 1);
				snprintf(last_module_name, sizeof(last_module_name), "%s", module);
			}
			syms[nsyms].module = last_module;
		}
		nsyms++;
	}
	fclose(f);
	qsort(syms, nsyms, sizeof(LoadedSymbol), loaded_cmp);
	/* Addresses beyond 4 GB of the lowest cannot be kept (none are). */
	while (nsyms > 0 && syms[nsyms - 1].addr - syms[0].addr > UINT32_MAX)
		nsyms--;
	base_addr = nsyms ? syms[0].addr : 0;
	offsets = xcalloc(nsyms ? nsyms : 1, sizeof(uint32_t));
	for (size_t i = 0; i < nsyms; i++)
		offsets[i] = (uint32_t) (syms[i].addr - base_addr);
	pack(syms, names.data);
	free(syms);
	buf_free(&names);
	return (int) nsyms;
}

/* Decompress block b into block_text; false if it cannot be read. */
static bool
load_block(size_t b)
{
	uLongf		len = block_size[b];

	if (cached_block == (long) b)
		return true;
	block_text = xrealloc(block_text, len ? len : 1);
	if (uncompress((Bytef *) block_text, &len, packed + block_start[b],
				   block_start[b + 1] - block_start[b]) != Z_OK)
	{
		cached_block = -1;
		return false;
	}
	cached_block = (long) b;
	return true;
}

const char *
kernel_symbol(uint64_t addr, const char **module)
{
	size_t		lo = 0;
	size_t		hi = nsyms;
	size_t		b;
	const char *p;

	if (nsyms == 0 || addr < base_addr || addr - base_addr > UINT32_MAX)
		return NULL;
	/* The last symbol at or below addr. */
	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (offsets[mid] <= addr - base_addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	b = (lo - 1) / SYMBOLS_PER_BLOCK;
	if (!load_block(b))
		return NULL;
	p = block_text;
	for (size_t i = b * SYMBOLS_PER_BLOCK; i < lo - 1; i++)
	{
		p += strlen(p) + 1;		/* name */
		p += strlen(p) + 1;		/* module */
	}
	*module = p + strlen(p) + 1;
	return p;
}

const char *
kernel_release(void)
{
	if (release[0] == '\0')
	{
		struct utsname u;

		if (uname(&u) == 0)
			snprintf(release, sizeof(release), "%s", u.release);
	}
	return release;
}

/* The GNU build id note (type 3) among the kernel's notes, in hex. */
const char *
kernel_build_id(void)
{
	size_t		len;
	unsigned char *notes;
	size_t		off = 0;

	if (build_id[0] != '\0')
		return build_id;
	notes = (unsigned char *) read_file("/sys/kernel/notes", &len);
	while (notes && off + 12 <= len)
	{
		uint32_t	namesz, descsz, type;
		size_t		desc;

		memcpy(&namesz, notes + off, 4);
		memcpy(&descsz, notes + off + 4, 4);
		memcpy(&type, notes + off + 8, 4);
		desc = off + 12 + ((namesz + 3) & ~3u);
		if (desc + descsz > len)
			break;
		if (type == 3 && namesz == 4 && memcmp(notes + off + 12, "GNU", 4) == 0 &&
			descsz > 0 && descsz <= 40)
		{
			for (uint32_t i = 0; i < descsz; i++)
				snprintf(build_id + 2 * i, 3, "%02x", notes[desc + i]);
			break;
		}
		off = desc + ((descsz + 3) & ~3u);
	}
	free(notes);
	if (build_id[0] == '\0')
		snprintf(build_id, sizeof(build_id), "%s", kernel_release());
	return build_id;
}
