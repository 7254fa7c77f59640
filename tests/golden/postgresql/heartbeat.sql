UPDATE "skiplock_jobs"
SET lease_until = statement_timestamp() + %(lease_ms)s * interval '1 millisecond',
    run_at = statement_timestamp() + %(lease_ms)s * interval '1 millisecond'
WHERE id = %(id)s AND attempt = %(attempt)s AND claim_id IS NOT DISTINCT FROM %(claim_id)s::bigint
  AND status = 'running'
