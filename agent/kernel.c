/*
 * kernel.c
 *		Kernel symbols, release and build id; see kernel.h.
 *
 * Symbols are kept as one sorted array of (address, name offset) over a
 * single string block, so the 100k-odd text symbols of a kernel cost a
 * few megabytes and a lookup is a binary search.
 */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "util.h"

typedef struct KSym
{
	uint64_t	addr;
	uint32_t	name;			/* offset into names */
	uint32_t	module;			/* offset into names; 0 is "" */
} KSym;

static KSym *syms;
static size_t nsyms;
static Buf	names;
static char release[256];
static char build_id[256];

static int
ksym_cmp(const void *a, const void *b)
{
	const KSym *x = a;
	const KSym *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int
kernel_load_symbols(void)
{
	FILE	   *f = fopen("/proc/kallsyms", "re");
	char		line[512];
	size_t		cap = 0;
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
			syms = xrealloc(syms, cap * sizeof(KSym));
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
	qsort(syms, nsyms, sizeof(KSym), ksym_cmp);
	return (int) nsyms;
}

const char *
kernel_symbol(uint64_t addr, const char **module)
{
	size_t		lo = 0;
	size_t		hi = nsyms;

	/* The last symbol at or below addr. */
	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	*module = names.data + syms[lo - 1].module;
	return names.data + syms[lo - 1].name;
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
