IF OBJECT_ID(N'[skiplock_jobs_schema]', N'U') IS NULL
CREATE TABLE [skiplock_jobs_schema] (
    version    INT           NOT NULL PRIMARY KEY,
    name       NVARCHAR(255) NOT NULL,
    applied_at DATETIME2(6)  NOT NULL DEFAULT SYSUTCDATETIME()
)
