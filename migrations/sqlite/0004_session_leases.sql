-- A thread is served by one process at a time through a lease on its session row (owner and
-- expiry, renewed while a turn runs); no connection or transaction is held for the turn.
-- Inputs that arrive meanwhile wait in order in session_inputs until the lease holder takes
-- them. A waiter keeps its row's waiter_until in the future; a row whose waiter is gone (its
-- process died) is taken over by the next lease holder of the thread.
ALTER TABLE sessions ADD COLUMN lease_owner TEXT;
ALTER TABLE sessions ADD COLUMN lease_until TEXT;

CREATE TABLE session_inputs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id      TEXT NOT NULL,
    event_id     TEXT,
    action       TEXT NOT NULL CHECK (json_valid(action)),
    state        TEXT NOT NULL CHECK (state IN ('waiting', 'running')),
    waiter_until TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;
CREATE INDEX session_inputs_session ON session_inputs (session_id, id);
