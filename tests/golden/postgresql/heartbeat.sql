UPDATE "skiplock_jobs"
SET lease_until = now() + %(lease_ms)s * interval '1 millisecond',
    run_at = now() + %(lease_ms)s * interval '1 millisecond'
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
