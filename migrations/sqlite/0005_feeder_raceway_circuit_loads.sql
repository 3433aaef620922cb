-- Feeders record their raceway material and installed EGC; circuits record a motor and an
-- appliance nameplate (JSON objects written by the application).
ALTER TABLE feeders ADD COLUMN raceway TEXT CHECK (raceway IN ('steel', 'aluminum', 'nonmetallic'));
ALTER TABLE feeders ADD COLUMN egc_size TEXT;
ALTER TABLE circuits ADD COLUMN motor TEXT;
ALTER TABLE circuits ADD COLUMN appliance TEXT;
