-- Refreshable tables over files: CREATE TABLE ... WITH (connector, refresh_mode) FORMAT ... ENCODE ...
-- SQLNESS ENV PWD
CREATE TABLE rf_users (id int PRIMARY KEY, name varchar, v int) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/users', match_pattern = '*.csv',
  refresh_mode = 'FULL_RELOAD'
) FORMAT PLAIN ENCODE CSV (without_header = 'false', delimiter = ',');

SELECT table_schema, table_name, current_status, last_trigger_time, rows_loaded, last_error, skipped_ticks
FROM information_schema.refresh_tables WHERE table_name = 'rf_users';

REFRESH TABLE rf_users WAIT;

SELECT * FROM rf_users ORDER BY id;

SELECT table_name, current_status, trigger_interval_secs, rows_loaded, rows_inserted, rows_updated, rows_deleted, last_error
FROM information_schema.refresh_tables WHERE table_name = 'rf_users';

-- Unchanged source: nothing inserted, updated or deleted.
REFRESH TABLE rf_users WAIT;

SELECT rows_loaded, rows_inserted, rows_updated, rows_deleted, last_success_time IS NOT NULL AS succeeded
FROM information_schema.refresh_tables WHERE table_name = 'rf_users';

-- JSON lines
-- SQLNESS ENV PWD
CREATE TABLE rf_events (id bigint PRIMARY KEY, kind text, at timestamp) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/events',
  refresh_mode = 'FULL_RELOAD', refresh_interval_sec = '3600'
) FORMAT PLAIN ENCODE JSON;

REFRESH TABLE rf_events WAIT;

SELECT * FROM rf_events ORDER BY id;

-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(\.\d+)?\+00\s*\| <time>|
-- SQLNESS REPLACE (last_\w+_time)\s+\| \1|
-- SQLNESS REPLACE -{5,} -----
-- SQLNESS REPLACE 127\.0\.0\.1:\d+ <gateway>
SHOW REFRESH STATUS;

-- A row that does not fit the schema: the refresh fails, naming file and line; the table is unchanged.
-- SQLNESS ENV PWD
CREATE TABLE rf_bad (id int PRIMARY KEY, s text) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/bad', refresh_mode = 'FULL_RELOAD'
) FORMAT PLAIN ENCODE CSV (without_header = 'true');

-- SQLNESS REPLACE /\S+/sqlness/ <repo>/sqlness/
REFRESH TABLE rf_bad WAIT;

SELECT count(*) FROM rf_bad;

-- The error names the file; the checkout's location is cut in SQL so the table's width does not depend on it.
SELECT current_status, rows_loaded, regexp_replace(last_error, '/\S+/sqlness/', '<repo>/sqlness/') AS last_error FROM information_schema.refresh_tables WHERE table_name = 'rf_bad';

-- Duplicate keys in the source fail the refresh, unless on_source_error = 'ignore'.
-- SQLNESS ENV PWD
CREATE TABLE rf_dup (id int PRIMARY KEY, s text) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/dup', refresh_mode = 'FULL_RELOAD'
) FORMAT PLAIN ENCODE CSV (without_header = 'true');

REFRESH TABLE rf_dup WAIT;

-- SQLNESS ENV PWD
CREATE TABLE rf_dup_ok (id int PRIMARY KEY, s text) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/dup', refresh_mode = 'FULL_RELOAD',
  on_source_error = 'ignore'
) FORMAT PLAIN ENCODE CSV (without_header = 'true');

REFRESH TABLE rf_dup_ok WAIT;

SELECT * FROM rf_dup_ok ORDER BY id;

SELECT table_name, current_status, rows_loaded, rows_inserted, last_error FROM information_schema.refresh_tables
WHERE table_name LIKE 'rf_dup%' ORDER BY table_name;

-- A NULL in a NOT NULL column breaks the schema as an unparsable value does.
-- SQLNESS ENV PWD
CREATE TABLE rf_nn (id int PRIMARY KEY, s text NOT NULL) WITH (
  connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/nulls', refresh_mode = 'FULL_RELOAD'
) FORMAT PLAIN ENCODE CSV (without_header = 'true');

-- SQLNESS REPLACE /\S+/sqlness/ <repo>/sqlness/
REFRESH TABLE rf_nn WAIT;

SELECT count(*) FROM rf_nn;

DROP TABLE rf_nn;

DROP TABLE rf_users;

DROP TABLE rf_events;

DROP TABLE rf_bad;

DROP TABLE rf_dup;

DROP TABLE rf_dup_ok;
