IF NOT EXISTS (SELECT 1 FROM [skiplock_jobs_schema] WHERE version = %(version)s)
INSERT INTO [skiplock_jobs_schema] (version, name) VALUES (%(version)s, %(name)s)
