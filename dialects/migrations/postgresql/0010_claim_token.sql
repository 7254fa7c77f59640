-- skiplock schema migration for PostgreSQL: `claim_id`, the claim's token. Each claim writes
-- a random 63-bit number with the attempt, and every write after the claim names both:
-- unlike the attempt, a token cannot be handed out again when a failover to a standby
-- that had not received the claim rolls the row back. A nullable column without a default
-- is a catalog change (no rewrite); a job claimed before it is fenced by a NULL token.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS claim_id bigint
