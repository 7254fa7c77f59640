SELECT @@SPID AS session
