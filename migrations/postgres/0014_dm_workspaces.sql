-- Every Discord direct message shared one workspace ("dm"), so `project list` in any DM listed
-- every DM user's projects. A DM now belongs to its user: workspace "dm-<user id>".

-- A DM session: the person who wrote in it.
UPDATE sessions
SET workspace = 'dm-' || (
        SELECT m.author FROM messages m
        WHERE m.session_id = sessions.id AND m.role = 'user' AND m.author IS NOT NULL
        ORDER BY m.id LIMIT 1)
WHERE platform = 'discord' AND workspace = 'dm'
  AND EXISTS (
        SELECT 1 FROM messages m
        WHERE m.session_id = sessions.id AND m.role = 'user' AND m.author IS NOT NULL);

-- A project made in a DM: its owner's.
UPDATE projects
SET workspace = 'dm-' || (
        SELECT pm.user_id FROM project_members pm
        WHERE pm.project_id = projects.id AND pm.platform = 'discord' AND pm.role = 'owner'
        ORDER BY pm.updated_at, pm.user_id LIMIT 1)
WHERE platform = 'discord' AND workspace = 'dm'
  AND EXISTS (
        SELECT 1 FROM project_members pm
        WHERE pm.project_id = projects.id AND pm.platform = 'discord' AND pm.role = 'owner');

-- A DM channel's binding: the workspace of that channel's sessions.
UPDATE channel_bindings
SET workspace = (
        SELECT s.workspace FROM sessions s
        WHERE s.platform = 'discord' AND s.channel = channel_bindings.channel
          AND s.workspace <> 'dm'
        ORDER BY s.id LIMIT 1)
WHERE platform = 'discord' AND workspace = 'dm'
  AND EXISTS (
        SELECT 1 FROM sessions s
        WHERE s.platform = 'discord' AND s.channel = channel_bindings.channel
          AND s.workspace <> 'dm');

-- Whatever now reaches a project of another workspace is cut, as when workspaces began: a
-- binding or session is never left pointing across people.
DELETE FROM channel_bindings
WHERE platform = 'discord'
  AND EXISTS (
        SELECT 1 FROM projects p
        WHERE p.id = channel_bindings.project_id
          AND (p.platform <> channel_bindings.platform OR p.workspace <> channel_bindings.workspace));
UPDATE sessions
SET project_id = NULL
WHERE platform = 'discord'
  AND EXISTS (
        SELECT 1 FROM projects p
        WHERE p.id = sessions.project_id
          AND (p.platform <> sessions.platform OR p.workspace <> sessions.workspace));
