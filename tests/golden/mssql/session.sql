-- Run once per new connection. Filtered indexes refuse writes unless these options are
-- set (pymssql sets most by default; a user's conn_properties may not). XACT_ABORT OFF
-- keeps a duplicate key in enqueue_dedupe from dooming the transaction. TEXTSIZE: FreeTDS
-- would otherwise cut NVARCHAR(MAX) payloads it reads.
SET QUOTED_IDENTIFIER ON;
SET ANSI_NULLS ON;
SET ANSI_PADDING ON;
SET ANSI_WARNINGS ON;
SET ARITHABORT ON;
SET CONCAT_NULL_YIELDS_NULL ON;
SET NUMERIC_ROUNDABORT OFF;
SET XACT_ABORT OFF;
SET TEXTSIZE 2147483647;
SET TRANSACTION ISOLATION LEVEL READ COMMITTED
