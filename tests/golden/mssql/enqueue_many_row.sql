(%(n)s, CAST(%(payload)s AS NVARCHAR(MAX)), CAST(%(idempotency_key)s AS UNIQUEIDENTIFIER))
