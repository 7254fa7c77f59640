-- Cancel requests of running jobs (q.cancel), on a channel of their own: the payload is
-- the job's id.
LISTEN "skiplock_jobs_cancel"
