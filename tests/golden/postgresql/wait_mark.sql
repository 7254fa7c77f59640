-- q.wait, before it reads the job: from now on the job's end notifies. A completion that
-- races this waits for its row lock (or this for the completion's), so either it sees the
-- mark or the read that follows sees the job finished.
UPDATE "skiplock_jobs" SET waited = TRUE WHERE id = %(id)s AND waited IS NOT TRUE
