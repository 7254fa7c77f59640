-- How many of these session ids are still connected (tests and operators count a pool).
SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ANY(%(sessions)s::int[])
