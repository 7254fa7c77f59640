UPDATE `skiplock_jobs`
SET attempt = attempt + 1, status = 'running', lease_until = %(lease_until)s,
    run_at = %(lease_until)s, finished_at = NULL
WHERE id IN (%(ids)s)
