SELECT pg_advisory_unlock(%(key)s)
