-- Sparky schema, SQLite. Keep in step with migrations/postgres.
-- STRICT tables enforce column types; timestamps are RFC 3339 text, JSON is text.

-- ----- projects -----

CREATE TABLE projects (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    name           TEXT NOT NULL CHECK (trim(name) <> ''),
    edition        INTEGER NOT NULL CHECK (edition BETWEEN 2000 AND 2100),
    confirm_policy TEXT CHECK (confirm_policy IN ('requester', 'any_member', 'editors')),
    created_at     TEXT NOT NULL
) STRICT;
CREATE UNIQUE INDEX projects_name_key ON projects (lower(name));

CREATE TABLE channel_bindings (
    platform   TEXT NOT NULL,
    workspace  TEXT NOT NULL,
    channel    TEXT NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    bound_at   TEXT NOT NULL,
    PRIMARY KEY (platform, workspace, channel)
) STRICT;
CREATE INDEX channel_bindings_project ON channel_bindings (project_id);

CREATE TABLE project_members (
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    platform   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'owner')),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, platform, user_id)
) STRICT;

-- ----- equipment -----

CREATE TABLE services (
    project_id         INTEGER PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    voltage            REAL NOT NULL,
    phase              INTEGER NOT NULL CHECK (phase IN (1, 3)),
    rating             REAL NOT NULL,
    available_fault_ka REAL,
    notes              TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE TABLE panels (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id             INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name                   TEXT NOT NULL CHECK (trim(name) <> ''),
    voltage                REAL NOT NULL,
    phase                  INTEGER NOT NULL CHECK (phase IN (1, 3)),
    bus_rating             REAL NOT NULL,
    main_breaker           REAL,
    interrupting_rating_ka REAL,
    fed_from               TEXT,
    spaces                 INTEGER NOT NULL CHECK (spaces BETWEEN 0 AND 4294967295),
    location               TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE UNIQUE INDEX panels_project_name_key ON panels (project_id, lower(name));

CREATE TABLE circuits (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    panel_id       INTEGER NOT NULL REFERENCES panels (id) ON DELETE CASCADE,
    number         INTEGER NOT NULL,
    poles          INTEGER NOT NULL CHECK (poles BETWEEN 0 AND 255),
    description    TEXT NOT NULL,
    load_va        REAL NOT NULL,
    continuous     INTEGER NOT NULL CHECK (continuous IN (0, 1)),
    breaker        REAL NOT NULL,
    conductor_size TEXT,
    material       TEXT NOT NULL CHECK (material IN ('copper', 'aluminum')),
    insulation     INTEGER NOT NULL CHECK (insulation IN (60, 75, 90)),
    length_ft      REAL,
    conduit        TEXT NOT NULL DEFAULT '',
    UNIQUE (panel_id, number)
) STRICT;

CREATE TABLE feeders (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id     INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name           TEXT NOT NULL CHECK (trim(name) <> ''),
    from_equipment TEXT NOT NULL,
    to_equipment   TEXT NOT NULL,
    conductor_size TEXT NOT NULL,
    material       TEXT NOT NULL CHECK (material IN ('copper', 'aluminum')),
    insulation     INTEGER NOT NULL CHECK (insulation IN (60, 75, 90)),
    sets           INTEGER NOT NULL CHECK (sets BETWEEN 0 AND 255),
    length_ft      REAL,
    ocpd           REAL NOT NULL
) STRICT;
CREATE UNIQUE INDEX feeders_project_name_key ON feeders (project_id, lower(name));

CREATE TABLE transformers (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id        INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name              TEXT NOT NULL CHECK (trim(name) <> ''),
    kva               REAL NOT NULL,
    primary_voltage   REAL NOT NULL,
    secondary_voltage REAL NOT NULL,
    phase             INTEGER NOT NULL CHECK (phase IN (1, 3)),
    impedance_percent REAL NOT NULL,
    fed_from          TEXT
) STRICT;
CREATE UNIQUE INDEX transformers_project_name_key ON transformers (project_id, lower(name));

CREATE TABLE load_items (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    watts         REAL NOT NULL,
    hours_per_day REAL NOT NULL,
    duty_cycle    REAL NOT NULL,
    quantity      INTEGER NOT NULL CHECK (quantity BETWEEN 0 AND 4294967295),
    notes         TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX load_items_project ON load_items (project_id);

CREATE TABLE charging_sources (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id    INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    kind          TEXT NOT NULL,
    watts         REAL NOT NULL,
    hours_per_day REAL NOT NULL,
    efficiency    REAL NOT NULL,
    notes         TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX charging_sources_project ON charging_sources (project_id);

CREATE TABLE tasks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id   INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    notes        TEXT NOT NULL DEFAULT '',
    assignee     TEXT,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    completed_at TEXT,
    completed_by TEXT
) STRICT;
CREATE INDEX tasks_project ON tasks (project_id);

-- ----- sessions and history -----

CREATE TABLE sessions (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    platform           TEXT NOT NULL,
    workspace          TEXT NOT NULL,
    channel            TEXT NOT NULL,
    thread             TEXT NOT NULL,
    mode               TEXT NOT NULL CHECK (mode IN ('general', 'load', 'source')),
    project_id         INTEGER REFERENCES projects (id) ON DELETE SET NULL,
    summary            TEXT NOT NULL DEFAULT '',
    summarized_through INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT NOT NULL,
    UNIQUE (platform, workspace, channel, thread)
) STRICT;

CREATE TABLE messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool')),
    content    TEXT NOT NULL CHECK (json_valid(content)),
    author     TEXT,
    event_id   TEXT,
    tokens     INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX messages_session_id ON messages (session_id, id);

CREATE TABLE pending_actions (
    id            TEXT PRIMARY KEY,
    session_id    INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    state         TEXT NOT NULL CHECK (state IN ('pending', 'confirmed', 'executed', 'cancelled', 'superseded', 'expired')),
    rule          TEXT NOT NULL CHECK (json_valid(rule)),
    calls         TEXT NOT NULL CHECK (json_valid(calls)),
    prior_results TEXT NOT NULL CHECK (json_valid(prior_results)),
    items         TEXT NOT NULL CHECK (json_valid(items)),
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL,
    resolved_by   TEXT,
    resolved_at   TEXT,
    outcome       TEXT CHECK (outcome IS NULL OR json_valid(outcome)),
    message_ref   TEXT
) STRICT;
-- The confirmation gate: a session waits on at most one action at a time.
CREATE UNIQUE INDEX pending_actions_one_open ON pending_actions (session_id) WHERE state = 'pending';
CREATE INDEX pending_actions_session ON pending_actions (session_id);

-- ----- audit and events -----

CREATE TABLE tool_audit (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  INTEGER REFERENCES sessions (id) ON DELETE SET NULL,
    actor       TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('execution', 'proposed', 'confirmed', 'cancelled', 'corrected', 'expired', 'refused')),
    tool        TEXT,
    action_id   TEXT,
    args        TEXT NOT NULL CHECK (json_valid(args)),
    result      TEXT NOT NULL CHECK (json_valid(result)),
    is_error    INTEGER NOT NULL CHECK (is_error IN (0, 1)),
    duration_ms INTEGER NOT NULL,
    at          TEXT NOT NULL
) STRICT;
CREATE INDEX tool_audit_session ON tool_audit (session_id, id);

CREATE TABLE processed_events (
    platform TEXT NOT NULL,
    event_id TEXT NOT NULL,
    seen_at  TEXT NOT NULL,
    PRIMARY KEY (platform, event_id)
) STRICT;
CREATE INDEX processed_events_seen ON processed_events (seen_at);

-- ----- documents and retrieval -----

CREATE TABLE documents (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    source       TEXT NOT NULL,
    title        TEXT NOT NULL,
    workspace    TEXT,
    content_hash TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
) STRICT;
-- NULL (global) counts as one workspace for uniqueness.
CREATE UNIQUE INDEX documents_source_workspace ON documents (source, coalesce(workspace, ''));

CREATE TABLE chunks (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id  INTEGER NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ord          INTEGER NOT NULL,
    section      TEXT,
    edition      INTEGER,
    page         INTEGER,
    heading      TEXT NOT NULL,
    text         TEXT NOT NULL,
    content_hash TEXT NOT NULL
) STRICT;
CREATE INDEX chunks_document ON chunks (document_id, ord);
CREATE INDEX chunks_section ON chunks (section);

-- Full text: an external-content FTS5 index over chunks, kept in sync by triggers.
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    section, heading, text,
    content = 'chunks', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, section, heading, text)
        VALUES (new.id, new.section, new.heading, new.text);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, section, heading, text)
        VALUES ('delete', old.id, old.section, old.heading, old.text);
END;
CREATE TRIGGER chunks_fts_update AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, section, heading, text)
        VALUES ('delete', old.id, old.section, old.heading, old.text);
    INSERT INTO chunks_fts (rowid, section, heading, text)
        VALUES (new.id, new.section, new.heading, new.text);
END;

-- Vectors as little-endian f32; searched by an exact cosine scan in Rust.
CREATE TABLE chunk_embeddings (
    chunk_id  INTEGER NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    model     TEXT NOT NULL,
    dims      INTEGER NOT NULL CHECK (dims > 0),
    embedding BLOB NOT NULL CHECK (length(embedding) = 4 * dims),
    PRIMARY KEY (chunk_id, model)
) STRICT;
CREATE INDEX chunk_embeddings_model ON chunk_embeddings (model, dims);
