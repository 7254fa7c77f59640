SELECT CASE WHEN OBJECT_ID(N'[skiplock_jobs]', N'U') IS NULL THEN 0 ELSE 1 END AS has_jobs,
       CASE WHEN OBJECT_ID(N'[skiplock_jobs_schema]', N'U') IS NULL THEN 0 ELSE 1 END AS has_version
