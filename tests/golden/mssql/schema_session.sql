-- The migrating connection: an ALTER TABLE that waits longer than this (milliseconds) for
-- its schema lock gives up (and is tried again) rather than queueing every worker behind it.
SET LOCK_TIMEOUT 5000
