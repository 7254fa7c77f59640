-- Lock the rows still held at the attempt each completion names, then complete those.
SELECT id, attempt FROM `skiplock_jobs`
WHERE id IN (%(ids)s) AND status = 'running'
FOR UPDATE
