DELETE FROM [skiplock_jobs_workers] WHERE id = %(id)s
