-- An idle worker's look for new jobs (docs/worker.md): the highest id committed, read from
-- the end of the primary key without reading rows; a change means an enqueue (or a prune).
-- READPAST: an uncommitted insert's locked row is stepped over, not waited for.
SELECT MAX(id) AS top FROM [skiplock_jobs] WITH (READPAST)
