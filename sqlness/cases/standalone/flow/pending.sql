-- A flow whose source does not exist yet waits for it.
CREATE FLOW flow_pd SINK TO flow_pd_sink AS SELECT host, count(*) AS n FROM flow_pd_src GROUP BY host;

CREATE FLOW flow_pd SINK TO flow_pd_sink WITH (defer_on_missing_source = true) AS
SELECT host, count(*) AS n FROM flow_pd_src GROUP BY host;

SHOW FLOWS LIKE 'flow_pd';

SELECT flow_name, source_table_ids, source_table_names, options FROM information_schema.flows WHERE flow_name = 'flow_pd';

SELECT flow_name, status FROM information_schema.flow_statistics WHERE flow_name = 'flow_pd';

SHOW FLOW STATUS LIKE 'flow_pd';

SHOW CREATE FLOW flow_pd;

ADMIN FLUSH_FLOW('flow_pd');

CREATE TABLE flow_pd_src (host TEXT, ts TIMESTAMP TIME INDEX, PRIMARY KEY (host));

INSERT INTO flow_pd_src VALUES ('a', '2024-01-01 00:00:01'), ('a', '2024-01-01 00:00:02'), ('b', '2024-01-01 00:00:03');

-- (a query that needs Spark: when this case runs first, the gateway may still be starting it)
SELECT count(*) FROM flow_pd_src;

-- It activates by itself within a few seconds and processes the rows already there.
-- SQLNESS SLEEP 8s
SELECT host, n FROM flow_pd_sink ORDER BY host;

SELECT flow_name, source_table_names FROM information_schema.flows WHERE flow_name = 'flow_pd';

SELECT flow_name, status FROM information_schema.flow_statistics WHERE flow_name = 'flow_pd';

-- OR REPLACE works from active back to pending.
CREATE OR REPLACE FLOW flow_pd SINK TO flow_pd_sink WITH (defer_on_missing_source = true) AS
SELECT host, count(*) AS n FROM flow_pd_later GROUP BY host;

SELECT flow_name, status FROM information_schema.flow_statistics WHERE flow_name = 'flow_pd';

DROP FLOW flow_pd;

SHOW FLOWS LIKE 'flow_pd';

DROP TABLE flow_pd_src;

DROP TABLE flow_pd_sink;
