INSERT IGNORE INTO `skiplock_jobs_keys` (order_key) VALUES (%(lock_name)s)
