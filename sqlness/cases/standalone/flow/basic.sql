-- A batch flow: per-host one-minute windows of a metrics table, kept up to date in an
-- auto-created sink.
CREATE TABLE flow_metrics (host TEXT, ts TIMESTAMP TIME INDEX, cpu DOUBLE PRECISION, PRIMARY KEY (host));

CREATE FLOW flow_cpu_1m
SINK TO flow_cpu_1m_sink
EVAL INTERVAL '1 hour'
COMMENT 'cpu per host and minute'
AS
SELECT host, date_bin(INTERVAL '1 minute', ts, '2000-01-01 00:00:00'::timestamp) AS w,
       count(*) AS n, max(cpu) AS max_cpu
FROM flow_metrics
GROUP BY host, w;

-- The first run happens at creation; on an empty source it writes nothing.
ADMIN FLUSH_FLOW('flow_cpu_1m');

SHOW CREATE TABLE flow_cpu_1m_sink;

INSERT INTO flow_metrics VALUES
  ('a', '2024-01-01 00:00:10', 10), ('a', '2024-01-01 00:00:40', 30),
  ('b', '2024-01-01 00:00:20', 20), ('a', '2024-01-01 00:01:05', 50);

ADMIN FLUSH_FLOW('flow_cpu_1m');

SELECT host, w, n, max_cpu FROM flow_cpu_1m_sink ORDER BY host, w;

-- One window changes: only its two groups are written.
INSERT INTO flow_metrics VALUES ('c', '2024-01-01 00:01:30', 70);

ADMIN FLUSH_FLOW('flow_cpu_1m');

SELECT host, w, n, max_cpu FROM flow_cpu_1m_sink ORDER BY host, w;

-- A group that disappears from its window is deleted from the sink.
DELETE FROM flow_metrics WHERE host = 'b';

ADMIN FLUSH_FLOW('flow_cpu_1m');

SELECT host, w, n, max_cpu FROM flow_cpu_1m_sink ORDER BY host, w;

-- Nothing changed since: nothing to write.
ADMIN FLUSH_FLOW('flow_cpu_1m');

SHOW FLOWS LIKE 'flow_cpu%';

SHOW CREATE FLOW flow_cpu_1m;

-- SQLNESS REPLACE \d{4}-\d{2}-\d{2}\s\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00 <time>
SHOW FLOW STATUS LIKE 'flow_cpu_1m';

-- Dropping a source a flow reads keeps the flow, pending until the table exists again.
DROP TABLE flow_metrics;

-- SQLNESS REPLACE \d{4}-\d{2}-\d{2}\s\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00 <time>
SHOW FLOW STATUS LIKE 'flow_cpu_1m';

DROP FLOW flow_cpu_1m;

SHOW FLOWS LIKE 'flow_cpu%';

-- The sink is an ordinary table and stays.
SELECT count(*) FROM flow_cpu_1m_sink;

DROP TABLE flow_cpu_1m_sink;
