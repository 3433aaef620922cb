-- Confirm applies exactly the plan a person saw. Projects carry a version bumped by every
-- applied plan; a pending action stores the project and version it was planned against and
-- whether it came from a model turn or a person's command. An action whose plan no longer
-- fits the project when confirmed ends as 'outdated' with nothing applied.

ALTER TABLE projects ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

ALTER TABLE pending_actions DROP CONSTRAINT pending_actions_state_check;
ALTER TABLE pending_actions ADD CONSTRAINT pending_actions_state_check
    CHECK (state IN ('pending', 'confirmed', 'executed', 'cancelled', 'superseded', 'expired', 'outdated'));
ALTER TABLE pending_actions ADD COLUMN project_id BIGINT REFERENCES projects (id) ON DELETE SET NULL;
ALTER TABLE pending_actions ADD COLUMN planned_version BIGINT;
ALTER TABLE pending_actions ADD COLUMN origin TEXT NOT NULL DEFAULT 'model'
    CHECK (origin IN ('model', 'command'));
