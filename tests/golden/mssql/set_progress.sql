UPDATE [skiplock_jobs] SET progress = %(progress)s
WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
