-- Projects belong to one workspace (platform + Slack team / Discord guild / the console's
-- "local"); names are unique per workspace and nothing reaches across workspaces.

ALTER TABLE projects ADD COLUMN platform TEXT, ADD COLUMN workspace TEXT;

-- A project moves into the workspace of its first binding (creating a project binds the
-- creator's channel at once); projects never bound stay on the console.
UPDATE projects p
SET platform = b.platform, workspace = b.workspace
FROM (
    SELECT DISTINCT ON (project_id) project_id, platform, workspace
    FROM channel_bindings
    ORDER BY project_id, bound_at, platform, workspace, channel
) b
WHERE b.project_id = p.id;
UPDATE projects SET platform = 'console', workspace = 'local' WHERE platform IS NULL;

-- Bindings and sessions that reached a project of another workspace are cut.
DELETE FROM channel_bindings b
USING projects p
WHERE b.project_id = p.id AND (b.platform <> p.platform OR b.workspace <> p.workspace);
UPDATE sessions s
SET project_id = NULL
FROM projects p
WHERE s.project_id = p.id AND (s.platform <> p.platform OR s.workspace <> p.workspace);

ALTER TABLE projects
    ALTER COLUMN platform SET NOT NULL,
    ALTER COLUMN workspace SET NOT NULL;
DROP INDEX projects_name_key;
CREATE UNIQUE INDEX projects_name_key ON projects (platform, workspace, lower(name));
