-- Rows of workers not seen for older_s seconds (killed long ago): dropped as a worker
-- registers, so the list does not grow without end.
DELETE FROM [skiplock_jobs_workers]
WHERE last_seen < DATEADD(SECOND, -%(older_s)s, SYSUTCDATETIME())
