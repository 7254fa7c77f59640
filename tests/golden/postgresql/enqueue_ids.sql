-- Ids and the run_at for a large batch written by COPY (which cannot RETURNING): taken from
-- the table's own sequence, so they are unique and increase in the order of the batch.
-- One row with an array: far cheaper to read than one row per id.
-- The sequence is looked up once (a scalar sub-select), not once per id.
SELECT array_agg(nextval((SELECT pg_get_serial_sequence('"skiplock_jobs"', 'id')::regclass)) ORDER BY g)
           AS ids,
       COALESCE(%(run_at)s::timestamptz, statement_timestamp() + %(delay_ms)s * interval '1 millisecond') AS run_at
FROM generate_series(1, %(n)s) AS g
