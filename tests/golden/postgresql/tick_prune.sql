DELETE FROM "skiplock_jobs_ticks" WHERE schedule = %(schedule)s AND tick < %(before)s
