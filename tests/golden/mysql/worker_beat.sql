-- On the worker's heartbeat: jobs in flight, and when it was last seen (0 rows: its row
-- was forgotten meanwhile, and the worker writes it again). last_seen always changes
-- (microseconds), so the row count is the rows found.
UPDATE `skiplock_jobs_workers` SET in_flight = %(in_flight)s, last_seen = UTC_TIMESTAMP(6)
WHERE id = %(id)s
