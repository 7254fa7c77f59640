-- Under the key's lock: the newest pending job of a debounce key.
SELECT id FROM `skiplock_jobs`
WHERE debounce_key = %(debounce_key)s AND debounce_status = 'pending'
ORDER BY id DESC LIMIT 1
