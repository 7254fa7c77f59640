(CAST(%(id)s AS BIGINT), CAST(%(attempt)s AS INT), CAST(%(result)s AS NVARCHAR(MAX)))
