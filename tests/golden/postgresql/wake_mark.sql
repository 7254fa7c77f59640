-- A worker about to wait (see migration 0006): its LISTEN session's pid, so the enqueue
-- trigger notifies. With sweep, the marks of sessions that have ended go too (a worker
-- killed while waiting left one; it only caused needless NOTIFYs).
WITH gone AS (
    DELETE FROM "skiplock_jobs_idle"
    WHERE %(sweep)s AND pid <> %(pid)s AND pid NOT IN (SELECT pid FROM pg_stat_activity)
)
INSERT INTO "skiplock_jobs_idle" (pid) VALUES (%(pid)s) ON CONFLICT (pid) DO NOTHING
