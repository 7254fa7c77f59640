-- The migrating connection: an ALTER TABLE that waits longer than this for the table's
-- metadata lock gives up (and is tried again) rather than queueing every worker behind it.
SET SESSION lock_wait_timeout = 5
