SELECT id FROM `skiplock_jobs` WHERE dedupe_active = %(dedupe_key)s
