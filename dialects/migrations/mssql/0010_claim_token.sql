-- skiplock schema migration for SQL Server: `claim_id`, the claim's token. Each claim
-- writes a random 63-bit number with the attempt, and every write after the claim names
-- both: unlike the attempt, a token cannot be handed out again when a failover to a
-- secondary that had not received the claim rolls the row back. A nullable column without
-- a default is a metadata change; a job claimed before it is fenced by a NULL token.
IF COL_LENGTH(N'{table}', N'claim_id') IS NULL
ALTER TABLE {table} ADD claim_id BIGINT NULL
