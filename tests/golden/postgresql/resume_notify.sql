-- In the resume's transaction: idle workers' listeners hear it once it commits, and claim.
SELECT pg_notify('skiplock_jobs', '')
