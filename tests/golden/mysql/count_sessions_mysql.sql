-- MySQL: information_schema.processlist converts every session's query text to utf8mb3 and
-- fails (3854) while any session runs a query with a 4-byte character; MariaDB has no
-- performance_schema.processlist.
SELECT COUNT(*) AS n FROM performance_schema.processlist WHERE id IN (%(sessions)s)
