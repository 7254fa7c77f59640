SELECT pg_backend_pid() AS session
