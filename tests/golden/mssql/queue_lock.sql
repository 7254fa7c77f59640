-- A claim of a queue with a limit (queue_limits): the queue's application lock, owned by
-- the claiming transaction, taken without waiting (@LockTimeout = 0): while another claim
-- of that queue holds it, this claim takes nothing from the queue. queue_digest: as
-- order_key_digest in key_lock.
DECLARE @queue_lock int, @queue_resource NVARCHAR(255) = CONCAT(N'skiplock queue skiplock_jobs ',
    CAST(%(queue_digest)s AS NVARCHAR(64)));
EXEC @queue_lock = sp_getapplock
    @Resource = @queue_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = 0, @DbPrincipal = 'public';
SELECT CASE WHEN @queue_lock >= 0 THEN 1 ELSE 0 END AS held
