-- The jobs of one key this claim took but the key's window had no room for: back to
-- pending as they were before the claim (the attempt it added taken back: the claim has
-- not committed, so no holder ever saw that attempt, and the new token stays), due when
-- the window has room. A deferred job stays its key's head: while it is pending, no later
-- job of its key is claimable. Fenced by this claim's token.
UPDATE "skiplock_jobs"
SET status = 'pending', attempt = attempt - 1, lease_until = NULL,
    run_at = statement_timestamp() + %(delay_ms)s * interval '1 millisecond'
WHERE id = ANY(%(ids)s::bigint[]) AND claim_id = %(claim_id)s::bigint AND status = 'running'
