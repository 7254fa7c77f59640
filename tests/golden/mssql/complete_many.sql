-- The dialect repeats complete_many_row once per job, at most 500 rows a batch. Each
-- row is still checked against its own attempt and claim token (0 never is one: NULL, a job
-- claimed before the token existed, matches only NULL). The rows go through a table
-- variable keyed by (id, attempt), and the result is read by that key in SET: Babelfish
-- runs neither a JOIN (VALUES ...) here nor an OUTPUT with a SET that names a joined
-- table's column. The same one UPDATE, in the same round trip.
DECLARE @done TABLE (id BIGINT NOT NULL, attempt INT NOT NULL, claim_id BIGINT NULL,
                     result NVARCHAR(MAX) NULL, PRIMARY KEY (id, attempt));
INSERT INTO @done (id, attempt, claim_id, result) VALUES
{rows};
UPDATE j
SET status = 'done',
    result = (SELECT d.result FROM @done AS d WHERE d.id = j.id AND d.attempt = j.attempt),
    lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.has_children
FROM [skiplock_jobs] AS j
JOIN @done AS v
  ON j.id = v.id AND j.attempt = v.attempt AND ISNULL(j.claim_id, 0) = ISNULL(v.claim_id, 0)
WHERE j.status = 'running'
