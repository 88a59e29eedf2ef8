-- Tables' stack dictionaries (sql/20_columnar.sql): a 0.1 table has none
-- until a write of this version adds its first segment.
CREATE TABLE parca.columnar_dictionary (
    storage_id  bigint NOT NULL,
    first_entry bigint NOT NULL,        -- the segment's first entry number
    entry_count bigint NOT NULL,
    first_block bigint NOT NULL,        -- first data page; -1: data inline
    data_size   bigint NOT NULL,
    directory   bytea NOT NULL,         -- the entries' chunk and their ids' chunk
    inline_data bytea,                  -- the data of a small segment
    PRIMARY KEY (storage_id, first_entry)
);
ALTER TABLE parca.columnar_dictionary ALTER directory SET STORAGE EXTERNAL;
ALTER TABLE parca.columnar_dictionary ALTER inline_data SET STORAGE EXTERNAL;
