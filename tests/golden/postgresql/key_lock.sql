-- Before an enqueue with a key: enqueues of one key run one at a time (until the enqueuing
-- transaction ends), so a key's ids grow in commit order and a claim that sees a keyed job
-- sees every earlier job of its key. Claims never take this lock.
SELECT pg_advisory_xact_lock(hashtext('skiplock key skiplock_jobs'), hashtext(%(order_key)s))
