SELECT pg_advisory_xact_lock(hashtext('skiplock install ' || 'skiplock_jobs'));
CREATE TABLE IF NOT EXISTS "skiplock_jobs" (
    id              bigserial   PRIMARY KEY,
    queue           text        NOT NULL,
    payload         json        NOT NULL,
    priority        integer     NOT NULL DEFAULT 0,
    status          text        NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempt         integer     NOT NULL DEFAULT 0,
    max_attempts    integer     NOT NULL DEFAULT 5,
    run_at          timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    idempotency_key uuid        NOT NULL,
    dedupe_key      text,
    last_error      text,
    result          json,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);
CREATE INDEX IF NOT EXISTS "skiplock_jobs_claim_idx" ON "skiplock_jobs" (queue, priority, run_at, id)
    WHERE status IN ('pending', 'running');
CREATE UNIQUE INDEX IF NOT EXISTS "skiplock_jobs_dedupe_idx" ON "skiplock_jobs" (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running');
CREATE INDEX IF NOT EXISTS "skiplock_jobs_finished_idx" ON "skiplock_jobs" (finished_at)
    WHERE status IN ('done', 'failed');
-- Wake idle workers at once (LISTEN "skiplock_jobs"): one NOTIFY per INSERT statement, not per
-- row, and identical notifications in one transaction are folded into one by the server.
CREATE OR REPLACE FUNCTION "skiplock_jobs_notify"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('skiplock_jobs', ''); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS "skiplock_jobs_notify" ON "skiplock_jobs";
CREATE TRIGGER "skiplock_jobs_notify" AFTER INSERT ON "skiplock_jobs"
    FOR EACH STATEMENT EXECUTE PROCEDURE "skiplock_jobs_notify"();
-- The periodic ledger: one row per tick enqueued (see _periodic.py).
CREATE TABLE IF NOT EXISTS "skiplock_jobs_ticks" (
    schedule   text        NOT NULL,
    tick       timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule, tick)
)
