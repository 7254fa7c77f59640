SELECT max(tick) AS tick FROM "skiplock_jobs_ticks" WHERE schedule = %(schedule)s
