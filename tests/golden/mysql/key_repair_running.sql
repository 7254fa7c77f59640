-- The repair's second part: a running job that kept its flag (a claim of a release before
-- 0016 took it) is out of the claim index's claimable range (claimable, key_wait IS NULL,
-- ...), so its lease, should it end, would not be claimed again: its flag is cleared too.
-- The flagged range of the claim index holds those jobs and every waiting pending one;
-- each run reads at most %(batch)s of its entries (and their rows, for the status), from
-- the entry after the last one the previous run read ((queue, priority, run_at, id),
-- spelled out so that both servers read it as ranges of the index, in its order; queue
-- NULL: from the start). The running ones come back, and the last entry read (last = 1)
-- when the batch was full.
SELECT y.id, y.status, y.queue, y.priority, y.run_at, y.i = %(batch)s AS last FROM
    (SELECT x.id, x.status, x.queue, x.priority, x.run_at,
            ROW_NUMBER() OVER (ORDER BY x.queue, x.priority, x.run_at, x.id) AS i
     FROM (SELECT r.id, r.status, r.queue, r.priority, r.run_at
           FROM `skiplock_jobs` AS r FORCE INDEX (`skiplock_jobs_ready`)
           WHERE r.claimable = 1 AND r.key_wait = 1
             AND (%(queue)s IS NULL OR r.queue > %(queue)s
                  OR (r.queue = %(queue)s AND (r.priority > %(priority)s
                      OR (r.priority = %(priority)s AND (r.run_at > %(run_at)s
                          OR (r.run_at = %(run_at)s AND r.id > %(id)s))))))
           ORDER BY r.queue, r.priority, r.run_at, r.id LIMIT %(batch)s) AS x) AS y
WHERE y.status = 'running' OR y.i = %(batch)s
