-- Flows live in the catalog and resume after a restart from where they were.
CREATE TABLE flow_rs_src (host TEXT, ts TIMESTAMP TIME INDEX, PRIMARY KEY (host));

CREATE FLOW flow_rs SINK TO flow_rs_sink EVAL INTERVAL '1 hour' AS
SELECT host, date_trunc('hour', ts) AS h, count(*) AS n FROM flow_rs_src GROUP BY host, date_trunc('hour', ts);

INSERT INTO flow_rs_src VALUES ('a', '2024-01-01 00:00:01');

-- The first run at creation may already have written these rows.
-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_rs');

INSERT INTO flow_rs_src VALUES ('a', '2024-01-01 00:10:00'), ('b', '2024-01-01 01:00:00');

-- SQLNESS ARG restart=true
SHOW FLOWS LIKE 'flow_rs';

-- The first run after the restart may already have caught up.
-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_rs');

SELECT host, h, n FROM flow_rs_sink ORDER BY host, h;

ADMIN FLUSH_FLOW('flow_rs');

DROP FLOW flow_rs;

DROP TABLE flow_rs_src;

DROP TABLE flow_rs_sink;
