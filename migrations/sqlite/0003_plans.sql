-- Confirm applies exactly the plan a person saw. Projects carry a version bumped by every
-- applied plan; a pending action stores the project and version it was planned against and
-- whether it came from a model turn or a person's command. An action whose plan no longer
-- fits the project when confirmed ends as 'outdated' with nothing applied.

ALTER TABLE projects ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

-- SQLite cannot change a CHECK constraint in place: the table is rebuilt (nothing refers to it).
CREATE TABLE pending_actions_new (
    id              TEXT PRIMARY KEY,
    session_id      INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'confirmed', 'executed', 'cancelled', 'superseded', 'expired', 'outdated')),
    rule            TEXT NOT NULL CHECK (json_valid(rule)),
    calls           TEXT NOT NULL CHECK (json_valid(calls)),
    prior_results   TEXT NOT NULL CHECK (json_valid(prior_results)),
    items           TEXT NOT NULL CHECK (json_valid(items)),
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    resolved_by     TEXT,
    resolved_at     TEXT,
    outcome         TEXT CHECK (outcome IS NULL OR json_valid(outcome)),
    message_ref     TEXT,
    project_id      INTEGER REFERENCES projects (id) ON DELETE SET NULL,
    planned_version INTEGER,
    origin          TEXT NOT NULL DEFAULT 'model' CHECK (origin IN ('model', 'command'))
) STRICT;
INSERT INTO pending_actions_new (id, session_id, state, rule, calls, prior_results, items,
    created_at, expires_at, resolved_by, resolved_at, outcome, message_ref)
SELECT id, session_id, state, rule, calls, prior_results, items, created_at, expires_at,
    resolved_by, resolved_at, outcome, message_ref
FROM pending_actions;
DROP TABLE pending_actions;
ALTER TABLE pending_actions_new RENAME TO pending_actions;
CREATE UNIQUE INDEX pending_actions_one_open ON pending_actions (session_id) WHERE state = 'pending';
CREATE INDEX pending_actions_session ON pending_actions (session_id);
