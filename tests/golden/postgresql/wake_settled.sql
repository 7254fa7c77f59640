-- After the mark committed: true once no enqueuing transaction holds the trigger's shared
-- lock, i.e. every enqueuer that looked for marks before this one was visible has ended.
-- A try: an exclusive request that waited would hold up every later enqueuer.
SELECT pg_try_advisory_xact_lock(hashtext('skiplock wake skiplock_jobs')) AS settled
