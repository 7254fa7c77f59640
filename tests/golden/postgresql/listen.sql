LISTEN "skiplock_jobs"
