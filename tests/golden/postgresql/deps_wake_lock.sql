-- Released jobs wake waiting workers as the enqueue trigger does (migration 0006): the
-- shared lock first, then the look for marks.
SELECT pg_advisory_xact_lock_shared(hashtext('skiplock wake skiplock_jobs'))
