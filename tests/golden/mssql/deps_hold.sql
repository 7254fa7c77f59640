-- New jobs whose parents have not all ended: waiting, never claimed (not in the claim index).
UPDATE [skiplock_jobs] SET status = 'waiting'
WHERE id IN (SELECT p FROM OPENJSON(%(id_list)s) WITH (p BIGINT '$')) AND status = 'pending'
