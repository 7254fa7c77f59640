SELECT * FROM `skiplock_jobs` WHERE id = %(id)s
