-- A plain (consistent, non-locking) read: does the queue's lock row exist at all?
SELECT 1 AS found FROM `skiplock_jobs_keys` WHERE order_key = %(lock_name)s
