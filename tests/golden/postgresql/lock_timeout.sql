-- How long the next lock_acquire in this transaction waits (milliseconds, as text).
SELECT set_config('lock_timeout', %(wait_ms)s, true)
