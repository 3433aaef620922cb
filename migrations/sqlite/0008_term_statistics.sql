-- Term statistics: nothing to add on SQLite, whose FTS5 index keeps its own (bm25 uses them).
-- The version exists so both backends stay at the same schema number.
SELECT 1;
