DELETE FROM [skiplock_jobs_ticks]
WHERE schedule = %(schedule)s AND tick < CAST(%(before)s AS DATETIME2(6))
