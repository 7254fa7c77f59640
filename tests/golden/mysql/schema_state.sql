SELECT (SELECT COUNT(*) FROM information_schema.tables
        WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(name)s)
           AS has_jobs,
       (SELECT COUNT(*) FROM information_schema.tables
        WHERE table_schema = COALESCE(%(schema)s, DATABASE()) AND table_name = %(version_name)s)
           AS has_version
