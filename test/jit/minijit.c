/*
 * minijit: a tiny JIT that describes its code in a jitdump file, as perf's
 * jitdump.h specifies (and V8, JVM agents and .NET write it): it copies two
 * functions of machine code into executable memory, outer_call (which
 * calls inner_loop through a register) and inner_loop (a countdown), logs
 * them (JIT_CODE_DEBUG_INFO with inner_loop's lines, then JIT_CODE_LOAD),
 * maps its dump file executable (which is how perf, and the agent, find
 * it) and burns CPU in them; halfway it moves inner_loop elsewhere and
 * logs JIT_CODE_MOVE.  Each record is written whole at once (a reader may
 * read at any time).
 *
 *   minijit DIR SECONDS: DIR/jit-PID.dump, SECONDS of CPU time.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int	dump;

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A record: its 16-byte prefix, then the body. */
static void
record(uint32_t id, const void *body, size_t len)
{
	char		buf[4096];
	uint32_t	total = (uint32_t) (16 + len);
	uint64_t	ts = now_ns();

	memcpy(buf, &id, 4);
	memcpy(buf + 4, &total, 4);
	memcpy(buf + 8, &ts, 8);
	memcpy(buf + 16, body, len);
	if (write(dump, buf, total) != (ssize_t) total)
		exit(1);
}

static void
code_load(uint64_t addr, uint64_t size, uint64_t index, const char *name)
{
	char		body[512];
	uint32_t	ids[2] = {(uint32_t) getpid(), (uint32_t) getpid()};
	size_t		nlen = strlen(name) + 1;

	memcpy(body, ids, 8);
	memcpy(body + 8, &addr, 8);	/* vma */
	memcpy(body + 16, &addr, 8);	/* code_addr */
	memcpy(body + 24, &size, 8);
	memcpy(body + 32, &index, 8);
	memcpy(body + 40, name, nlen);
	memcpy(body + 40 + nlen, (const void *) (uintptr_t) addr, size);	/* the code */
	record(0, body, 40 + nlen + size);
}

static void
debug_info(uint64_t addr)
{
	/* inner_loop's lines: its prologue line 10, its loop line 11 */
	static const struct
	{
		uint64_t	offset;
		int32_t		line;
	}			lines[] = {{0, 10}, {7, 11}};
	char		body[256];
	size_t		at = 16;
	uint64_t	n = 2;

	memcpy(body, &addr, 8);
	memcpy(body + 8, &n, 8);
	for (int i = 0; i < 2; i++)
	{
		uint64_t	a = addr + lines[i].offset;
		int32_t		discrim = 0;

		memcpy(body + at, &a, 8);
		memcpy(body + at + 8, &lines[i].line, 4);
		memcpy(body + at + 12, &discrim, 4);
		memcpy(body + at + 16, "/srv/jit/inner.src", 19);
		at += 16 + 19;
	}
	record(2, body, at);
}

int
main(int argc, char **argv)
{
	/* push rbp; mov rbp,rsp; mov rcx,rdi; 1: dec rcx; jnz 1b; pop rbp; ret */
	static const uint8_t inner[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf9, 0x48, 0xff,
	0xc9, 0x75, 0xfb, 0x5d, 0xc3};
	/* push rbp; mov rbp,rsp; movabs rax,INNER; call rax; pop rbp; ret */
	uint8_t		outer[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
	0xff, 0xd0, 0x5d, 0xc3};
	char		path[4096];
	uint8_t    *code;
	uint8_t    *inner_at;
	uint8_t    *outer_at;
	uint8_t    *moved_at;
	uint64_t	header[5] = {0};
	uint32_t   *h32 = (uint32_t *) header;
	double		seconds;
	void	   *marker;

	if (argc != 3)
		return 2;
	seconds = atof(argv[2]);
	snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], (int) getpid());
	if ((dump = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644)) < 0)
		return 1;
	h32[0] = 0x4A695444;		/* "JiTD" */
	h32[1] = 1;					/* version */
	h32[2] = sizeof(header);
	h32[3] = 62;				/* EM_X86_64 */
	h32[5] = (uint32_t) getpid();
	header[3] = now_ns();
	if (write(dump, header, sizeof(header)) != sizeof(header))
		return 1;
	marker = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, dump, 0);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (marker == MAP_FAILED || code == MAP_FAILED)
		return 1;
	outer_at = code;
	inner_at = code + 256;
	moved_at = code + 1024;
	memcpy(inner_at, inner, sizeof(inner));
	memcpy(outer + 6, &inner_at, 8);
	memcpy(outer_at, outer, sizeof(outer));
	debug_info((uint64_t) (uintptr_t) inner_at);
	code_load((uint64_t) (uintptr_t) inner_at, sizeof(inner), 1, "inner_loop");
	code_load((uint64_t) (uintptr_t) outer_at, sizeof(outer), 2, "outer_call");
	while (cpu_seconds() < seconds / 2)
		((void (*) (long)) outer_at) (10000000);
	/* move inner_loop: the old copy is gone (overwritten with traps) */
	memcpy(moved_at, inner, sizeof(inner));
	memcpy(outer_at + 6, &moved_at, 8);
	{
		char		body[56];
		uint32_t	ids[2] = {(uint32_t) getpid(), (uint32_t) getpid()};
		uint64_t	v[6] = {(uint64_t) (uintptr_t) moved_at, (uint64_t) (uintptr_t) inner_at,
		(uint64_t) (uintptr_t) moved_at, sizeof(inner), 1};

		memcpy(body, ids, 8);
		memcpy(body + 8, v, 40);
		record(1, body, 48);
	}
	memset(inner_at, 0xcc, sizeof(inner));
	while (cpu_seconds() < seconds)
		((void (*) (long)) outer_at) (10000000);
	printf("%d\n", (int) getpid());
	return 0;
}
