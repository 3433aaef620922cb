-- The HNSW index over the default model's vectors compares half-precision copies of them
-- (pgvector's halfvec): the index is about half the size, so a large library's index fits in
-- memory sooner and builds faster, and its neighbours are those of the full vectors to within
-- rounding. Scores are still computed from the full vectors. The rebuild takes seconds for the
-- shipped corpus and minutes for a library of a million passages, once.
DROP INDEX IF EXISTS chunk_embeddings_hnsw_384;
CREATE INDEX chunk_embeddings_hnsw_384 ON chunk_embeddings
    USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE dims = 384;
-- The search width was chosen for the old index: measured again at the next start or ingest.
DELETE FROM hnsw_tuning;
