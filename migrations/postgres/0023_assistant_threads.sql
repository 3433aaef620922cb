-- Slack's assistant threads (the split-view AI app): who opened the thread, the channel they
-- were viewing (the thread works on that channel's project), and whether the thread has its
-- title yet, so a restart or another replica carries on where the last one stopped.
CREATE TABLE assistant_threads (
    platform        TEXT NOT NULL,
    workspace       TEXT NOT NULL,
    channel         TEXT NOT NULL,
    thread          TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    context_channel TEXT,
    titled          BOOLEAN NOT NULL DEFAULT FALSE,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (platform, workspace, channel, thread)
);

-- The App Home lists the changes applied lately: confirmations, newest first.
CREATE INDEX tool_audit_confirmed ON tool_audit (id) WHERE kind = 'confirmed';
