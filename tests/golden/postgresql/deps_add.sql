-- One row per [child, parent] pair of the bound JSON array.
INSERT INTO "skiplock_jobs_deps" (child, parent, run_on_failure)
SELECT (e->>0)::bigint, (e->>1)::bigint, %(run)s
FROM json_array_elements(%(edges)s::json) AS e
