/*
 * The running server: its settings, what it holds now, and the parts that
 * share it.  http.c receives requests (libmicrohttpd), workers.c stores
 * them (a queue and one database connection per worker), main.c starts
 * and stops everything.
 */
#ifndef SERVER_SERVER_H
#define SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "request.h"
#include "responses.h"

typedef enum ReqState
{
	REQ_RECEIVING,
	REQ_QUEUED,					/* suspended, in the queue or with a worker */
	REQ_ANSWERED
} ReqState;

/* one request, from its headers to its answer */
typedef struct Req
{
	RequestInfo info;
	struct MHD_Connection *conn;
	ReqState	state;
	Buf			body;
	size_t		reserved;		/* bytes of the body budget held */
	size_t		received;		/* bytes of the body received */
	double		start;			/* monotonic seconds */
	const char *who;			/* the credentials' user, for the log */
	char		remote[64];
	char		method[8];
	Outcome		outcome;
	Response	response;		/* set by a worker, sent on resume */
	bool		counted;		/* holds a place of --max-requests */
	struct Req *next;			/* in the queue */
} Req;

typedef struct Server
{
	ServerConfig cfg;
	AuthTable  *auth;
	struct MHD_Daemon *daemon;
	atomic_int	in_flight;
	atomic_size_t body_bytes;
	atomic_size_t db_max_profile_size;	/* the database's parca.max_profile_size; 0: unknown */
	atomic_bool db_up;
	atomic_bool draining;
	char		db_error[512];	/* why the last check failed (under queue_lock) */

	pthread_mutex_t queue_lock;
	pthread_cond_t queue_cond;
	pthread_cond_t idle_cond;	/* signalled as requests end, for the drain */
	pthread_cond_t health_cond;	/* wakes the health check early, to stop */
	Req		   *queue_head;
	Req		   *queue_tail;
	bool		workers_stop;
	pthread_t  *workers;
	pthread_t	health;
} Server;

extern Server server;

double		monotonic_seconds(void);

/* http.c */
bool		http_start(char *err, size_t errlen);
/* no new connections; the open ones are served */
void		http_quiesce(void);
void		http_stop(void);

/* workers.c */
bool		workers_start(char *err, size_t errlen);
void		workers_enqueue(Req *q);
void		workers_stop(void);
/* bytes a profile may take decompressed: the flag and the database's limit */
size_t		effective_profile_limit(void);

#endif
