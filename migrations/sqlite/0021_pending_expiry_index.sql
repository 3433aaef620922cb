-- Proposals still waiting are swept once their time runs out (their cards edited to
-- "expired" without waiting for a click): the sweep reads them by expiry.
CREATE INDEX pending_actions_expiry ON pending_actions (expires_at) WHERE state = 'pending';
