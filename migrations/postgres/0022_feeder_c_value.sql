-- A feeder may record its own point-to-point C value, or its line-to-neutral impedance per
-- 1000 ft, for runs the shipped C value table does not cover (cable, busway, maker's data).
ALTER TABLE feeders ADD COLUMN c_value DOUBLE PRECISION CHECK (c_value IS NULL OR c_value > 0);
ALTER TABLE feeders ADD COLUMN impedance_ohms_per_1000ft DOUBLE PRECISION CHECK (impedance_ohms_per_1000ft IS NULL OR impedance_ohms_per_1000ft > 0);
