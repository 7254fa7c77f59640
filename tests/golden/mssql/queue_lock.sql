-- A claim of a queue with a limit (queue_limits): the queue's application lock, owned by
-- the claiming transaction, taken without waiting (@LockTimeout = 0): while another claim
-- of that queue holds it, this claim takes nothing from the queue.
DECLARE @queue_lock int, @queue_resource NVARCHAR(255) = CONCAT(N'skiplock queue skiplock_jobs ',
    CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', CAST(%(queue)s AS NVARCHAR(255))), 2));
EXEC @queue_lock = sp_getapplock
    @Resource = @queue_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = 0, @DbPrincipal = 'public';
SELECT CASE WHEN @queue_lock >= 0 THEN 1 ELSE 0 END AS held
