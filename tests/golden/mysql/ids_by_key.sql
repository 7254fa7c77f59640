SELECT id, idempotency_key FROM `skiplock_jobs` WHERE idempotency_key IN (%(keys)s)
