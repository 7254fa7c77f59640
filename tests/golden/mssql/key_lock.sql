-- Before an enqueue with a key: an application lock owned by the enqueuing transaction,
-- so enqueues of one key run one at a time and its ids grow in commit order: a claim that
-- sees a keyed job sees every earlier job of its key. Claims never take this lock.
-- order_key_digest: the dialect's SHA-256 of the key as NVARCHAR(255) (UTF-16LE), in
-- upper-case hex: what CONVERT(NVARCHAR(64), HASHBYTES('SHA2_256', ...), 2) gives, which
-- Babelfish does not run (tests/golden/mssql/BABELFISH_GAPS.md).
DECLARE @key_lock int, @key_resource NVARCHAR(255) = CONCAT(N'skiplock key skiplock_jobs ',
    CAST(%(order_key_digest)s AS NVARCHAR(64)));
EXEC @key_lock = sp_getapplock
    @Resource = @key_resource, @LockMode = 'Exclusive', @LockOwner = 'Transaction',
    @LockTimeout = -1, @DbPrincipal = 'public'
