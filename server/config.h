/*
 * parca-server's settings: command-line flags and a config file of the
 * same names (`name = value` lines); flags win over the file.
 */
#ifndef SERVER_CONFIG_H
#define SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ServerConfig
{
	char	   *listen;			/* host:port, [v6]:port or :port */
	char	   *dsn;			/* libpq connection string */
	int			workers;		/* database connections, requests stored at once */
	int			max_requests;	/* requests in flight (receiving, queued, storing) */
	size_t		max_body_size;	/* bytes of a request body as sent */
	size_t		max_profile_size;	/* bytes of a profile once decompressed */
	size_t		max_memory;		/* bytes of request bodies held at once */
	int			request_timeout;	/* seconds from the first byte to the answer */
	int			idle_timeout;	/* seconds a connection may stay silent */
	int			max_connections;
	int			max_connections_per_ip;
	int			drain_timeout;	/* seconds SIGTERM waits for requests in flight */
	char	   *tls_cert;
	char	   *tls_key;
	char	   *auth_file;		/* tokens and users, each with its role */
	bool		allow_anonymous;	/* writes without credentials (loopback only) */
	char	   *anonymous_role;
	char	   *save_bodies;	/* a folder: every request body is saved there */
	bool		jfr_thread_labels;	/* JFR samples labelled with their thread */
	char	   *web_root;		/* the web UI's built files */
	char	   *anonymous_reader_role;	/* the UI's role without credentials */
	size_t		max_response_size;	/* bytes of an answer of the UI's API */
} ServerConfig;

/* Fills cfg from argv (and --config FILE); false after printing why. */
bool		config_load(ServerConfig *cfg, int argc, char **argv);
void		config_usage(void);

#endif
