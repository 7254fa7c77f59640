EXEC sp_releaseapplock @Resource = %(name)s, @LockOwner = 'Session', @DbPrincipal = 'public'
