-- How many of these session ids are still connected (tests and operators count a pool).
SELECT COUNT(*) AS n FROM information_schema.processlist WHERE id IN (%(sessions)s)
