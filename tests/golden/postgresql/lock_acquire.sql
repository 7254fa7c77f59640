-- Session-level: held until lock_release or until the connection ends, whatever the
-- transaction does. Waits up to lock_timeout, then raises 55P03.
SELECT pg_advisory_lock(%(key)s)
