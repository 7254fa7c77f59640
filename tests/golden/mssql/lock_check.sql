SELECT CASE WHEN APPLOCK_MODE('public', %(name)s, 'Session') = 'Exclusive' THEN 1 ELSE 0 END AS held
