CREATE TABLE IF NOT EXISTS "skiplock_jobs_schema" (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
