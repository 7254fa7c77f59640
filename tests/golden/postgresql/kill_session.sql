SELECT pg_terminate_backend(%(session)s)
