-- Types: stacktrace, location, profile.

-- stacktrace: location ids, leaf first.
CREATE TYPE stacktrace;
CREATE FUNCTION stacktrace_in(cstring) RETURNS stacktrace
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION stacktrace_out(stacktrace) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION stacktrace_recv(internal) RETURNS stacktrace
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION stacktrace_send(stacktrace) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE stacktrace (
    INPUT = stacktrace_in,
    OUTPUT = stacktrace_out,
    RECEIVE = stacktrace_recv,
    SEND = stacktrace_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE stacktrace IS 'a call stack: location ids (parca.locations), leaf first';

CREATE FUNCTION stacktrace_eq(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_ne(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_lt(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_le(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_gt(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_ge(stacktrace, stacktrace) RETURNS boolean
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_cmp(stacktrace, stacktrace) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_hash(stacktrace) RETURNS integer
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION stacktrace_hash_extended(stacktrace, bigint) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;

CREATE OPERATOR = (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_eq,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel,
    HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_ne,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_lt,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_le,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_gt,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = stacktrace, RIGHTARG = stacktrace, PROCEDURE = stacktrace_ge,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS stacktrace_ops DEFAULT FOR TYPE stacktrace USING btree AS
    OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >,
    FUNCTION 1 stacktrace_cmp(stacktrace, stacktrace);
CREATE OPERATOR CLASS stacktrace_hash_ops DEFAULT FOR TYPE stacktrace USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 stacktrace_hash(stacktrace),
    FUNCTION 2 stacktrace_hash_extended(stacktrace, bigint);

CREATE FUNCTION parca_stack_depth(stacktrace) RETURNS integer
    AS 'MODULE_PATHNAME', 'stacktrace_depth' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION parca_stack_location_ids(stacktrace) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'stacktrace_location_ids' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- profile: merged stacks with values; made by parca_merge and the queries.
CREATE TYPE profile;
CREATE FUNCTION profile_in(cstring) RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION profile_out(profile) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION profile_recv(internal) RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION profile_send(profile) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE profile (
    INPUT = profile_in,
    OUTPUT = profile_out,
    RECEIVE = profile_recv,
    SEND = profile_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE profile IS 'a merged profile: distinct stacks with summed values, profile type and period';

CREATE FUNCTION parca_profile_type(profile) RETURNS text
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION parca_profile_period(profile) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION parca_profile_stacks(profile) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION parca_profile_total(profile) RETURNS bigint
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- location: one frame with its mapping and lines, as a value (JSON text form).
CREATE TYPE location;
CREATE FUNCTION location_in(cstring) RETURNS location
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION location_out(location) RETURNS cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION location_recv(internal) RETURNS location
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION location_send(location) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE TYPE location (
    INPUT = location_in,
    OUTPUT = location_out,
    RECEIVE = location_recv,
    SEND = location_send,
    INTERNALLENGTH = VARIABLE,
    STORAGE = extended
);
COMMENT ON TYPE location IS 'one frame: mapping (file, build id), normalized address and lines, innermost first';
