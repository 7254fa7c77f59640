(CAST(%(id)s AS BIGINT), CAST(%(attempt)s AS INT), CAST(%(claim_id)s AS BIGINT),
 CAST(%(result)s AS NVARCHAR(MAX)))
