-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index (finished_status, finished_at); at most cap rows are read (the
-- caller shows "cap or more").
SELECT queue, status, minute, COUNT(*) AS n
FROM (
    SELECT queue, status,
           FLOOR(TIMESTAMPDIFF(SECOND, finished_at, UTC_TIMESTAMP(6)) / 60) AS minute
    FROM `skiplock_jobs`
    WHERE finished_status IN ('done', 'failed')
      AND finished_at >= TIMESTAMPADD(SECOND, -%(window_s)s, UTC_TIMESTAMP(6))
    LIMIT %(cap)s
) AS r
GROUP BY queue, status, minute
