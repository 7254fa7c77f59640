-- The migrating connection: an ALTER TABLE that waits for a lock longer than this gives
-- up (and is tried again) rather than queueing every worker's statement behind it.
SET lock_timeout = '5s'
