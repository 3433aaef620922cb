-- Messages the platform refused to take yet (a long run of 429s): kept here and delivered
-- in order when it accepts them, so an answer survives the storm and a restart. A row with
-- edit_of replaces the text of that platform message instead of posting a new one.
CREATE TABLE outbound_messages (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    platform   TEXT NOT NULL,
    channel    TEXT NOT NULL,
    thread     TEXT NOT NULL,
    text       TEXT NOT NULL,
    edit_of    TEXT,
    created_at TEXT NOT NULL,
    not_before TEXT NOT NULL
) STRICT;
CREATE INDEX outbound_messages_platform ON outbound_messages (platform, id);
