-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO `skiplock_jobs_deps` (child, parent, run_on_failure)
SELECT e.c, e.p, %(run)s
FROM JSON_TABLE(%(edges)s, '$[*]' COLUMNS (c BIGINT PATH '$[0]', p BIGINT PATH '$[1]')) AS e
