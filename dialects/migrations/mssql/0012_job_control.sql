-- skiplock schema migration for SQL Server: job control. `progress` (JSON text, set by
-- q.set_progress), `snoozes` (how many times the job was snoozed: the cap of q.snooze and
-- Snooze counts them), `dedupe_until` (enqueue(..., dedupe_key=, dedupe_for=): the end of
-- the key's window) and `debounce_key` (enqueue(..., dedupe_key=, debounce=)). Nullable
-- columns without a default are metadata changes; the filtered indexes are built offline
-- (ONLINE = ON needs Enterprise edition): each holds a shared table lock while it reads
-- the table, in a transaction of its own.
IF COL_LENGTH(N'{table}', N'progress') IS NULL
ALTER TABLE {table} ADD progress NVARCHAR(MAX) NULL;
IF COL_LENGTH(N'{table}', N'snoozes') IS NULL
ALTER TABLE {table} ADD snoozes INT NULL;
IF COL_LENGTH(N'{table}', N'dedupe_until') IS NULL
ALTER TABLE {table} ADD dedupe_until DATETIME2(6) NULL;
IF COL_LENGTH(N'{table}', N'debounce_key') IS NULL
ALTER TABLE {table} ADD debounce_key NVARCHAR(255) NULL
-- commit
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_dedupe_window')
CREATE INDEX [{prefix}_dedupe_window] ON {table} (dedupe_key, dedupe_until)
    WHERE dedupe_until IS NOT NULL
-- commit
IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'{table}') AND name = N'{prefix}_debounce')
CREATE INDEX [{prefix}_debounce] ON {table} (debounce_key, id)
    WHERE debounce_key IS NOT NULL AND status = 'pending'
