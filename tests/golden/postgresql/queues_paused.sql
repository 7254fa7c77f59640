SELECT queue FROM "skiplock_jobs_queues" WHERE paused ORDER BY queue
