-- Documents were scoped by a bare workspace id ("T0123") while projects and sessions name a
-- workspace by platform and id; the same id on two platforms would have shared documents.
-- Documents now name theirs as PLATFORM:ID ("slack:T0123"), as `sparky ingest --workspace`
-- takes it. A bare id moves to the one platform whose projects or sessions use it; an id
-- found on no platform, or on several, is left as it was and is visible to nobody (ingest the
-- file again with its PLATFORM:ID), never to a guessed workspace.
UPDATE documents
SET workspace = (
        SELECT k.platform || ':' || k.workspace
        FROM (SELECT platform, workspace FROM projects
              UNION SELECT platform, workspace FROM sessions) k
        WHERE k.workspace = documents.workspace
        LIMIT 1)
WHERE workspace IS NOT NULL AND workspace NOT LIKE '%:%'
  AND (SELECT count(DISTINCT k.platform)
       FROM (SELECT platform, workspace FROM projects
             UNION SELECT platform, workspace FROM sessions) k
       WHERE k.workspace = documents.workspace) = 1;

-- The console's own workspace, even before any project was made there.
UPDATE documents SET workspace = 'console:local' WHERE workspace = 'local';
