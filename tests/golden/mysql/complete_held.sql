-- One fenced statement for the whole batch: each row must still be running at the attempt
-- its item names. {result} is NULL, or a CASE over the ids with one bound placeholder pair
-- per job that has a result (the dialect writes it). The id list lets the primary key
-- find the rows; the (id, attempt) pairs are the fence.
UPDATE `skiplock_jobs`
SET status = 'done', result = {result}, lease_until = NULL, finished_at = UTC_TIMESTAMP(6)
WHERE id IN (%(ids)s) AND (id, attempt) IN ({pairs}) AND status = 'running'
