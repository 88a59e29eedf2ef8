/*
 * events.c
 *		What the launcher hears from other sessions, through hooks of every
 *		session (the library is preloaded):
 *
 *	- CREATE EXTENSION parca: at commit, the launcher looks at the database
 *	  (its workers start within a second, no setting needed);
 *	- DROP EXTENSION parca: at commit, the database's workers look again,
 *	  find it gone and end;
 *	- ALTER DATABASE ... SET/RESET parca.*: at commit, the database's
 *	  workers start again, since a session reads the database's settings
 *	  when it connects (parca.workers = off there stops them; parca.retention
 *	  and the others apply to that database only);
 *	- DROP DATABASE, ALTER DATABASE ... RENAME TO or SET TABLESPACE, CREATE
 *	  DATABASE ... TEMPLATE: PostgreSQL refuses them while another session
 *	  is connected to the database, so its workers are stopped first, and
 *	  started again after (if the database is still there), by its owner's
 *	  command only (registry_pause); at commit the launcher reads
 *	  pg_database again (a new name, a copy that has the extension).
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_extension.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"

#include "workers/workers_internal.h"

static ProcessUtility_hook_type prev_utility_hook = NULL;
static object_access_hook_type prev_object_access_hook = NULL;

/* What the current transaction tells the launcher when it commits. */
static bool extension_created = false;	/* some extension: parca? */
static bool look_at_commit = false;
static bool parca_dropped = false;
#define PENDING_MAX 8
static WorkerRequest pending[PENDING_MAX];	/* databases to look at */
static int	npending = 0;
static bool xact_callback_registered = false;

static void
forget_pending(void)
{
	extension_created = look_at_commit = parca_dropped = false;
	npending = 0;
}

static void
events_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			/* the extension's row is not visible when it is inserted: look now */
			if (extension_created)
				look_at_commit = OidIsValid(get_extension_oid("parca", true));
			break;
		case XACT_EVENT_COMMIT:
			if (look_at_commit)
				registry_request(MyDatabaseId, false);
			if (parca_dropped)
				registry_wake_database(MyDatabaseId);
			for (int i = 0; i < npending; i++)
				registry_request(pending[i].dboid, pending[i].restart);
			forget_pending();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			forget_pending();
			break;
		default:
			break;
	}
}

static void
at_commit(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(events_xact_callback, NULL);
		xact_callback_registered = true;
	}
}

/* The launcher looks at the database (restart: and starts its workers again) at commit. */
static void
request_at_commit(Oid dboid, bool restart)
{
	if (!OidIsValid(dboid) || npending == PENDING_MAX)
		return;
	pending[npending].dboid = dboid;
	pending[npending].restart = restart;
	npending++;
	at_commit();
}

static void
events_object_access(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access_hook)
		prev_object_access_hook(access, classId, objectId, subId, arg);
	if (classId != ExtensionRelationId)
		return;
	if (access == OAT_POST_CREATE)
	{
		extension_created = true;
		at_commit();
	}
	else if (access == OAT_DROP)
	{
		char	   *name = get_extension_name(objectId);

		if (name != NULL && strcmp(name, "parca") == 0)
		{
			parca_dropped = true;
			at_commit();
		}
	}
}

/* The database a statement needs no other session in, if its user may run it. */
static Oid
database_to_pause(Node *stmt)
{
	const char *name = NULL;
	Oid			dboid;

	switch (nodeTag(stmt))
	{
		case T_DropdbStmt:
			name = ((DropdbStmt *) stmt)->dbname;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
				name = ((RenameStmt *) stmt)->subname;
			break;
		case T_AlterDatabaseStmt:
			{
				ListCell   *lc;

				foreach(lc, ((AlterDatabaseStmt *) stmt)->options)
					if (strcmp(((DefElem *) lfirst(lc))->defname, "tablespace") == 0)
						name = ((AlterDatabaseStmt *) stmt)->dbname;
				break;
			}
		case T_CreatedbStmt:
			{
				ListCell   *lc;

				foreach(lc, ((CreatedbStmt *) stmt)->options)
				{
					DefElem    *opt = lfirst(lc);

					if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
						name = defGetString(opt);
				}
				break;
			}
		default:
			break;
	}
	if (name == NULL)
		return InvalidOid;
	dboid = get_database_oid(name, true);
	/* (a template's owner may copy it, but it has no workers) */
	if (!OidIsValid(dboid) || !pg_database_ownercheck(dboid, GetUserId()))
		return InvalidOid;
	return dboid;
}

/* ALTER DATABASE name SET/RESET parca.*, or RESET ALL */
static void
note_database_setting(Node *stmt)
{
	AlterDatabaseSetStmt *set;

	if (!IsA(stmt, AlterDatabaseSetStmt))
		return;
	set = (AlterDatabaseSetStmt *) stmt;
	if (set->setstmt->name != NULL && strncmp(set->setstmt->name, "parca.", 6) != 0)
		return;
	request_at_commit(get_database_oid(set->dbname, true), true);
}

static void
run_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			ProcessUtilityContext context, ParamListInfo params,
			QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
								dest, qc);
}

/* run_utility() while registry_pause() holds a database's workers off */
static void
run_paused(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
		   ProcessUtilityContext context, ParamListInfo params,
		   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	PG_TRY();
	{
		run_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	PG_CATCH();
	{
		registry_resume();
		PG_RE_THROW();
	}
	PG_END_TRY();
	registry_resume();
}

static void
events_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
			   ProcessUtilityContext context, ParamListInfo params,
			   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	Oid			paused = database_to_pause(stmt);

	note_database_setting(stmt);
	if (!OidIsValid(paused))
		run_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
	{
		request_at_commit(paused, false);
		registry_pause(paused);
		run_paused(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	}
	/* a copy of a database that has the extension has it too */
	if (IsA(stmt, CreatedbStmt))
		request_at_commit(get_database_oid(((CreatedbStmt *) stmt)->dbname, true), false);
}

void
events_init(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = events_utility;
	prev_object_access_hook = object_access_hook;
	object_access_hook = events_object_access;
}
