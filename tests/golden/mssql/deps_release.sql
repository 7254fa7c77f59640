-- Children whose parents all ended: due now (or at their own later run_at).
UPDATE [skiplock_jobs]
SET status = 'pending',
    run_at = CASE WHEN run_at > SYSUTCDATETIME() THEN run_at ELSE SYSUTCDATETIME() END
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')) AND status = 'waiting'
