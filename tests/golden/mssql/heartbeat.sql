UPDATE [skiplock_jobs]
SET lease_until = DATEADD(MILLISECOND, %(lease_rem_ms)s,
                          DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME())),
    run_at = DATEADD(MILLISECOND, %(lease_rem_ms)s,
                     DATEADD(SECOND, %(lease_s)s, SYSUTCDATETIME()))
WHERE id = %(id)s AND attempt = %(attempt)s AND ISNULL(claim_id, 0) = ISNULL(CAST(%(claim_id)s AS BIGINT), 0)
  AND status = 'running'
