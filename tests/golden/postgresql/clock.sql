-- The database's clock, not the transaction's start: ticks fall due by it.
SELECT clock_timestamp() AS now
