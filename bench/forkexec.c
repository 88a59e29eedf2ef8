/*
 * forkexec.c
 *		A churn of short-lived processes for bench/agent.sh: fork and exec,
 *		RATE times a second for SECONDS, a child PROGRAM ARG... (run as
 *		"PROGRAM ARG...", its output discarded).  Prints the rate it
 *		achieved when done or terminated (SIGTERM): a loaded machine can
 *		starve it.
 *
 *   forkexec RATE SECONDS PROGRAM [ARG]...
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop_forking;

static void
on_term(int sig)
{
	stop_forking = 1;
}

int
main(int argc, char **argv)
{
	struct sigaction sa = {0};
	struct timespec start;
	struct timespec next;
	struct timespec end;
	double		rate;
	long		n;
	long		step_ns;
	long		i;

	if (argc < 4 || (rate = atof(argv[1])) <= 0)
	{
		fprintf(stderr, "usage: forkexec RATE SECONDS PROGRAM [ARG]...\n");
		return 2;
	}
	n = (long) (rate * atof(argv[2]));
	step_ns = (long) (1e9 / rate);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGCHLD, SIG_IGN);	/* children are reaped by the kernel */
	clock_gettime(CLOCK_MONOTONIC, &start);
	next = start;
	/* Absolute deadlines, so that the rate holds when a fork is late. */
	for (i = 0; i < n && !stop_forking; i++)
	{
		if (fork() == 0)
		{
			int			null = open("/dev/null", O_WRONLY);

			dup2(null, 1);
			execv(argv[3], argv + 3);
			_exit(127);
		}
		next.tv_nsec += step_ns;
		while (next.tv_nsec >= 1000000000)
		{
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	printf("%.1f\n", i / (end.tv_sec - start.tv_sec + (end.tv_nsec - start.tv_nsec) / 1e9));
	return 0;
}
