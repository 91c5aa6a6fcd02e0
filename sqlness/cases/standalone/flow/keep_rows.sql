-- Flows keep every sink row: DISTINCT is a grouping, queries with CTEs, ORDER BY subqueries and
-- date_bin origins, GreptimeDB's flow options, sinks matched by position, and a source dropped
-- and created again under its flows.
CREATE TABLE flow_kr_src (a INT, b TEXT, ts TIMESTAMP TIME INDEX);

INSERT INTO flow_kr_src VALUES (20, 'x', '2021-07-01 00:00:00'), (20, 'y', '2021-07-01 00:00:01'), (22, 'x', '2021-07-01 00:00:02');

-- The rows come first: the flow's first run, at creation, then sees them whenever it runs, so the
-- run count below does not depend on whether it ran before or after the INSERT.
CREATE FLOW flow_kr_distinct SINK TO flow_kr_distinct_sink EVAL INTERVAL '1 hour' AS SELECT DISTINCT a FROM flow_kr_src;

-- (a query that needs Spark: when this case runs first, the gateway may still be starting it)
SELECT count(*) FROM flow_kr_src;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_distinct');

SELECT a FROM flow_kr_distinct_sink ORDER BY a;

INSERT INTO flow_kr_src VALUES (23, 'x', '2021-07-01 00:00:03');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_distinct');

-- SQLNESS SORT_RESULT 3 1
SELECT a FROM flow_kr_distinct_sink;

SHOW CREATE TABLE flow_kr_distinct_sink;

-- A CTE, an ORDER BY inside a subquery, and date_bin with an origin as third argument.
CREATE FLOW flow_kr_cte SINK TO flow_kr_cte_sink EVAL INTERVAL '1 hour' AS
WITH w AS (SELECT a, count(*) AS n FROM flow_kr_src GROUP BY a) SELECT a, n FROM w;

CREATE FLOW flow_kr_sub SINK TO flow_kr_sub_sink EVAL INTERVAL '1 hour' AS
SELECT a, ts FROM (SELECT a, ts FROM flow_kr_src ORDER BY a DESC) AS s WHERE a > 20;

CREATE FLOW flow_kr_bin SINK TO flow_kr_bin_sink EVAL INTERVAL '1 hour' AS
SELECT date_bin(INTERVAL '2 seconds', ts, '2021-07-01 00:00:01') AS w, count(*) AS c FROM flow_kr_src GROUP BY w;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_cte');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_sub');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_bin');

SELECT a, n FROM flow_kr_cte_sink ORDER BY a;

SELECT a, ts FROM flow_kr_sub_sink ORDER BY a;

SELECT w, c FROM flow_kr_bin_sink ORDER BY w;

-- GreptimeDB's flow options are accepted and shown; the catalog's JSON is compact, a flow
-- without comment has '', a batching flow has no state size.
CREATE FLOW flow_kr_opt SINK TO flow_kr_opt_sink EVAL INTERVAL '1 hour' WITH (experimental_enable_incremental_read = 'true') AS
SELECT b, count(*) AS n FROM flow_kr_src GROUP BY b;

SHOW CREATE FLOW flow_kr_opt;

SELECT flow_name, options, comment, state_size FROM information_schema.flows WHERE flow_name = 'flow_kr_opt';

-- An existing sink takes the output by position when the names differ.
CREATE TABLE flow_kr_pos (label TEXT, total BIGINT, ts TIMESTAMP TIME INDEX, PRIMARY KEY (label));

CREATE FLOW flow_kr_pos_flow SINK TO flow_kr_pos EVAL INTERVAL '1 hour' AS
SELECT b, count(*), date_trunc('minute', ts) FROM flow_kr_src GROUP BY b, 3;

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_pos_flow');

SELECT label, total, ts FROM flow_kr_pos ORDER BY label;

CREATE TABLE flow_kr_pos_bad (label INT, total BIGINT, ts TIMESTAMP TIME INDEX);

CREATE FLOW flow_kr_pos_bad_flow SINK TO flow_kr_pos_bad AS
SELECT b, count(*), date_trunc('minute', ts) FROM flow_kr_src GROUP BY b, 3;

-- Dropping the source keeps its flows, pending; creating it again rebuilds their sinks.
DROP FLOW flow_kr_cte;

DROP FLOW flow_kr_sub;

DROP FLOW flow_kr_bin;

DROP FLOW flow_kr_opt;

DROP FLOW flow_kr_pos_flow;

DROP TABLE flow_kr_src;

-- SQLNESS REPLACE \d{4}-\d{2}-\d{2}\s\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00 <time>
SHOW FLOW STATUS LIKE 'flow_kr_distinct';

ADMIN FLUSH_FLOW('flow_kr_distinct');

SELECT a FROM flow_kr_distinct_sink ORDER BY a;

CREATE TABLE flow_kr_src (a INT, b TEXT, ts TIMESTAMP TIME INDEX);

INSERT INTO flow_kr_src VALUES (7, 'x', '2021-07-01 00:00:00'), (8, 'x', '2021-07-01 00:00:01'), (7, 'y', '2021-07-01 00:00:02');

-- It activates by itself within a few seconds.
-- SQLNESS SLEEP 8s
-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('flow_kr_distinct');

SELECT a FROM flow_kr_distinct_sink ORDER BY a;

DROP TABLE flow_kr_src CASCADE;

SHOW FLOWS LIKE 'flow\_kr\_%';

DROP TABLE flow_kr_distinct_sink;

DROP TABLE flow_kr_cte_sink;

DROP TABLE flow_kr_sub_sink;

DROP TABLE flow_kr_bin_sink;

DROP TABLE flow_kr_opt_sink;

DROP TABLE flow_kr_pos;

DROP TABLE flow_kr_pos_bad;
