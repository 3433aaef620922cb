-- Projects belong to one workspace (platform + Slack team / Discord guild / the console's
-- "local"); names are unique per workspace and nothing reaches across workspaces.

ALTER TABLE projects ADD COLUMN platform TEXT NOT NULL DEFAULT 'console';
ALTER TABLE projects ADD COLUMN workspace TEXT NOT NULL DEFAULT 'local';

-- A project moves into the workspace of its first binding (creating a project binds the
-- creator's channel at once); projects never bound stay on the console.
UPDATE projects
SET platform = (
        SELECT b.platform FROM channel_bindings b WHERE b.project_id = projects.id
        ORDER BY b.bound_at, b.platform, b.workspace, b.channel LIMIT 1),
    workspace = (
        SELECT b.workspace FROM channel_bindings b WHERE b.project_id = projects.id
        ORDER BY b.bound_at, b.platform, b.workspace, b.channel LIMIT 1)
WHERE EXISTS (SELECT 1 FROM channel_bindings b WHERE b.project_id = projects.id);

-- Bindings and sessions that reached a project of another workspace are cut.
DELETE FROM channel_bindings
WHERE EXISTS (
    SELECT 1 FROM projects p
    WHERE p.id = channel_bindings.project_id
      AND (p.platform <> channel_bindings.platform OR p.workspace <> channel_bindings.workspace));
UPDATE sessions
SET project_id = NULL
WHERE EXISTS (
    SELECT 1 FROM projects p
    WHERE p.id = sessions.project_id
      AND (p.platform <> sessions.platform OR p.workspace <> sessions.workspace));

DROP INDEX projects_name_key;
CREATE UNIQUE INDEX projects_name_key ON projects (platform, workspace, lower(name));
