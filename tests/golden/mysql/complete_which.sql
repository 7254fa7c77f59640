-- After a batch matched fewer rows than it named: the rows it completed are the ones done
-- at the named attempt with the newest finished_at (one statement, one clock reading).
SELECT id, attempt, claim_id, finished_at, has_children FROM `skiplock_jobs`
WHERE id IN (%(ids)s) AND status = 'done'
