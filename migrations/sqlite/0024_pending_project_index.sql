-- A project's change history (`audit`) reads its actions newest first.
CREATE INDEX pending_actions_project ON pending_actions (project_id, created_at);
