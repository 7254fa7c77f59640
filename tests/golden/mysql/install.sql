CREATE TABLE IF NOT EXISTS `skiplock_jobs` (
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
    UNIQUE KEY `skiplock_jobs_ikey` (idempotency_key),
    UNIQUE KEY `skiplock_jobs_dedupe` (dedupe_active),
    KEY `skiplock_jobs_claim` (claimable, queue, priority, run_at, id),
    KEY `skiplock_jobs_finished` (status, finished_at),
    CONSTRAINT `skiplock_jobs_status` CHECK (status IN ('pending', 'running', 'done', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
-- The periodic ledger: one row per tick enqueued (see _periodic.py).
CREATE TABLE IF NOT EXISTS `skiplock_jobs_ticks` (
    schedule   VARCHAR(255) NOT NULL,
    tick       DATETIME(6)  NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (schedule, tick)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
