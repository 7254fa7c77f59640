-- q.pause / q.resume: the queue's flag, its row made the first time. A claim reads it in
-- the claim statement itself: one whose snapshot is taken after this commits takes
-- nothing from a paused queue.
INSERT INTO "skiplock_jobs_queues" (queue, paused, updated_at)
VALUES (%(queue)s, %(paused)s, statement_timestamp())
ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused, updated_at = EXCLUDED.updated_at
