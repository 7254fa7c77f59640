-- jobs_name: the name the table was found under. Under a case-insensitive collation (the
-- default) OBJECT_ID finds [Jobs] for [jobs]: skiplock refuses a name found so. Read from
-- INFORMATION_SCHEMA, which keeps the name as created on Babelfish too (its sys.objects
-- and OBJECT_NAME give it in lower case).
SELECT CASE WHEN OBJECT_ID(N'[skiplock_jobs]', N'U') IS NULL THEN 0 ELSE 1 END AS has_jobs,
       CASE WHEN OBJECT_ID(N'[skiplock_jobs_schema]', N'U') IS NULL THEN 0 ELSE 1 END AS has_version,
       (SELECT TOP (1) TABLE_NAME FROM INFORMATION_SCHEMA.TABLES
        WHERE TABLE_NAME = %(name)s AND TABLE_SCHEMA = COALESCE(%(schema)s, SCHEMA_NAME()))
           AS jobs_name
