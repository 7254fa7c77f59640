INSERT INTO "skiplock_jobs_schema" (version, name) VALUES (%(version)s, %(name)s)
ON CONFLICT (version) DO NOTHING
