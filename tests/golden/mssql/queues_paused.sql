SELECT queue FROM [skiplock_jobs_queues] WHERE paused = 1 ORDER BY queue
