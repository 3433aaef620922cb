-- A confirmation card the platform refused during a 429 storm is kept like an answer: its
-- action and view as JSON, posted with its buttons once the platform accepts it.
ALTER TABLE outbound_messages ADD COLUMN card TEXT;
