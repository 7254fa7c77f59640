-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO [skiplock_jobs_deps] (child, parent, run_on_failure)
SELECT e.c, e.p, %(run)s
FROM OPENJSON(%(edges)s) WITH (c BIGINT '$[0]', p BIGINT '$[1]') AS e
