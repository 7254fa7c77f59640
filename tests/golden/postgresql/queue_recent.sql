-- Jobs that finished in the last window_s seconds, by queue, status and minute ago, from
-- the finished index; at most cap rows are read (the caller shows "cap or more").
SELECT queue, status,
       floor(EXTRACT(EPOCH FROM statement_timestamp() - finished_at) / 60)::integer AS minute,
       count(*) AS n
FROM (
    SELECT queue, status, finished_at FROM "skiplock_jobs"
    WHERE status IN ('done', 'failed')
      AND finished_at >= statement_timestamp() - %(window_s)s * interval '1 second'
    LIMIT %(cap)s
) AS r
GROUP BY queue, status, minute
