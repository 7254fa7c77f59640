-- Compare-and-set, so the claim is safe even where the pick's lock did not hold (a server
-- whose SKIP LOCKED does not lock, another isolation level): a row is taken only if it is
-- still claimable now at the attempt the pick saw ({pairs}: one bound (id, attempt) pair
-- per picked row). Every change of state either adds to the attempt (another claim) or
-- makes the row unclaimable now (done, failed, retried later, heartbeated), so two claims
-- that read the same row cannot both take it: InnoDB makes the second UPDATE wait for the
-- first one's row lock, then finds the attempt changed.
UPDATE `skiplock_jobs`
SET attempt = attempt + 1, status = 'running', lease_until = %(lease_until)s,
    run_at = %(lease_until)s, finished_at = NULL
WHERE id IN (%(ids)s) AND (id, attempt) IN ({pairs})
  AND claimable = 1 AND run_at <= UTC_TIMESTAMP(6)
