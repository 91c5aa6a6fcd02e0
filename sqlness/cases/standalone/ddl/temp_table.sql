-- Temporary tables: the session's own, searched first, gone when the session ends.
CREATE TABLE tmp_demo (id int, v text);

INSERT INTO tmp_demo VALUES (1, 'permanent');

CREATE TEMP TABLE tmp_demo (id int, v text);

INSERT INTO tmp_demo VALUES (2, 'temporary');

SELECT * FROM tmp_demo;

SELECT * FROM public.tmp_demo;

SELECT * FROM pg_temp.tmp_demo;

-- SQLNESS REPLACE pg_temp_\d+ pg_temp_N
SELECT c.relname, c.relpersistence, CASE WHEN n.nspname LIKE 'pg_temp_%' THEN 'pg_temp_N' ELSE n.nspname END AS nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'tmp_demo' ORDER BY 2;

CREATE TEMP TABLE tmp_copy AS SELECT id * 10 AS id, upper(v) AS v FROM tmp_demo;

SHOW CREATE TABLE tmp_copy;

CREATE TEMP TABLE tmp_scratch (id int) ON COMMIT DELETE ROWS;

BEGIN;

INSERT INTO tmp_scratch VALUES (1), (2);

SELECT count(*) FROM tmp_scratch;

COMMIT;

SELECT count(*) FROM tmp_scratch;

CREATE TEMP TABLE tmp_once (id int) ON COMMIT DROP;

SELECT * FROM tmp_once;

CREATE TABLE tmp_bad (id int) ON COMMIT DROP;

CREATE UNLOGGED TABLE tmp_unlogged (id int);

DROP TABLE tmp_demo;

SELECT * FROM tmp_demo;

DROP TABLE tmp_demo;
