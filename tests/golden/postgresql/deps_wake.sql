SELECT pg_notify('skiplock_jobs', '')
WHERE current_setting('transaction_isolation') <> 'read committed'
   OR EXISTS (SELECT 1 FROM "skiplock_jobs_idle")
