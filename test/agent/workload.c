/*
 * workload.c
 *		A known program for the agent's tests: main -> a -> b -> c -> spin,
 *		each frame a separate noinline function, built with frame pointers.
 *
 *   workload spin SECONDS     burn SECONDS of CPU time in spin()
 *   workload syscall SECONDS  the same in read(2) of /dev/zero, made with
 *                             the syscall instruction inside spin() so the
 *                             kernel frames sit on top of our own
 *
 * Prints the CPU seconds it used (user + system) when done.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double target;
static int	use_syscalls;
static int	zero_fd;
static char buf[1 << 16];

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static long
raw_read(int fd, void *p, unsigned long n)
{
	long		ret;

	__asm__ volatile ("syscall"
					  : "=a"(ret)
					  : "0"(0L), "D"((long) fd), "S"(p), "d"(n)
					  : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) void
spin(void)
{
	volatile unsigned long x = 0;

	while (cpu_seconds() < target)
	{
		if (use_syscalls)
			raw_read(zero_fd, buf, sizeof(buf));
		else
			for (int i = 0; i < 1000000; i++)
				x += i;
	}
}

__attribute__((noinline)) void
c(void)
{
	spin();
	__asm__ volatile ("");
}

__attribute__((noinline)) void
b(void)
{
	c();
	__asm__ volatile ("");
}

__attribute__((noinline)) void
a(void)
{
	b();
	__asm__ volatile ("");
}

int
main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "spin") != 0 && strcmp(argv[1], "syscall") != 0))
	{
		fprintf(stderr, "usage: workload spin|syscall SECONDS\n");
		return 2;
	}
	use_syscalls = strcmp(argv[1], "syscall") == 0;
	target = atof(argv[2]);
	zero_fd = open("/dev/zero", O_RDONLY);
	a();
	printf("%.3f\n", cpu_seconds());
	return 0;
}
