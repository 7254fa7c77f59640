-- skiplock schema version 1 for mysql: the table, its indexes.
-- This is the DDL that `install` ran before the schema had versions; a table it made is
-- recognised as version 1. Never edit this file: add the next numbered one.
-- Index names belong to their table, but a CHECK constraint's name is schema-wide and
-- compared without case: {tag} (a hash of the exact name) keeps `Jobs` and `jobs` apart.
-- Tables made before {tag} existed have `<table>_status`; both are version 1.

CREATE TABLE IF NOT EXISTS {table} (
    id              BIGINT       NOT NULL AUTO_INCREMENT,
    queue           VARCHAR(255) NOT NULL,
    payload         LONGTEXT     NOT NULL,
    priority        INT          NOT NULL DEFAULT 0,
    status          VARCHAR(16)  NOT NULL DEFAULT 'pending',
    attempt         INT          NOT NULL DEFAULT 0,
    max_attempts    INT          NOT NULL DEFAULT 5,
    run_at          DATETIME(6)  NOT NULL,
    lease_until     DATETIME(6)  NULL,
    idempotency_key CHAR(36)     NOT NULL,
    dedupe_key      VARCHAR(255) NULL,
    last_error      TEXT         NULL,
    result          LONGTEXT     NULL,
    created_at      DATETIME(6)  NOT NULL,
    finished_at     DATETIME(6)  NULL,
    claimable       TINYINT AS (CASE WHEN status IN ('pending', 'running') THEN 1 END) STORED,
    dedupe_active   VARCHAR(255) AS
                    (CASE WHEN status IN ('pending', 'running') THEN dedupe_key END) STORED,
    PRIMARY KEY (id),
    UNIQUE KEY `{prefix}_ikey` (idempotency_key),
    UNIQUE KEY `{prefix}_dedupe` (dedupe_active),
    KEY `{prefix}_claim` (claimable, queue, priority, run_at, id),
    KEY `{prefix}_finished` (status, finished_at),
    CONSTRAINT `{prefix}_status_{tag}` CHECK (status IN ('pending', 'running', 'done', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
