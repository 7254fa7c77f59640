-- skiplock schema version 6 for SQL Server: nothing to change. Version 6 is PostgreSQL's
-- conditional NOTIFY; here idle workers learn of new jobs by a probe of the table's highest
-- id (see docs/worker.md), which needs no schema. Kept so that every dialect's versions
-- have the same numbers.
SELECT 1
