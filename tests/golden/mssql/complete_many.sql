-- The dialect repeats complete_many_row once per job, at most 500 rows a batch. Each
-- row is still checked against its own attempt and claim token (0 never is one: NULL, a job
-- claimed before the token existed, matches only NULL). The rows go through a table
-- variable rather than a JOIN (VALUES ...), which Babelfish does not run: the same one
-- UPDATE, in the same round trip.
DECLARE @done TABLE (id BIGINT NOT NULL, attempt INT NOT NULL, claim_id BIGINT NULL,
                     result NVARCHAR(MAX) NULL);
INSERT INTO @done (id, attempt, claim_id, result) VALUES
{rows};
UPDATE j
SET status = 'done', result = v.result, lease_until = NULL, finished_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.has_children
FROM [skiplock_jobs] AS j
JOIN @done AS v
  ON j.id = v.id AND j.attempt = v.attempt AND ISNULL(j.claim_id, 0) = ISNULL(v.claim_id, 0)
WHERE j.status = 'running'
