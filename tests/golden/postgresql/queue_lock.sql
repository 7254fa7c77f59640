-- A claim of a queue with a limit (queue_limits): the queue's advisory lock, held by the
-- claiming transaction, tried without waiting: while another claim of that queue holds
-- it, this claim takes nothing from the queue.
SELECT pg_try_advisory_xact_lock(hashtext('skiplock queue skiplock_jobs'), hashtext(%(queue)s)) AS held
