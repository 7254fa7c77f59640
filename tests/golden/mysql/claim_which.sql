-- After a take that matched fewer rows than it named: the picked rows as they are now,
-- in this transaction (which sees its own changes).
SELECT id, attempt, lease_until, claim_id FROM `skiplock_jobs`
WHERE id IN (%(ids)s) AND status = 'running'
