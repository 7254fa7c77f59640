SELECT id FROM [skiplock_jobs]
WHERE dedupe_key = %(dedupe_key)s AND status IN ('pending', 'running')
