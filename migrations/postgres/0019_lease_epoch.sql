-- A thread's lease gets an epoch, raised each time the lease changes hands. A turn's writes
-- carry the owner and the epoch it started under and fail once another process took the
-- lease over (a process stalled past agent.lease_secs must not write after it lost it).
ALTER TABLE sessions ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
