-- The file connector reads only under file_connector_roots (the sqlness server allows
-- sqlness/cases/standalone/refresh/data), never the server's own files, with paths resolved first.
CREATE TABLE rf_passwd (line text PRIMARY KEY) WITH (connector = 'file', path = '/etc', match_pattern = 'passwd',
  refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'true', delimiter = '|');

SELECT count(*) FROM information_schema.tables WHERE table_name = 'rf_passwd';

-- '..' is resolved before the check.
-- SQLNESS ENV PWD
-- SQLNESS REPLACE /\S+/sqlness/ <repo>/sqlness/
CREATE TABLE rf_dotdot (line text PRIMARY KEY) WITH (connector = 'file',
  path = '$PWD/sqlness/cases/standalone/refresh/data/../../../../../../../../../etc', match_pattern = 'passwd',
  refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'true');

-- match_pattern is a file name pattern of the path folder, never a path.
-- SQLNESS ENV PWD
CREATE TABLE rf_pattern (line text PRIMARY KEY) WITH (connector = 'file',
  path = '$PWD/sqlness/cases/standalone/refresh/data/users', match_pattern = '../../../../etc/passwd',
  refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'true');

-- SQLNESS ENV PWD
CREATE TABLE rf_pattern2 (line text PRIMARY KEY) WITH (connector = 'file',
  path = '$PWD/sqlness/cases/standalone/refresh/data/users', match_pattern = 'x/*.csv',
  refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV (without_header = 'true');
