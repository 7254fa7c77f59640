-- A Session-owned application lock: held until lock_release or until the connection ends,
-- whatever the transactions do. sp_getapplock returns 0 or 1 when granted, < 0 otherwise.
DECLARE @result int;
EXEC @result = sp_getapplock @Resource = %(name)s, @LockMode = 'Exclusive',
     @LockOwner = 'Session', @LockTimeout = %(wait_ms)s, @DbPrincipal = 'public';
SELECT CASE WHEN @result >= 0 THEN 1 ELSE 0 END AS acquired
