-- A time-series table's PRIMARY KEY columns are tags: NULL is a tag value (one series).
CREATE TABLE nt_src (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a));

CREATE TABLE nt_sink (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a));

INSERT INTO nt_src VALUES (NULL, 1, '2024-01-01 00:00:00'), ('x', 2, '2024-01-01 00:00:00'), (NULL, 3, '2024-01-01 00:00:01');

-- same series, same time index: the last write wins
INSERT INTO nt_src VALUES (NULL, 4, '2024-01-01 00:00:00');

SELECT * FROM nt_src ORDER BY a NULLS FIRST, ts;

SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = 'nt_src' ORDER BY ordinal_position;

-- the time index stays NOT NULL
INSERT INTO nt_src (a, b) VALUES ('y', 1);

INSERT INTO nt_sink SELECT * FROM nt_src;

CREATE FLOW nt_flow SINK TO nt_sink EVAL INTERVAL '1 hour' AS SELECT a, b + 100 AS b, ts FROM nt_src;

-- the flow's first run may already have written its rows: the count is 0 or 3
-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('nt_flow');

SELECT * FROM nt_sink ORDER BY a NULLS FIRST, ts;

DELETE FROM nt_sink WHERE a IS NULL;

SELECT * FROM nt_sink ORDER BY a NULLS FIRST, ts;

-- ordinary tables keep PostgreSQL's rule: a primary key is NOT NULL
CREATE TABLE nt_plain (a TEXT PRIMARY KEY, b INT);

INSERT INTO nt_plain VALUES (NULL, 1);

DROP FLOW nt_flow;

DROP TABLE nt_sink;

DROP TABLE nt_src;

DROP TABLE nt_plain;
