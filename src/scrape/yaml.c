/*
 * yaml.c
 *		parca_scrape_import_yaml(): the scrape_configs of a Parca
 *		configuration file into the scrape tables.
 *
 * The YAML is parsed with libyaml into a document tree; each scrape config
 * becomes a row of parca.scrape_jobs, its static_configs rows of
 * parca.scrape_targets and its profiling_config.pprof_config changes to
 * parca.scrape_profiles (over Parca's five defaults, which every new job
 * gets).  The rows are written through SPI as the calling user, so the
 * tables' privileges and checks apply as for any INSERT.  Keys this
 * implementation does not support (relabel_configs, tls_config, ...) are
 * named in a warning and skipped.
 *
 * libyaml's scanner does work in proportion to the nesting depth for every
 * token (a document of 200 kB of '[' took minutes), and building the
 * document cannot be interrupted: a first pass over the parser's events,
 * which checks for interrupts, refuses documents nested deeper than any
 * configuration is, or larger than YAML_MAX_SIZE, before the document is
 * built.
 */
#include "postgres.h"

#include <ctype.h>
#include <yaml.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "scrape/scrape_internal.h"
#include "types/valid_text.h"

/* A Parca configuration nests some 6 levels deep, and is a few kB. */
#define YAML_MAX_DEPTH 64
#define YAML_MAX_SIZE (16 * 1024 * 1024)

typedef struct ImportJob
{
	const char *name;
	int64		interval_ms;
	int64		timeout_ms;		/* -1: the default */
	const char *scheme;
	const char *path_prefix;
	StringInfoData params;		/* JSON object */
	StringInfoData files;		/* JSON array of file names */
	int			nfiles;
} ImportJob;

static int
line_of(yaml_node_t *node)
{
	return (int) node->start_mark.line + 1;
}

/*
 * A scalar's value (libyaml's UTF-8) in the database encoding; a NUL (from
 * an escape such as "\0") is not text, an error.
 */
static const char *
scalar(yaml_node_t *node, const char *what)
{
	if (node == NULL || node->type != YAML_SCALAR_NODE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration: %s must be a single value (line %d)",
						what, node ? line_of(node) : 0)));
	if (memchr(node->data.scalar.value, '\0', node->data.scalar.length) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("Parca configuration: %s contains a NUL character (line %d)",
						what, line_of(node))));
	return pg_any_to_server((const char *) node->data.scalar.value,
							(int) node->data.scalar.length, PG_UTF8);
}

static void
expect(yaml_node_t *node, yaml_node_type_t type, const char *what)
{
	if (node == NULL || node->type != type)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration: %s must be a %s (line %d)", what,
						type == YAML_MAPPING_NODE ? "mapping" : "list",
						node ? line_of(node) : 0)));
}

static bool
yaml_bool(yaml_node_t *node, const char *what)
{
	bool		result;

	if (!parse_bool(scalar(node, what), &result))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration: %s must be true or false (line %d)",
						what, line_of(node))));
	return result;
}

/* A Prometheus duration ("1m30s", "500ms", "2h") in milliseconds. */
static int64
duration_ms(yaml_node_t *node, const char *what)
{
	const char *s = scalar(node, what);
	const char *p = s;
	int64		total = 0;

	if (*p == '\0')
		goto bad;
	while (*p)
	{
		int64		n = 0;
		int64		unit;

		if (!isdigit((unsigned char) *p))
			goto bad;
		while (isdigit((unsigned char) *p))
		{
			n = n * 10 + (*p++ - '0');
			if (n > INT64CONST(1000000000000))
				goto bad;
		}
		if (strncmp(p, "ms", 2) == 0)
			unit = 1, p += 2;
		else if (*p == 's')
			unit = 1000, p++;
		else if (*p == 'm')
			unit = 60 * 1000, p++;
		else if (*p == 'h')
			unit = 3600 * 1000, p++;
		else if (*p == 'd')
			unit = 86400 * 1000, p++;
		else if (*p == 'w')
			unit = INT64CONST(7) * 86400 * 1000, p++;
		else if (*p == 'y')
			unit = INT64CONST(365) * 86400 * 1000, p++;
		else
			goto bad;
		total += n * unit;
	}
	return total;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("Parca configuration: %s %s is not a duration like \"10s\" or \"1m30s\" (line %d)",
					what, message_quote_cstring(s), line_of(node))));
	return 0;					/* keep compiler quiet */
}

static void
unsupported(const char *job, const char *where, const char *key)
{
	ereport(WARNING,
			(errmsg("Parca configuration: job %s: %s is not supported, ignored",
					message_quote_cstring(job), message_quote_cstring(psprintf("%s%s", where, key)))));
}

/* {"label": "value", ...} from a YAML mapping of scalars. */
static char *
labels_json(yaml_document_t *doc, yaml_node_t *map)
{
	StringInfoData buf;

	expect(map, YAML_MAPPING_NODE, "labels");
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
		 pair < map->data.mapping.pairs.top; pair++)
	{
		if (pair != map->data.mapping.pairs.start)
			appendStringInfoChar(&buf, ',');
		escape_json(&buf, scalar(yaml_document_get_node(doc, pair->key), "a label name"));
		appendStringInfoChar(&buf, ':');
		escape_json(&buf, scalar(yaml_document_get_node(doc, pair->value), "a label value"));
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* params: {name: [values]} (a single value is accepted too). */
static void
read_params(yaml_document_t *doc, yaml_node_t *map, StringInfo out)
{
	expect(map, YAML_MAPPING_NODE, "params");
	resetStringInfo(out);
	appendStringInfoChar(out, '{');
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
		 pair < map->data.mapping.pairs.top; pair++)
	{
		yaml_node_t *value = yaml_document_get_node(doc, pair->value);

		if (pair != map->data.mapping.pairs.start)
			appendStringInfoChar(out, ',');
		escape_json(out, scalar(yaml_document_get_node(doc, pair->key), "a parameter name"));
		appendStringInfoString(out, ":[");
		if (value && value->type == YAML_SEQUENCE_NODE)
		{
			for (yaml_node_item_t *item = value->data.sequence.items.start;
				 item < value->data.sequence.items.top; item++)
			{
				if (item != value->data.sequence.items.start)
					appendStringInfoChar(out, ',');
				escape_json(out, scalar(yaml_document_get_node(doc, *item), "a parameter value"));
			}
		}
		else
			escape_json(out, scalar(value, "a parameter value"));
		appendStringInfoChar(out, ']');
	}
	appendStringInfoChar(out, '}');
}

static void
run(const char *sql, int nargs, Oid *types, Datum *args, const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, args, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute_with_args returned %d for: %s", rc, sql);
}

static void
insert_job(ImportJob *job, bool replace)
{
	Oid			types[7] = {TEXTOID, INT8OID, INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
	Datum		args[7];
	char		nulls[8] = "       ";

	args[0] = CStringGetTextDatum(job->name);
	if (replace)
		run("DELETE FROM parca.scrape_jobs WHERE job_name OPERATOR(pg_catalog.=) $1", 1, types, args, NULL,
			SPI_OK_DELETE);
	else
	{
		run("SELECT FROM parca.scrape_jobs WHERE job_name OPERATOR(pg_catalog.=) $1", 1, types, args, NULL,
			SPI_OK_SELECT);
		if (SPI_processed > 0)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("scrape job %s already exists", message_quote_cstring(job->name)),
					 errhint("Pass replace => true to replace it.")));
	}
	args[1] = Int64GetDatum(job->interval_ms);
	args[2] = Int64GetDatum(job->timeout_ms);
	if (job->timeout_ms < 0)
		nulls[2] = 'n';
	args[3] = CStringGetTextDatum(job->scheme);
	args[4] = CStringGetTextDatum(job->path_prefix);
	args[5] = CStringGetTextDatum(job->params.data);
	args[6] = CStringGetTextDatum(job->files.data);
	run("INSERT INTO parca.scrape_jobs (job_name, scrape_interval, scrape_timeout, scheme, "
		"path_prefix, params, file_sd_files) VALUES ($1, $2 OPERATOR(pg_catalog.*) interval '1 ms', "
		"$3 OPERATOR(pg_catalog.*) interval '1 ms', $4, $5, $6::pg_catalog.jsonb, "
		"ARRAY(SELECT pg_catalog.jsonb_array_elements_text($7::pg_catalog.jsonb)))",
		7, types, args, nulls, SPI_OK_INSERT);
}

static void
import_static_configs(yaml_document_t *doc, const char *job, yaml_node_t *seq)
{
	Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};
	Datum		args[3];

	expect(seq, YAML_SEQUENCE_NODE, "static_configs");
	args[0] = CStringGetTextDatum(job);
	for (yaml_node_item_t *item = seq->data.sequence.items.start;
		 item < seq->data.sequence.items.top; item++)
	{
		yaml_node_t *group = yaml_document_get_node(doc, *item);
		yaml_node_t *targets = NULL;
		char	   *labels = "{}";

		expect(group, YAML_MAPPING_NODE, "a static_configs entry");
		for (yaml_node_pair_t *pair = group->data.mapping.pairs.start;
			 pair < group->data.mapping.pairs.top; pair++)
		{
			const char *key = scalar(yaml_document_get_node(doc, pair->key), "a key");
			yaml_node_t *value = yaml_document_get_node(doc, pair->value);

			if (strcmp(key, "targets") == 0)
				targets = value;
			else if (strcmp(key, "labels") == 0)
				labels = labels_json(doc, value);
			else
				unsupported(job, "static_configs.", key);
		}
		if (targets == NULL)
			continue;
		expect(targets, YAML_SEQUENCE_NODE, "targets");
		args[2] = CStringGetTextDatum(labels);
		for (yaml_node_item_t *t = targets->data.sequence.items.start;
			 t < targets->data.sequence.items.top; t++)
		{
			args[1] = CStringGetTextDatum(scalar(yaml_document_get_node(doc, *t), "a target"));
			run("INSERT INTO parca.scrape_targets (job_name, address, labels) "
				"VALUES ($1, $2, $3::pg_catalog.jsonb) ON CONFLICT (job_name, address) "
				"DO UPDATE SET labels = parca.scrape_targets.labels OPERATOR(pg_catalog.||) EXCLUDED.labels",
				3, types, args, NULL, SPI_OK_INSERT);
		}
	}
}

static void
read_file_sd_configs(yaml_document_t *doc, ImportJob *job, yaml_node_t *seq)
{
	expect(seq, YAML_SEQUENCE_NODE, "file_sd_configs");
	for (yaml_node_item_t *item = seq->data.sequence.items.start;
		 item < seq->data.sequence.items.top; item++)
	{
		yaml_node_t *cfg = yaml_document_get_node(doc, *item);

		expect(cfg, YAML_MAPPING_NODE, "a file_sd_configs entry");
		for (yaml_node_pair_t *pair = cfg->data.mapping.pairs.start;
			 pair < cfg->data.mapping.pairs.top; pair++)
		{
			const char *key = scalar(yaml_document_get_node(doc, pair->key), "a key");
			yaml_node_t *value = yaml_document_get_node(doc, pair->value);

			if (strcmp(key, "files") == 0)
			{
				expect(value, YAML_SEQUENCE_NODE, "files");
				for (yaml_node_item_t *f = value->data.sequence.items.start;
					 f < value->data.sequence.items.top; f++)
				{
					if (job->nfiles++ > 0)
						appendStringInfoChar(&job->files, ',');
					escape_json(&job->files, scalar(yaml_document_get_node(doc, *f), "a file"));
				}
			}
			else if (strcmp(key, "refresh_interval") != 0)	/* files are watched */
				unsupported(job->name, "file_sd_configs.", key);
		}
	}
}

static void
import_pprof_config(yaml_document_t *doc, const char *job, yaml_node_t *map)
{
	Oid			types[5] = {TEXTOID, TEXTOID, BOOLOID, TEXTOID, BOOLOID};

	expect(map, YAML_MAPPING_NODE, "pprof_config");
	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
		 pair < map->data.mapping.pairs.top; pair++)
	{
		const char *name = scalar(yaml_document_get_node(doc, pair->key), "a profile name");
		yaml_node_t *cfg = yaml_document_get_node(doc, pair->value);
		Datum		args[5];
		char		nulls[6] = "  nnn";

		args[0] = CStringGetTextDatum(job);
		args[1] = CStringGetTextDatum(name);
		expect(cfg, YAML_MAPPING_NODE, "a pprof_config entry");
		for (yaml_node_pair_t *p = cfg->data.mapping.pairs.start;
			 p < cfg->data.mapping.pairs.top; p++)
		{
			const char *key = scalar(yaml_document_get_node(doc, p->key), "a key");
			yaml_node_t *value = yaml_document_get_node(doc, p->value);

			if (strcmp(key, "enabled") == 0)
			{
				args[2] = BoolGetDatum(yaml_bool(value, "enabled"));
				nulls[2] = ' ';
			}
			else if (strcmp(key, "path") == 0)
			{
				args[3] = CStringGetTextDatum(scalar(value, "path"));
				nulls[3] = ' ';
			}
			else if (strcmp(key, "delta") == 0)
			{
				args[4] = BoolGetDatum(yaml_bool(value, "delta"));
				nulls[4] = ' ';
			}
			else
				unsupported(job, psprintf("pprof_config.%s.", name), key);
		}
		/* a profile the job has keeps what the YAML does not set */
		run("UPDATE parca.scrape_profiles SET enabled = coalesce($3, enabled), "
			"path = coalesce($4, path), delta = coalesce($5, delta) "
			"WHERE job_name OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2",
			5, types, args, nulls, SPI_OK_UPDATE);
		if (SPI_processed == 0)
			run("INSERT INTO parca.scrape_profiles (job_name, name, enabled, path, delta) "
				"VALUES ($1, $2, coalesce($3, true), coalesce($4, '/debug/pprof/' OPERATOR(pg_catalog.||) $2), "
				"coalesce($5, false))",
				5, types, args, nulls, SPI_OK_INSERT);
	}
}

/* One scrape_configs entry; returns the job's name. */
static const char *
import_job(yaml_document_t *doc, yaml_node_t *cfg, bool replace)
{
	ImportJob	job = {0};
	yaml_node_t *static_configs = NULL;
	yaml_node_t *pprof_config = NULL;

	expect(cfg, YAML_MAPPING_NODE, "a scrape_configs entry");
	job.interval_ms = 10000;
	job.timeout_ms = -1;
	job.scheme = "http";
	job.path_prefix = "";
	initStringInfo(&job.params);
	appendStringInfoString(&job.params, "{}");
	initStringInfo(&job.files);

	/* the name first: warnings name the job */
	for (yaml_node_pair_t *pair = cfg->data.mapping.pairs.start;
		 pair < cfg->data.mapping.pairs.top; pair++)
		if (strcmp(scalar(yaml_document_get_node(doc, pair->key), "a key"), "job_name") == 0)
			job.name = scalar(yaml_document_get_node(doc, pair->value), "job_name");
	if (job.name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration: a scrape config has no job_name (line %d)",
						line_of(cfg))));

	appendStringInfoChar(&job.files, '[');
	for (yaml_node_pair_t *pair = cfg->data.mapping.pairs.start;
		 pair < cfg->data.mapping.pairs.top; pair++)
	{
		const char *key = scalar(yaml_document_get_node(doc, pair->key), "a key");
		yaml_node_t *value = yaml_document_get_node(doc, pair->value);

		if (strcmp(key, "job_name") == 0)
			continue;
		else if (strcmp(key, "scrape_interval") == 0)
			job.interval_ms = duration_ms(value, "scrape_interval");
		else if (strcmp(key, "scrape_timeout") == 0)
			job.timeout_ms = duration_ms(value, "scrape_timeout");
		else if (strcmp(key, "scheme") == 0)
			job.scheme = scalar(value, "scheme");
		else if (strcmp(key, "params") == 0)
			read_params(doc, value, &job.params);
		else if (strcmp(key, "static_configs") == 0)
			static_configs = value;
		else if (strcmp(key, "file_sd_configs") == 0)
			read_file_sd_configs(doc, &job, value);
		else if (strcmp(key, "profiling_config") == 0)
		{
			expect(value, YAML_MAPPING_NODE, "profiling_config");
			for (yaml_node_pair_t *p = value->data.mapping.pairs.start;
				 p < value->data.mapping.pairs.top; p++)
			{
				const char *k = scalar(yaml_document_get_node(doc, p->key), "a key");
				yaml_node_t *v = yaml_document_get_node(doc, p->value);

				if (strcmp(k, "path_prefix") == 0)
					job.path_prefix = scalar(v, "path_prefix");
				else if (strcmp(k, "pprof_config") == 0)
					pprof_config = v;
				else
					unsupported(job.name, "profiling_config.", k);
			}
		}
		else
			unsupported(job.name, "", key);
	}
	appendStringInfoChar(&job.files, ']');

	insert_job(&job, replace);
	if (static_configs)
		import_static_configs(doc, job.name, static_configs);
	if (pprof_config)
		import_pprof_config(doc, job.name, pprof_config);
	return job.name;
}

static void
import_document(yaml_document_t *doc, bool replace, ReturnSetInfo *rsinfo)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	yaml_node_t *configs = NULL;

	if (root == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration is empty")));
	expect(root, YAML_MAPPING_NODE, "the configuration");
	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
		 pair < root->data.mapping.pairs.top; pair++)
		if (strcmp(scalar(yaml_document_get_node(doc, pair->key), "a key"), "scrape_configs") == 0)
			configs = yaml_document_get_node(doc, pair->value);
	if (configs == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration has no scrape_configs")));
	expect(configs, YAML_SEQUENCE_NODE, "scrape_configs");

	for (yaml_node_item_t *item = configs->data.sequence.items.start;
		 item < configs->data.sequence.items.top; item++)
	{
		Datum		value;
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();
		value = CStringGetTextDatum(import_job(doc, yaml_document_get_node(doc, *item), replace));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
	}
}

/* Refuses input that nests deeper than YAML_MAX_DEPTH (see above). */
static void
check_depth(const unsigned char *input, size_t len)
{
	yaml_parser_t parser;

	if (!yaml_parser_initialize(&parser))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not initialize the YAML parser")));
	yaml_parser_set_input_string(&parser, input, len);
	PG_TRY();
	{
		int			depth = 0;
		bool		done = false;
		yaml_event_t event;

		/* a syntax error ends the pass: the load reports it */
		while (!done && yaml_parser_parse(&parser, &event))
		{
			int			line = (int) event.start_mark.line + 1;

			CHECK_FOR_INTERRUPTS();
			if (event.type == YAML_SEQUENCE_START_EVENT || event.type == YAML_MAPPING_START_EVENT)
				depth++;
			else if (event.type == YAML_SEQUENCE_END_EVENT || event.type == YAML_MAPPING_END_EVENT)
				depth--;
			done = event.type == YAML_STREAM_END_EVENT;
			yaml_event_delete(&event);
			if (depth > YAML_MAX_DEPTH)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("Parca configuration nests deeper than %d levels (line %d)",
								YAML_MAX_DEPTH, line)));
		}
	}
	PG_FINALLY();
	{
		yaml_parser_delete(&parser);
	}
	PG_END_TRY();
}

PG_FUNCTION_INFO_V1(parca_scrape_import_yaml);
Datum
parca_scrape_import_yaml(PG_FUNCTION_ARGS)
{
	text	   *config = PG_GETARG_TEXT_PP(0);
	bool		replace = PG_GETARG_BOOL(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			len = VARSIZE_ANY_EXHDR(config);
	const unsigned char *input;
	yaml_parser_t parser;
	yaml_document_t doc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	if (len > YAML_MAX_SIZE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("Parca configuration is larger than %d bytes", YAML_MAX_SIZE)));
	/* libyaml reads UTF-8 */
	input = (const unsigned char *) pg_server_to_any(VARDATA_ANY(config), len, PG_UTF8);
	if ((const char *) input != VARDATA_ANY(config))
		len = strlen((const char *) input);
	check_depth(input, len);
	if (!yaml_parser_initialize(&parser))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not initialize the YAML parser")));
	yaml_parser_set_input_string(&parser, input, len);
	if (!yaml_parser_load(&parser, &doc))
	{
		char	   *problem = pstrdup(parser.problem ? parser.problem : "unknown error");
		int			line = (int) parser.problem_mark.line + 1;

		yaml_parser_delete(&parser);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Parca configuration is not valid YAML: %s (line %d)", problem, line)));
	}

	PG_TRY();
	{
		SPI_connect();
		import_document(&doc, replace, rsinfo);
		SPI_finish();
	}
	PG_FINALLY();
	{
		yaml_document_delete(&doc);
		yaml_parser_delete(&parser);
	}
	PG_END_TRY();
	return (Datum) 0;
}
