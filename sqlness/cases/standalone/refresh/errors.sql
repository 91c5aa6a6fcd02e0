-- CREATE TABLE validation of refreshable tables, and REFRESH TABLE errors.
CREATE TABLE rf_e1 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_mode = 'SOMETIMES')
FORMAT PLAIN ENCODE CSV;

CREATE TABLE rf_e2 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_interval_sec = '10')
FORMAT PLAIN ENCODE CSV;

CREATE TABLE rf_e3 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_mode = 'FULL_RELOAD',
  refresh_interval_sec = '-5') FORMAT PLAIN ENCODE CSV;

CREATE TABLE rf_e4 (id int, v text) WITH (connector = 'file', path = '/tmp', refresh_mode = 'FULL_RELOAD')
FORMAT PLAIN ENCODE CSV;

CREATE TABLE rf_e5 (id int PRIMARY KEY) WITH (connector = 's3', refresh_mode = 'FULL_RELOAD');

CREATE TABLE rf_e6 (id int PRIMARY KEY) WITH (connector = 'file', refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV;

CREATE TABLE rf_e7 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_mode = 'FULL_RELOAD');

CREATE TABLE rf_e8 (id int PRIMARY KEY) WITH (connector = 'postgres', refresh_mode = 'FULL_RELOAD');

CREATE TABLE rf_e9 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_mode = 'FULL_RELOAD')
FORMAT PLAIN ENCODE XML;

CREATE TABLE rf_e10 (id int PRIMARY KEY) WITH (connector = 'file', path = '/tmp', refresh_mode = 'FULL_RELOAD',
  on_source_error = 'maybe') FORMAT PLAIN ENCODE CSV;

REFRESH TABLE rf_missing;

CREATE TABLE rf_plain (id int PRIMARY KEY);

REFRESH TABLE rf_plain;

CREATE VIEW rf_view AS SELECT id FROM rf_plain;

REFRESH TABLE rf_view;

REFRESH TABLE rf_plain EXTRA;

-- The default mode, STREAMING, is not refreshable.
-- SQLNESS ENV PWD
CREATE TABLE rf_stream (id int PRIMARY KEY) WITH (connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/users',
  refresh_mode = 'STREAMING') FORMAT PLAIN ENCODE PARQUET;

REFRESH TABLE rf_stream;

-- A source folder (under file_connector_roots) that does not exist.
-- SQLNESS ENV PWD
CREATE TABLE rf_gone (id int PRIMARY KEY) WITH (connector = 'file', path = '$PWD/sqlness/cases/standalone/refresh/data/nonexistent',
  refresh_mode = 'FULL_RELOAD') FORMAT PLAIN ENCODE CSV;

-- SQLNESS REPLACE /\S+/sqlness/ <repo>/sqlness/
REFRESH TABLE rf_gone WAIT;

-- SQLNESS ENV PWD
SELECT table_name, current_status, replace(last_error, '$PWD', '<repo>') AS last_error
FROM information_schema.refresh_tables WHERE table_name = 'rf_gone';

DROP VIEW rf_view;

DROP TABLE rf_plain;

DROP TABLE rf_stream;

DROP TABLE rf_gone;
