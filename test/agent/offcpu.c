/*
 * offcpu.c
 *		Waits with known stacks and durations, for the agent's off-CPU
 *		tests; each wait is timed around its system call (CLOCK_MONOTONIC).
 *
 *   offcpu sleep N MS           N waits of MS ms in nanosleep(2), from
 *                               wait_in_nanosleep()
 *   offcpu read N MS            N waits in read(2) on a pipe that a timer
 *                               (SIGALRM every MS ms) writes a byte to, from
 *                               wait_in_read()
 *   offcpu threads T SECONDS MS T threads waiting MS ms at a time in
 *                               nanosleep(2) for SECONDS, from
 *                               wait_in_threads()
 *   offcpu tail N MS            N waits of MS ms in nanosleep(2) made by
 *                               nanosleep_at_cfi_end(), whose system call
 *                               is the last instruction its CFI covers (as
 *                               in glibc's __restore_rt), from
 *                               wait_in_tail()
 *
 * Prints the nanoseconds waited in all and the number of waits.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int	pipe_fds[2];
static long wait_ms;
static double seconds;
static atomic_llong waited_ns;
static atomic_llong waits;

static long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

NOINLINE static void
wait_in_nanosleep(void)
{
	struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000};
	long long	start = now_ns();

	nanosleep(&ts, NULL);
	waited_ns += now_ns() - start;
	waits++;
}

/*
 * nanosleep_at_cfi_end(req): nanosleep(2) without libc; the CFI ends after
 * the system call, so the address it returns to is outside it, and the
 * unwinder must look up the call's own instruction.  Leaf: the return
 * address stays at the stack pointer.
 */
void		nanosleep_at_cfi_end(const struct timespec *req);
__asm__(".text\n"
		".globl nanosleep_at_cfi_end\n"
		".type nanosleep_at_cfi_end, @function\n"
		"nanosleep_at_cfi_end:\n"
		".cfi_startproc\n"
		"	xorl %esi, %esi\n"
		"	movl $35, %eax\n"	/* SYS_nanosleep on x86-64 */
		"	syscall\n"
		".cfi_endproc\n"
		"	ret\n"
		".size nanosleep_at_cfi_end, .-nanosleep_at_cfi_end\n");

NOINLINE static void
wait_in_tail(void)
{
	struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000};
	long long	start = now_ns();

	nanosleep_at_cfi_end(&ts);
	waited_ns += now_ns() - start;
	waits++;
}

NOINLINE static void
wait_in_read(void)
{
	char		c;
	long long	start = now_ns();

	if (read(pipe_fds[0], &c, 1) != 1)
		exit(1);
	waited_ns += now_ns() - start;
	waits++;
}

static void
on_alarm(int sig)
{
	if (write(pipe_fds[1], "x", 1) != 1)
		_exit(1);
}

NOINLINE static void *
wait_in_threads(void *arg)
{
	long long	end = now_ns() + (long long) (seconds * 1e9);
	struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000};

	while (now_ns() < end)
	{
		long long	start = now_ns();

		nanosleep(&ts, NULL);
		waited_ns += now_ns() - start;
		waits++;
	}
	return arg;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "sleep") == 0)
	{
		wait_ms = atol(argv[3]);
		for (long i = 0; i < atol(argv[2]); i++)
			wait_in_nanosleep();
	}
	else if (argc == 4 && strcmp(argv[1], "tail") == 0)
	{
		wait_ms = atol(argv[3]);
		for (long i = 0; i < atol(argv[2]); i++)
			wait_in_tail();
	}
	else if (argc == 4 && strcmp(argv[1], "read") == 0)
	{
		struct sigaction sa = {0};
		struct itimerval it = {{0, 0}, {0, 0}};

		wait_ms = atol(argv[3]);
		if (pipe(pipe_fds) != 0)
			return 1;
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		it.it_interval.tv_sec = it.it_value.tv_sec = wait_ms / 1000;
		it.it_interval.tv_usec = it.it_value.tv_usec = (wait_ms % 1000) * 1000;
		setitimer(ITIMER_REAL, &it, NULL);
		for (long i = 0; i < atol(argv[2]); i++)
			wait_in_read();
	}
	else if (argc == 5 && strcmp(argv[1], "threads") == 0)
	{
		int			n = atoi(argv[2]);
		pthread_t  *t = calloc(n, sizeof(pthread_t));

		seconds = atof(argv[3]);
		wait_ms = atol(argv[4]);
		for (int i = 0; i < n; i++)
			pthread_create(&t[i], NULL, wait_in_threads, NULL);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	else
	{
		fprintf(stderr, "usage: offcpu sleep|read|tail N MS | offcpu threads T SECONDS MS\n");
		return 2;
	}
	printf("%lld %lld\n", (long long) waited_ns, (long long) waits);
	return 0;
}
