-- skiplock schema version 1 for postgresql: the table, its indexes and the NOTIFY trigger.
-- This is the DDL that `install` ran before the schema had versions; a table it made is
-- recognised as version 1. Never edit this file: add the next numbered one.

SELECT pg_advisory_xact_lock(hashtext('skiplock install ' || '{prefix}'));
CREATE TABLE IF NOT EXISTS {table} (
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
CREATE INDEX IF NOT EXISTS "{prefix}_claim_idx" ON {table} (queue, priority, run_at, id)
    WHERE status IN ('pending', 'running');
CREATE UNIQUE INDEX IF NOT EXISTS "{prefix}_dedupe_idx" ON {table} (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'running');
CREATE INDEX IF NOT EXISTS "{prefix}_finished_idx" ON {table} (finished_at)
    WHERE status IN ('done', 'failed');
-- Wake idle workers at once (LISTEN "{prefix}"): one NOTIFY per INSERT statement, not per
-- row, and identical notifications in one transaction are folded into one by the server.
CREATE OR REPLACE FUNCTION "{prefix}_notify"() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('{prefix}', ''); RETURN NULL; END $$;
DROP TRIGGER IF EXISTS "{prefix}_notify" ON {table};
CREATE TRIGGER "{prefix}_notify" AFTER INSERT ON {table}
    FOR EACH STATEMENT EXECUTE PROCEDURE "{prefix}_notify"()
