-- skiplock schema migration for SQL Server: `headers`, the text pairs a job was enqueued
-- with (enqueue(..., headers=...): W3C trace context, a request id) as JSON text; NULL when
-- none. A nullable column without a default is a metadata change.
IF COL_LENGTH(N'{table}', N'headers') IS NULL
ALTER TABLE {table} ADD headers NVARCHAR(MAX) NULL
