SELECT 1;

SELECT 1 AS one, 'two' AS two, NULL AS nothing;

SELECT version() LIKE 'PostgreSQL 16%';

SHOW server_version;

SET application_name = 'sqlness';

SHOW application_name;

SET no_such_setting = 1;

SHOW TRANSACTION ISOLATION LEVEL;

BEGIN;

SELECT 1;

COMMIT;
