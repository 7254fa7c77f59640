-- Before an enqueue with a key: the key's row in <table>_keys, locked (ON DUPLICATE KEY
-- UPDATE takes an exclusive lock) until the enqueuing transaction ends, so enqueues of
-- one key run one at a time and its ids grow in commit order: a claim that sees a keyed
-- job sees every earlier job of its key. Claims never read this table.
INSERT INTO `skiplock_jobs_keys` (order_key) VALUES (%(order_key)s)
ON DUPLICATE KEY UPDATE order_key = order_key
