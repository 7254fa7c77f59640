SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)) AS version,
       CAST(SERVERPROPERTY('EngineEdition') AS INT) AS engine_edition,
       @@VERSION AS banner
