-- parca_merge: merge (stack, value) rows into a profile.  Parallel safe.
CREATE FUNCTION parca_merge_transfn(internal, stacktrace, bigint) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION parca_merge_combinefn(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;
CREATE FUNCTION parca_merge_serialfn(internal) RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION parca_merge_deserialfn(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME' LANGUAGE C STRICT PARALLEL SAFE;
CREATE FUNCTION parca_merge_finalfn(internal) RETURNS profile
    AS 'MODULE_PATHNAME' LANGUAGE C PARALLEL SAFE;

CREATE AGGREGATE parca_merge(stack stacktrace, value bigint) (
    SFUNC = parca_merge_transfn,
    STYPE = internal,
    FINALFUNC = parca_merge_finalfn,
    FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = parca_merge_combinefn,
    SERIALFUNC = parca_merge_serialfn,
    DESERIALFUNC = parca_merge_deserialfn,
    PARALLEL = SAFE
);
COMMENT ON AGGREGATE parca_merge(stacktrace, bigint) IS 'merge samples into a profile: values of equal stacks are summed';

-- The coordinator's half of a merge Citus distributes (docs/scale-out.md):
-- the profiles each worker merged, merged into one.
CREATE FUNCTION parca.merge_profiles_transfn(internal, profile) RETURNS internal
    AS 'MODULE_PATHNAME', 'parca_merge_profiles_transfn' LANGUAGE C PARALLEL SAFE;
CREATE AGGREGATE parca.merge_profiles(profile profile) (
    SFUNC = parca.merge_profiles_transfn,
    STYPE = internal,
    FINALFUNC = parca_merge_finalfn,
    FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = parca_merge_combinefn,
    SERIALFUNC = parca_merge_serialfn,
    DESERIALFUNC = parca_merge_deserialfn,
    PARALLEL = SAFE
);

CREATE FUNCTION parca_pprof(profile profile, profile_type text DEFAULT NULL, period bigint DEFAULT NULL)
    RETURNS bytea
    AS 'MODULE_PATHNAME' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION parca_pprof(profile, text, bigint) IS
    'the profile as gzipped pprof; profile_type and period override what the profile carries';
