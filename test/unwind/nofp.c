/*
 * nofp.c
 *		Workloads for the unwinding tests, built with -O2
 *		-fomit-frame-pointer; every named function is noinline and does
 *		something after its call, so no call becomes a jump.
 *
 *   nofp qsort SECONDS     libc's qsort with a comparison callback:
 *                          compare <- (libc) <- qsort <- sort_loop <- main
 *   nofp deflate SECONDS   zlib's deflate: (libz) <- deflate <- compress_loop <- main
 *   nofp recurse SECONDS   recurse() 200 deep, then spin there
 *   nofp signal SECONDS    a SIGPROF handler burning CPU on top of
 *                          spin_outer: handler <- (signal frame) <- spin_outer <- main
 *   nofp plt SECONDS       call a tiny library function in a loop, so that
 *                          samples land in its PLT stub too:
 *                          zlibVersion|stub <- plt_loop <- main
 *   nofp thread SECONDS    spin in a second thread: spin <- worker <- (thread start)
 *   nofp deep SECONDS      deep() 100 deep with 200-byte frames (more stack
 *                          than the agent copies), then spin there
 *   nofp short MS          spin for MS milliseconds of CPU time and exit
 *   nofp late MS           spin for MS ms, then look symbols up for 150 ms
 *                          and exit: the dynamic loader's code, run only in
 *                          the last moments (ld.so) <- dlsym <- lookup_loop <- main
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <zlib.h>

#define NOINLINE __attribute__((noinline))

static double target;
static volatile unsigned long sink;

static double
cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static int
compare(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *) a;
	unsigned int y = *(const unsigned int *) b;

	return (x > y) - (x < y);
}

NOINLINE static void
sort_loop(void)
{
	static unsigned int v[100000];
	unsigned int seed = 1;

	while (cpu_seconds() < target)
	{
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			v[i] = seed = seed * 1103515245 + 12345;
		qsort(v, sizeof(v) / sizeof(v[0]), sizeof(v[0]), compare);
		sink += v[0];
	}
}

NOINLINE static void
compress_loop(void)
{
	static unsigned char in[1 << 20];
	static unsigned char out[1 << 21];
	unsigned int seed = 1;

	/* Compressible but not trivial: words from a small alphabet. */
	for (size_t i = 0; i < sizeof(in); i++)
	{
		seed = seed * 1103515245 + 12345;
		in[i] = "abcdefgh  \n"[(seed >> 16) % 11];
	}
	while (cpu_seconds() < target)
	{
		z_stream zs;

		memset(&zs, 0, sizeof(zs));
		deflateInit(&zs, 9);
		zs.next_in = in;
		zs.avail_in = sizeof(in);
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		deflate(&zs, Z_FINISH);
		sink += zs.total_out;
		deflateEnd(&zs);
	}
}

NOINLINE static void
spin(void)
{
	while (cpu_seconds() < target)
		for (int i = 0; i < 100000; i++)
			sink += i;
}

NOINLINE static void
recurse(int depth)
{
	if (depth <= 1)
		spin();
	else
		recurse(depth - 1);
	__asm__ volatile ("");
}

NOINLINE static void
deep(int depth)
{
	volatile char frame[200];

	frame[0] = (char) depth;
	if (depth <= 1)
		spin();
	else
		deep(depth - 1);
	sink += frame[0];
}

/*
 * SIGPROF after 5 ms of CPU time, armed once at a time: a periodic timer
 * whose period the handler outlasts (10 M additions take 5 to 20 ms,
 * depending on the core and what shares it) would deliver the next
 * signal as the handler returns, and the interrupted code would never
 * run again.
 */
static void
arm_timer(void)
{
	struct itimerval it = {{0, 0}, {0, 5000}};

	setitimer(ITIMER_PROF, &it, NULL);
}

NOINLINE static void
handler(int sig)
{
	/* Half the CPU time or more in the handler. */
	for (int i = 0; i < 10000000; i++)
		sink += i;
	arm_timer();
}

NOINLINE static void
spin_outer(void)
{
	signal(SIGPROF, handler);
	arm_timer();
	spin();
	__asm__ volatile ("");
}

NOINLINE static void
lookup_loop(void)
{
	while (cpu_seconds() < target)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long) dlsym(RTLD_DEFAULT, "zlibVersion");
}

NOINLINE static void
plt_loop(void)
{
	while (cpu_seconds() < target)
		for (int i = 0; i < 1000000; i++)
			sink += (unsigned long) zlibVersion();
}

NOINLINE static void *
worker(void *arg)
{
	spin();
	__asm__ volatile ("");
	return arg;
}

int
main(int argc, char **argv)
{
	if (argc != 3)
	{
		fprintf(stderr, "usage: nofp qsort|deflate|recurse|deep|signal|plt|thread SECONDS | nofp short|late MS\n");
		return 2;
	}
	target = atof(argv[2]);
	if (strcmp(argv[1], "qsort") == 0)
		sort_loop();
	else if (strcmp(argv[1], "deflate") == 0)
		compress_loop();
	else if (strcmp(argv[1], "recurse") == 0)
		recurse(200);
	else if (strcmp(argv[1], "deep") == 0)
		deep(100);
	else if (strcmp(argv[1], "signal") == 0)
		spin_outer();
	else if (strcmp(argv[1], "plt") == 0)
		plt_loop();
	else if (strcmp(argv[1], "thread") == 0)
	{
		pthread_t	t;

		pthread_create(&t, NULL, worker, NULL);
		pthread_join(t, NULL);
	}
	else if (strcmp(argv[1], "short") == 0)
	{
		target /= 1000;
		spin();
	}
	else if (strcmp(argv[1], "late") == 0)
	{
		target /= 1000;
		spin();
		target += 0.15;
		lookup_loop();
	}
	else
		return 2;
	printf("%.3f\n", cpu_seconds());
	return 0;
}
