-- Under the key's lock: the newest pending job of a debounce key.
SELECT TOP (1) id FROM [skiplock_jobs]
WHERE debounce_key = %(debounce_key)s AND status = 'pending'
ORDER BY id DESC
