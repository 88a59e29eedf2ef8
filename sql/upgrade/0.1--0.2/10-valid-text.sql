-- Names are checked to be valid text in the database encoding (names
-- stored by 0.1 went through libpq or the extension's repair, so they are).
CREATE FUNCTION parca.text_is_valid(text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'parca_text_is_valid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

ALTER TABLE parca.mappings
    ADD CHECK (parca.text_is_valid(build_id)),
    ADD CHECK (parca.text_is_valid(file));
ALTER TABLE parca.functions
    ADD CHECK (parca.text_is_valid(name)),
    ADD CHECK (parca.text_is_valid(system_name)),
    ADD CHECK (parca.text_is_valid(filename));
ALTER TABLE parca.series
    ADD CHECK (parca.text_is_valid(profile_type)),
    ADD CHECK (parca.text_is_valid(labels::text));
