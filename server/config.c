/* config.c: flags and the config file (config.h) */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum OptionKind
{
	OPT_STRING,
	OPT_INT,
	OPT_SIZE,
	OPT_BOOL
} OptionKind;

typedef struct Option
{
	const char *name;
	OptionKind	kind;
	size_t		offset;
	const char *help;
} Option;

#define OPT(n, k, field, h) {n, k, offsetof(ServerConfig, field), h}

static const Option options[] = {
	OPT("listen", OPT_STRING, listen, "address to listen on: host:port, [v6]:port or :port (127.0.0.1:7070)"),
	OPT("dsn", OPT_STRING, dsn, "libpq connection string of the database (PG* variables when empty)"),
	OPT("workers", OPT_INT, workers, "database connections: requests stored at once (4)"),
	OPT("max-requests", OPT_INT, max_requests, "requests in flight; more are refused with 429 (256)"),
	OPT("max-body-size", OPT_SIZE, max_body_size, "largest request body as sent (16MB)"),
	OPT("max-profile-size", OPT_SIZE, max_profile_size,
		"largest profile once decompressed; the database's parca.max_profile_size applies too (64MB)"),
	OPT("max-memory", OPT_SIZE, max_memory, "request bodies held at once; more are refused with 503 (256MB)"),
	OPT("request-timeout", OPT_INT, request_timeout, "seconds from a request's start to its answer (30)"),
	OPT("idle-timeout", OPT_INT, idle_timeout, "seconds a connection may send nothing (15)"),
	OPT("max-connections", OPT_INT, max_connections, "open connections (1024)"),
	OPT("max-connections-per-ip", OPT_INT, max_connections_per_ip, "open connections from one address (64)"),
	OPT("drain-timeout", OPT_INT, drain_timeout, "seconds SIGTERM waits for requests in flight (30)"),
	OPT("tls-cert", OPT_STRING, tls_cert, "PEM certificate (chain): serve HTTPS"),
	OPT("tls-key", OPT_STRING, tls_key, "PEM private key of --tls-cert"),
	OPT("auth-file", OPT_STRING, auth_file, "credentials, one a line: `bearer TOKEN ROLE` or `basic USER PASSWORD ROLE`"),
	OPT("allow-anonymous", OPT_BOOL, allow_anonymous, "store requests without credentials (only when listening on loopback)"),
	OPT("anonymous-role", OPT_STRING, anonymous_role, "role of requests without credentials (the login role's own rights when unset)"),
	OPT("web-root", OPT_STRING, web_root, "folder of the web UI's built files (" PARCA_WEB_ROOT ")"),
	OPT("anonymous-reader-role", OPT_STRING, anonymous_reader_role,
		"role the web UI's API reads as without credentials (with --allow-anonymous; the login role's own rights when unset)"),
	OPT("max-response-size", OPT_SIZE, max_response_size, "largest answer of the web UI's API (64MB)"),
	OPT("jfr-thread-labels", OPT_BOOL, jfr_thread_labels, "JFR: label each sample with its thread_name (a series per thread)"),
	OPT("save-bodies", OPT_STRING, save_bodies, "debugging: save every request body into this folder"),
};

void
config_usage(void)
{
	fprintf(stderr, "usage: parca-server [--config FILE] [--name value ...]\n\n"
			"Accepts profiles pushed over HTTP (Pyroscope /ingest and Push API, OpenTelemetry\n"
			"profiles) and stores them in PostgreSQL with parca_ingest_pprof (docs/push.md);\n"
			"serves the web UI and its API at / (docs/web.md).\n\n");
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		fprintf(stderr, "  --%-24s %s\n", options[i].name, options[i].help);
	fprintf(stderr, "  --%-24s %s\n", "config FILE", "read `name = value` lines (the names above) first");
}

static bool
parse_size(const char *s, size_t *out)
{
	char	   *end;
	unsigned long long v;
	unsigned long long mult = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return false;
	while (*end == ' ')
		end++;
	if (strcasecmp(end, "kB") == 0 || strcasecmp(end, "k") == 0)
		mult = 1024;
	else if (strcasecmp(end, "MB") == 0 || strcasecmp(end, "M") == 0)
		mult = 1024 * 1024;
	else if (strcasecmp(end, "GB") == 0 || strcasecmp(end, "G") == 0)
		mult = 1024ULL * 1024 * 1024;
	else if (*end && strcasecmp(end, "B") != 0)
		return false;
	if (v > SIZE_MAX / mult)
		return false;
	*out = (size_t) (v * mult);
	return true;
}

static bool
set_option(ServerConfig *cfg, const char *name, const char *value, const char *where)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
	{
		const Option *o = &options[i];
		void	   *field = (char *) cfg + o->offset;

		if (strcmp(o->name, name) != 0)
			continue;
		switch (o->kind)
		{
			case OPT_STRING:
				free(*(char **) field);
				*(char **) field = strdup(value);
				return true;
			case OPT_INT:
				{
					char	   *end;
					long		v;

					errno = 0;
					v = strtol(value, &end, 10);
					if (errno || end == value || *end || v < 0 || v > INT_MAX)
					{
						fprintf(stderr, "parca-server: %s: --%s wants a whole number, not \"%s\"\n", where, name, value);
						return false;
					}
					*(int *) field = (int) v;
					return true;
				}
			case OPT_SIZE:
				if (!parse_size(value, (size_t *) field))
				{
					fprintf(stderr, "parca-server: %s: --%s wants a size such as 16MB, not \"%s\"\n", where, name, value);
					return false;
				}
				return true;
			case OPT_BOOL:
				if (strcmp(value, "true") == 0 || strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
					*(bool *) field = true;
				else if (strcmp(value, "false") == 0 || strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
					*(bool *) field = false;
				else
				{
					fprintf(stderr, "parca-server: %s: --%s wants true or false, not \"%s\"\n", where, name, value);
					return false;
				}
				return true;
		}
	}
	fprintf(stderr, "parca-server: %s: unknown setting \"%s\" (--help lists them)\n", where, name);
	return false;
}

static bool
is_bool(const char *name)
{
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (strcmp(options[i].name, name) == 0)
			return options[i].kind == OPT_BOOL;
	return false;
}

static char *
trim(char *s)
{
	char	   *e;

	while (isspace((unsigned char) *s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char) e[-1]))
		*--e = 0;
	return s;
}

static bool
load_file(ServerConfig *cfg, const char *path)
{
	FILE	   *f = fopen(path, "r");
	char		line[4096];
	int			lineno = 0;
	bool		ok = true;

	if (!f)
	{
		fprintf(stderr, "parca-server: cannot read config file %s: %s\n", path, strerror(errno));
		return false;
	}
	while (ok && fgets(line, sizeof(line), f))
	{
		char	   *eq;
		char	   *s;
		char		where[PATH_MAX + 32];

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		s = trim(line);
		if (*s == 0 || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq)
		{
			fprintf(stderr, "parca-server: %s: expected `name = value`\n", where);
			ok = false;
			break;
		}
		*eq = 0;
		{
			char	   *value = trim(eq + 1);
			size_t		n = strlen(value);

			/* a value may be quoted, to keep blanks at its ends */
			if (n >= 2 && value[0] == '"' && value[n - 1] == '"')
			{
				value[n - 1] = 0;
				value++;
			}
			ok = set_option(cfg, trim(s), value, where);
		}
	}
	fclose(f);
	return ok;
}

bool
config_load(ServerConfig *cfg, int argc, char **argv)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen = strdup("127.0.0.1:7070");
	cfg->dsn = strdup("");
	cfg->workers = 4;
	cfg->max_requests = 256;
	cfg->max_body_size = 16 * 1024 * 1024;
	cfg->max_profile_size = 64 * 1024 * 1024;
	cfg->max_memory = 256 * 1024 * 1024;
	cfg->request_timeout = 30;
	cfg->idle_timeout = 15;
	cfg->max_connections = 1024;
	cfg->max_connections_per_ip = 64;
	cfg->drain_timeout = 30;
	cfg->web_root = strdup(PARCA_WEB_ROOT);
	cfg->max_response_size = 64 * 1024 * 1024;

	/* the file first, so that flags win */
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
		{
			if (!load_file(cfg, argv[i + 1]))
				return false;
		}
		else if (strncmp(argv[i], "--config=", 9) == 0)
		{
			if (!load_file(cfg, argv[i] + 9))
				return false;
		}
	}
	for (int i = 1; i < argc; i++)
	{
		char		name[64];
		const char *arg = argv[i];
		const char *value;
		const char *eq;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		{
			config_usage();
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0)
		{
			fprintf(stderr, "parca-server: unexpected argument \"%s\" (--help lists the flags)\n", arg);
			return false;
		}
		arg += 2;
		eq = strchr(arg, '=');
		snprintf(name, sizeof(name), "%.*s", eq ? (int) (eq - arg) : (int) strlen(arg), arg);
		if (eq)
			value = eq + 1;
		else if (is_bool(name))
			value = "true";
		else if (i + 1 < argc)
			value = argv[++i];
		else
		{
			fprintf(stderr, "parca-server: --%s needs a value\n", name);
			return false;
		}
		if (strcmp(name, "config") == 0)
			continue;
		if (!set_option(cfg, name, value, "command line"))
			return false;
	}
	if (cfg->workers < 1 || cfg->workers > 256)
	{
		fprintf(stderr, "parca-server: --workers must be 1 to 256\n");
		return false;
	}
	if (cfg->max_requests < 1 || cfg->max_body_size < 1 || cfg->max_profile_size < 1024 ||
		cfg->request_timeout < 1 || cfg->idle_timeout < 1 || cfg->max_connections < 1 ||
		cfg->max_connections_per_ip < 1 || cfg->max_memory < cfg->max_body_size || cfg->max_response_size < 1024)
	{
		fprintf(stderr, "parca-server: --max-requests, --request-timeout, --idle-timeout and the connection limits "
				"must be at least 1, --max-profile-size and --max-response-size at least 1kB, "
				"--max-memory at least --max-body-size\n");
		return false;
	}
	if (cfg->max_profile_size > 1024 * 1024 * 1024 || cfg->max_body_size > 1024 * 1024 * 1024)
	{
		fprintf(stderr, "parca-server: --max-profile-size and --max-body-size may be at most 1GB (a bytea's limit)\n");
		return false;
	}
	if (!cfg->tls_cert != !cfg->tls_key)
	{
		fprintf(stderr, "parca-server: --tls-cert and --tls-key go together\n");
		return false;
	}
	return true;
}
