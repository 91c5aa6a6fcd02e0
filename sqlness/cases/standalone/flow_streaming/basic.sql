-- Streaming flows (flow_type = 'streaming'): a Spark Structured Streaming query per flow keeps
-- the sink current; ADMIN FLUSH_FLOW waits until every commit made before it is in the sink.
CREATE TABLE fs_metrics (host TEXT, ts TIMESTAMP TIME INDEX, cpu DOUBLE PRECISION, PRIMARY KEY (host));

-- Rows inserted before the flow exists are processed once at creation (backfill).
INSERT INTO fs_metrics VALUES ('a', '2024-01-01 00:00:10', 10), ('b', '2024-01-01 00:00:20', -5);

CREATE FLOW fs_hot
SINK TO fs_hot_sink
COMMENT 'positive cpu, doubled'
WITH (flow_type = 'streaming')
AS
SELECT host, ts, cpu * 2 AS cpu2 FROM fs_metrics WHERE cpu > 0;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_hot');

SELECT host, ts, cpu2 FROM fs_hot_sink ORDER BY ts;

SHOW CREATE TABLE fs_hot_sink;

INSERT INTO fs_metrics VALUES ('c', '2024-01-01 00:00:30', 30), ('d', '2024-01-01 00:00:40', 0);

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_hot');

SELECT host, ts, cpu2 FROM fs_hot_sink ORDER BY ts;

-- Deletes and updates in the source are reflected in the sink.
DELETE FROM fs_metrics WHERE host = 'a';

UPDATE fs_metrics SET cpu = 7 WHERE host = 'b';

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_hot');

SELECT host, ts, cpu2 FROM fs_hot_sink ORDER BY ts;

SELECT count(*) FROM fs_hot_sink WHERE update_at IS NULL;

-- A windowed aggregation over one append-mostly source is streaming by default.
CREATE FLOW fs_win SINK TO fs_win_sink AS
SELECT date_bin(INTERVAL '1 minute', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n, max(cpu) AS top
FROM fs_metrics GROUP BY w;

INSERT INTO fs_metrics VALUES ('e', '2024-01-01 00:01:05', 50), ('f', '2024-01-01 00:00:50', 60);

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_win');

SELECT w, n, top FROM fs_win_sink ORDER BY w;

DELETE FROM fs_metrics WHERE host = 'f';

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_win');

SELECT w, n, top FROM fs_win_sink ORDER BY w;

SELECT flow_name, options FROM information_schema.flows WHERE flow_name LIKE 'fs%' ORDER BY flow_name;

-- SHOW CREATE FLOW keeps the flow_type only when the user set it.
SHOW CREATE FLOW fs_win;

-- A query streaming cannot run incrementally is refused, with the way out.
CREATE FLOW fs_bad SINK TO fs_bad_sink WITH (flow_type = 'streaming') AS SELECT host, count(*) AS n FROM fs_metrics GROUP BY host;

CREATE FLOW fs_bad SINK TO fs_bad_sink WITH (flow_type = 'streaming') AS SELECT DISTINCT host FROM fs_metrics;

DROP FLOW fs_hot;

DROP FLOW fs_win;

SHOW FLOWS LIKE 'fs%';
