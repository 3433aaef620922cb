-- History messages and audit rows are written and read whole and never queried inside: they
-- are kept as the JSON text they were written as (json: checked, stored as text) instead of
-- jsonb, which parsed every row into a tree on write and printed it back on every read. A
-- turn's tool results are the largest values it writes and reads.
ALTER TABLE messages ALTER COLUMN content TYPE json USING content::json;
ALTER TABLE tool_audit
    ALTER COLUMN args TYPE json USING args::json,
    ALTER COLUMN result TYPE json USING result::json;
