-- KILL takes no variable: build it from the integer (never from text).
DECLARE @kill nvarchar(40) = N'KILL ' + CAST(CAST(%(session)s AS int) AS nvarchar(12));
EXEC (@kill)
