DELETE FROM "skiplock_jobs_idle" WHERE pid = %(pid)s
