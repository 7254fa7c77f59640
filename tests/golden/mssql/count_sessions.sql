-- How many of these session ids are still connected (tests and operators count a pool).
SELECT COUNT(*) AS n FROM sys.dm_exec_sessions WHERE session_id IN (%(sessions)s)
