SELECT lease_until FROM `skiplock_jobs` WHERE id = %(id)s
