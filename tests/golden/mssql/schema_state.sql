-- jobs_name: the name the table was found under. Under a case-insensitive collation (the
-- default) OBJECT_ID finds [Jobs] for [jobs]: skiplock refuses a name found so.
SELECT CASE WHEN OBJECT_ID(N'[skiplock_jobs]', N'U') IS NULL THEN 0 ELSE 1 END AS has_jobs,
       CASE WHEN OBJECT_ID(N'[skiplock_jobs_schema]', N'U') IS NULL THEN 0 ELSE 1 END AS has_version,
       OBJECT_NAME(OBJECT_ID(N'[skiplock_jobs]', N'U')) AS jobs_name
