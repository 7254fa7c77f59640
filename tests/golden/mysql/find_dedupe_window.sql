-- Under the key's lock (key_lock): the job whose dedupe_for window is still open.
SELECT id FROM `skiplock_jobs`
WHERE dedupe_key = %(dedupe_key)s AND dedupe_until > UTC_TIMESTAMP(6)
ORDER BY id DESC LIMIT 1
