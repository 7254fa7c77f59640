-- skiplock schema migration for PostgreSQL: `headers`, the text pairs a job was enqueued
-- with (enqueue(..., headers=...): W3C trace context, a request id) as JSON text; NULL when
-- none. A nullable column without a default is a catalog change: no rewrite, no scan.
ALTER TABLE {table} ADD COLUMN IF NOT EXISTS headers text
