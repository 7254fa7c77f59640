-- Before an enqueue with a key: an application lock owned by the enqueuing transaction,
-- so enqueues of one key run one at a time and its ids grow in commit order: a claim that
-- sees a keyed job sees every earlier job of its key. Claims never take this lock.
DECLARE @key_lock int, @key_resource NVARCHAR(255) = CONCAT(N'skiplock key skiplock_jobs ',
    CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', CAST(%(order_key)s AS NVARCHAR(255))), 2));
EXEC @key_lock = sp_getapplock
    @Resource = @key_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = -1, @DbPrincipal = 'public'
