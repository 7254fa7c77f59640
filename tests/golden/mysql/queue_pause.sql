-- q.pause / q.resume: the queue's flag, its row made the first time. The claim's pick
-- reads it: a pick that starts after this commits takes nothing from a paused queue.
INSERT INTO `skiplock_jobs_queues` (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE paused = %(paused)s, updated_at = UTC_TIMESTAMP(6)
