-- Sent in the cancel request's transaction, so a listener hears it once it commits.
SELECT pg_notify('skiplock_jobs_cancel', %(payload)s)
