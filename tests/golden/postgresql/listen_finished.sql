-- q.wait: the ends of waited jobs (the trigger of migration 0012); the payload is the id.
LISTEN "skiplock_jobs_finished"
