SELECT RELEASE_LOCK(%(name)s) AS released
