-- How wide the HNSW index searches (`hnsw.ef_search`), chosen per embedding model by
-- measuring the index against exact search for a recall target. Written after an ingest or
-- at the start of a long-running process (never on a request); every process reads it once.

CREATE TABLE hnsw_tuning (
    model         TEXT PRIMARY KEY,
    ef_search     INTEGER NOT NULL CHECK (ef_search BETWEEN 1 AND 1000),
    -- Recall@10 against exact search measured at `ef_search`, and the target it was chosen for.
    recall        DOUBLE PRECISION NOT NULL,
    recall_target DOUBLE PRECISION NOT NULL,
    -- How many query vectors were measured, and how many vectors the index held then (a
    -- library that grew or shrank by a tenth is measured again).
    queries       INTEGER NOT NULL,
    vectors       BIGINT NOT NULL,
    measured_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
