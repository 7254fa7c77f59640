-- Placeholder on branch `wake` only: schema version 5 belongs to branch `keys`, which was
-- not merged when this branch was written. Delete this file when merging `keys` (its own
-- 0005 replaces it); the loader refuses two files with one number.
SELECT 1
