KILL %(session)s
