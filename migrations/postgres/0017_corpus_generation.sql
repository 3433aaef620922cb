-- A counter of changes to the passages and, per embedding model, the counter value its
-- vectors were last completed at. Comparing the two is one indexed read, so a process finds
-- out whether anything lacks a vector without scanning every passage.

CREATE TABLE corpus_generation (
    only_row   BOOLEAN PRIMARY KEY DEFAULT true CHECK (only_row),
    generation BIGINT NOT NULL
);
INSERT INTO corpus_generation (only_row, generation) VALUES (true, 1);

CREATE TABLE embedded_generation (
    model      TEXT PRIMARY KEY,
    generation BIGINT NOT NULL
);
