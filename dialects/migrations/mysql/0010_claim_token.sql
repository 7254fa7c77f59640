-- skiplock schema migration for MySQL and MariaDB: `claim_id`, the claim's token. Each
-- claim writes a random 63-bit number with the attempt, and every write after the claim
-- names both: unlike the attempt, a token cannot be handed out again when a failover to a
-- replica that had not received the claim rolls the row back. ADD COLUMN is INSTANT; a
-- job claimed before it is fenced by a NULL token. A re-run skips what is there.
ALTER TABLE {table} ADD COLUMN claim_id BIGINT NULL, ALGORITHM=INSTANT
