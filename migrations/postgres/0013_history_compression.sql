-- A turn writes its tool results twice (history and audit), a few KB each, and reads the
-- history back on every turn. Postgres's default compression (pglz) took most of the server
-- time of those writes: 0.1 ms per 8 KB result, three times the rest of the insert. lz4
-- costs a fraction of that and still shrinks the rows; a server built without lz4 keeps
-- them uncompressed (out of line, about 2.7 times the disk of pglz) instead.
DO $$
BEGIN
    ALTER TABLE messages ALTER COLUMN content SET COMPRESSION lz4;
    ALTER TABLE tool_audit
        ALTER COLUMN args SET COMPRESSION lz4,
        ALTER COLUMN result SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    ALTER TABLE messages ALTER COLUMN content SET STORAGE EXTERNAL;
    ALTER TABLE tool_audit
        ALTER COLUMN args SET STORAGE EXTERNAL,
        ALTER COLUMN result SET STORAGE EXTERNAL;
END
$$;
