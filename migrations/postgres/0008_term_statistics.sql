-- Term statistics for ranking full text with term rarity (BM25): how many chunks hold each
-- lexeme, how many chunks there are and their total length. Statement triggers keep them in
-- step with `chunks` (one pass per statement, so a bulk COPY costs one aggregate).

CREATE TABLE chunk_terms (
    term TEXT PRIMARY KEY,
    ndoc BIGINT NOT NULL
);

CREATE TABLE chunk_stats (
    only_row  BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    nchunks   BIGINT NOT NULL,
    total_len BIGINT NOT NULL
);

INSERT INTO chunk_stats (only_row, nchunks, total_len)
SELECT true, count(*), coalesce(sum(length(tsv)), 0) FROM chunks;

INSERT INTO chunk_terms (term, ndoc)
SELECT u.lexeme, count(*) FROM chunks c, unnest(c.tsv) u GROUP BY u.lexeme;

-- Adds per-lexeme deltas in lexeme order, so concurrent writers lock rows in one order and
-- cannot deadlock each other.
CREATE FUNCTION chunk_terms_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_terms AS ct (term, ndoc)
    SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.tsv) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (term) DO UPDATE SET ndoc = ct.ndoc + excluded.ndoc;
    UPDATE chunk_stats
    SET nchunks = nchunks + (SELECT count(*) FROM new_rows),
        total_len = total_len + (SELECT coalesce(sum(length(tsv)), 0) FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION chunk_terms_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_terms AS ct (term, ndoc)
    SELECT u.lexeme, -count(*) FROM old_rows o, unnest(o.tsv) u
    GROUP BY u.lexeme ORDER BY u.lexeme
    ON CONFLICT (term) DO UPDATE SET ndoc = ct.ndoc + excluded.ndoc;
    UPDATE chunk_stats
    SET nchunks = nchunks - (SELECT count(*) FROM old_rows),
        total_len = total_len - (SELECT coalesce(sum(length(tsv)), 0) FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION chunk_terms_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_terms AS ct (term, ndoc)
    SELECT lexeme, sum(delta) FROM (
        SELECT u.lexeme, 1 AS delta FROM new_rows n, unnest(n.tsv) u
        UNION ALL
        SELECT u.lexeme, -1 FROM old_rows o, unnest(o.tsv) u
    ) d
    GROUP BY lexeme HAVING sum(delta) <> 0 ORDER BY lexeme
    ON CONFLICT (term) DO UPDATE SET ndoc = ct.ndoc + excluded.ndoc;
    IF (SELECT coalesce(sum(length(tsv)), 0) FROM new_rows)
        <> (SELECT coalesce(sum(length(tsv)), 0) FROM old_rows) THEN
        UPDATE chunk_stats
        SET total_len = total_len + (SELECT coalesce(sum(length(tsv)), 0) FROM new_rows)
                                  - (SELECT coalesce(sum(length(tsv)), 0) FROM old_rows);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER chunks_terms_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_terms_insert();
CREATE TRIGGER chunks_terms_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_terms_delete();
CREATE TRIGGER chunks_terms_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION chunk_terms_update();

-- Lets the bot load its retrieval indexes into shared buffers at start-up; servers without the
-- contrib module fall back to warming by a scan.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_prewarm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_prewarm is not available: %', SQLERRM;
END $$;
