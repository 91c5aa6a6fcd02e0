-- How sinks are created, and how an existing sink is checked.
CREATE TABLE flow_sr_src (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host));

INSERT INTO flow_sr_src VALUES ('a', '2024-01-01 00:00:01', 1), ('b', '2024-01-01 00:00:02', 5);

-- No timestamp among the GROUP BY keys: a placeholder time index.
CREATE FLOW flow_sr_count SINK TO flow_sr_count_sink EVAL INTERVAL '1 hour' AS
SELECT host, count(*) AS n FROM flow_sr_src GROUP BY host;

SHOW CREATE TABLE flow_sr_count_sink;

-- Without aggregation: the first timestamp column is the time index, no primary key.
CREATE FLOW flow_sr_filter SINK TO flow_sr_filter_sink EVAL INTERVAL '1 hour' AS
SELECT host, ts, v * 2 AS v2 FROM flow_sr_src WHERE v > 2;

SHOW CREATE TABLE flow_sr_filter_sink;

-- The first run at creation may already have written these rows.
-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_sr_filter');

SELECT host, ts, v2 FROM flow_sr_filter_sink ORDER BY ts;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_sr_count');

SELECT host, n, __ts_placeholder FROM flow_sr_count_sink ORDER BY host;

-- SQLNESS REPLACE \d{4}-\d{2}-\d{2}\s\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00 <time>
SHOW FLOW STATUS LIKE 'flow\_sr\_%';

-- An existing sink whose columns take the output is used as it is.
CREATE TABLE flow_sr_own (host TEXT, w TIMESTAMP TIME INDEX, c BIGINT, update_at TIMESTAMP(3), PRIMARY KEY (host));

CREATE FLOW flow_sr_own_flow SINK TO flow_sr_own WITH (flow_type = 'batching') AS
SELECT host, date_bin(INTERVAL '1 hour', ts, '2000-01-01'::timestamp) AS w, count(*) AS c FROM flow_sr_src GROUP BY host, w;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_sr_own_flow');

SELECT host, w, c, update_at IS NOT NULL AS stamped FROM flow_sr_own ORDER BY host;

-- A mismatching sink is refused with the differences.
CREATE TABLE flow_sr_bad (host INT, w TIMESTAMP TIME INDEX, extra TEXT);

CREATE FLOW flow_sr_bad_flow SINK TO flow_sr_bad AS
SELECT host, date_bin(INTERVAL '1 hour', ts, '2000-01-01'::timestamp) AS w, count(*) AS c FROM flow_sr_src GROUP BY host, w;

DROP TABLE flow_sr_src CASCADE;

SHOW FLOWS LIKE 'flow\_sr\_%';

DROP TABLE flow_sr_count_sink;

DROP TABLE flow_sr_filter_sink;

DROP TABLE flow_sr_own;

DROP TABLE flow_sr_bad;
