-- History and audit JSON as text: SQLite already keeps it so (Postgres changes jsonb to json).
-- The version exists so both backends stay at the same schema number.
SELECT 1;
