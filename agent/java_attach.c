/*
 * java_attach.c
 *		The HotSpot attach protocol, on a thread of its own; see
 *		java_attach.h.
 *
 * A request on the socket is "1\0" (the protocol's version), the command
 * ("jcmd\0") and three arguments, each NUL-terminated (the diagnostic
 * command line, then two empty ones); the answer is a status line ("0"
 * for success) and the command's output, until the JVM closes the socket.
 */
#define _GNU_SOURCE
#include "java_attach.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "jit_file.h"
#include "util.h"

#define QUEUE_LEN 16
/* How long a JVM gets to open its socket after SIGQUIT, in 100 ms steps. */
#define SOCKET_WAIT_STEPS 50
/* How long a command's answer may take (writing a large map). */
#define ANSWER_TIMEOUT_S 20
/* Most of an answer kept (VM.flags' is a few hundred bytes). */
#define ANSWER_MAX 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool started;
static bool stopping;
static JavaAttachRequest requests[QUEUE_LEN];
static int nrequests;
static JavaAttachResult results[QUEUE_LEN];
static int nresults;

uint64_t
java_attach_start_ticks(uint32_t pid)
{
	char		path[64];
	char	   *text;
	const char *c;
	unsigned long long ticks = 0;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return 0;
	/* after the name (which may hold anything), field 22 */
	if ((c = strrchr(text, ')')) != NULL)
	{
		int			field = 2;

		for (; *c && field < 22; c++)
			if (*c == ' ')
				field++;
		ticks = strtoull(c, NULL, 10);
	}
	free(text);
	return ticks;
}

/* Does the process catch SIGQUIT (SigCgt in /proc/PID/status)? */
static bool
catches_sigquit(uint32_t pid)
{
	char		path[64];
	char	   *text;
	const char *c;
	bool		caught = false;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if ((text = read_file(path, NULL)) == NULL)
		return false;
	if ((c = strstr(text, "\nSigCgt:")) != NULL)
		caught = (strtoull(c + 8, NULL, 16) & (1ull << (SIGQUIT - 1))) != 0;
	free(text);
	return caught;
}

/* SIGQUIT to the process if it is still the one of the request. */
static bool
send_sigquit(const JavaAttachRequest *req)
{
	int			pidfd = (int) syscall(SYS_pidfd_open, req->pid, 0);
	bool		sent = false;

	if (pidfd < 0)
		return false;
	if (java_attach_start_ticks(req->pid) == req->start_ticks)
		sent = syscall(SYS_pidfd_send_signal, pidfd, SIGQUIT, NULL, 0) == 0;
	close(pidfd);
	return sent;
}

/* Is tmp/name a socket of the JVM's user? */
static bool
socket_ready(int tmp, const char *name, const JavaAttachRequest *req)
{
	struct stat st;

	return fstatat(tmp, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
		(st.st_uid == req->euid || st.st_uid == 0);
}

/* Make the JVM open its socket; false (and why in error) if it did not. */
static bool
start_listener(int tmp, const char *sock, const JavaAttachRequest *req, char *error,
			   size_t error_len)
{
	char		name[64];
	int			fd;
	bool		ready = false;

	if (!catches_sigquit(req->pid))
	{
		snprintf(error, error_len, "it does not catch SIGQUIT (-Xrs?)");
		return false;
	}
	snprintf(name, sizeof(name), ".attach_pid%u", req->nspid);
	/*
	 * /tmp is anyone's: a file already there is used only if it is the
	 * JVM's user's own (left by jcmd), never given away (a hard link to
	 * another file, a FIFO).
	 */
	fd = openat(tmp, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
				0600);
	if (fd < 0 && errno == EEXIST)
	{
		struct stat st;

		fd = openat(tmp, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
						st.st_uid != req->euid || st.st_nlink != 1))
		{
			close(fd);
			fd = -1;
			errno = EEXIST;
		}
	}
	else if (fd >= 0 && fchown(fd, req->euid, req->egid) != 0)
	{
		close(fd);
		fd = -1;
	}
	if (fd < 0)
	{
		snprintf(error, error_len, "cannot create /tmp/%s: %s", name, strerror(errno));
		return false;
	}
	close(fd);
	if (send_sigquit(req))
		for (int i = 0; i < SOCKET_WAIT_STEPS && !(ready = socket_ready(tmp, sock, req)); i++)
		{
			struct timespec step = {0, 100 * 1000 * 1000};

			nanosleep(&step, NULL);
		}
	unlinkat(tmp, name, 0);
	if (!ready)
		snprintf(error, error_len, "its attach socket did not appear (-XX:+DisableAttachMechanism?)");
	return ready;
}

/*
 * Run the diagnostic command on the JVM's socket: its output (malloc'd,
 * NUL-terminated) on success, else NULL and why in error.
 */
static char *
run_command(const JavaAttachRequest *req, const char *command, char *error, size_t error_len)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval timeout = {ANSWER_TIMEOUT_S, 0};
	char		request[256];
	int			len;
	int			fd;
	char	   *answer;
	size_t		have = 0;
	ssize_t		got;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/%u/root/tmp/.java_pid%u",
			 req->pid, req->nspid);
	len = snprintf(request, sizeof(request), "1%cjcmd%c%s%c%c%c", 0, 0, command, 0, 0, 0);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return NULL;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
	if (connect(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0 ||
		write(fd, request, (size_t) len) != len)
	{
		snprintf(error, error_len, "%s: %s", command, strerror(errno));
		close(fd);
		return NULL;
	}
	answer = xmalloc(ANSWER_MAX + 1);
	while (have < ANSWER_MAX && (got = read(fd, answer + have, ANSWER_MAX - have)) > 0)
		have += (size_t) got;
	close(fd);
	answer[have] = '\0';
	if (strncmp(answer, "0\n", 2) != 0)
	{
		/* the first line of the JVM's complaint, as printable text */
		size_t		n = strcspn(answer, "\n");

		if (n == 0 && have > 2)
			n = strcspn(answer + 2, "\n") + 2;
		snprintf(error, error_len, "%s: the JVM answered \"%.*s\"", command,
				 (int) (n < 100 ? n : 100), answer);
		for (char *c = error; *c; c++)
			if ((unsigned char) *c < ' ' || (unsigned char) *c > '~')
				*c = '?';
		free(answer);
		return NULL;
	}
	return answer;
}

static void
carry_out(const JavaAttachRequest *req, JavaAttachResult *res)
{
	char		sock[64];
	int			tmp = jit_open_dir(req->pid, "tmp");
	char	   *answer;

	memset(res, 0, sizeof(*res));
	res->pid = req->pid;
	res->start_ticks = req->start_ticks;
	res->frame_pointers = -1;
	snprintf(sock, sizeof(sock), ".java_pid%u", req->nspid);
	if (tmp < 0)
	{
		snprintf(res->error, sizeof(res->error), "cannot open its /tmp");
		return;
	}
	if (!socket_ready(tmp, sock, req) &&
		!start_listener(tmp, sock, req, res->error, sizeof(res->error)))
	{
		close(tmp);
		return;
	}
	close(tmp);
	if (req->want_flags &&
		(answer = run_command(req, "VM.flags", res->error, sizeof(res->error))) != NULL)
	{
		res->frame_pointers = strstr(answer, "-XX:+PreserveFramePointer") != NULL;
		free(answer);
	}
	if ((answer = run_command(req, "Compiler.perfmap", res->error, sizeof(res->error))) != NULL)
	{
		res->perf_map = true;
		free(answer);
	}
}

static void *
attach_thread(void *arg)
{
	pthread_mutex_lock(&lock);
	for (;;)
	{
		JavaAttachRequest req;
		JavaAttachResult res;

		while (nrequests == 0 && !stopping)
			pthread_cond_wait(&wake, &lock);
		if (stopping)
			break;
		req = requests[0];
		memmove(requests, requests + 1, (size_t) --nrequests * sizeof(requests[0]));
		pthread_mutex_unlock(&lock);
		carry_out(&req, &res);
		pthread_mutex_lock(&lock);
		if (nresults < QUEUE_LEN)
			results[nresults++] = res;
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

bool
java_attach_request(const JavaAttachRequest *req)
{
	bool		queued = false;

	pthread_mutex_lock(&lock);
	if (!started && !stopping)
	{
		sigset_t	all;
		sigset_t	old;

		/* the agent's signals (SIGINT, SIGTERM) stay the main thread's */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		started = pthread_create(&thread, NULL, attach_thread, NULL) == 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (started && nrequests < QUEUE_LEN)
	{
		requests[nrequests++] = *req;
		queued = true;
		pthread_cond_signal(&wake);
	}
	pthread_mutex_unlock(&lock);
	return queued;
}

bool
java_attach_result(JavaAttachResult *out)
{
	bool		got = false;

	pthread_mutex_lock(&lock);
	if (nresults > 0)
	{
		*out = results[0];
		memmove(results, results + 1, (size_t) --nresults * sizeof(results[0]));
		got = true;
	}
	pthread_mutex_unlock(&lock);
	return got;
}

void
java_attach_stop(void)
{
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
	if (started)
		pthread_join(thread, NULL);
	started = false;
}
