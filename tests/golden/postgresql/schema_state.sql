SELECT to_regclass('"skiplock_jobs"') IS NOT NULL AS has_jobs,
       to_regclass('"skiplock_jobs_schema"') IS NOT NULL AS has_version
