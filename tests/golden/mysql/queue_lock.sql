-- A claim of a queue with a limit (queue_limits): the queue's row in <table>_keys
-- (%(lock_name)s, a name no key can have), locked by the claiming transaction with SKIP
-- LOCKED: while another claim of that queue holds it, no row comes back and this claim
-- takes nothing from the queue. The row is made once by queue_lock_row.
SELECT 1 AS held FROM `skiplock_jobs_keys` WHERE order_key = %(lock_name)s FOR UPDATE SKIP LOCKED
