-- Statement forms, options and their errors.
CREATE TABLE flow_st_src (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE PRECISION, PRIMARY KEY (host));

CREATE FLOW flow_st SINK TO flow_st_sink AS SELECT host, count(*) AS c FROM flow_st_src GROUP BY host;

CREATE FLOW flow_st SINK TO flow_st_sink AS SELECT host, count(*) AS c FROM flow_st_src GROUP BY host;

CREATE FLOW IF NOT EXISTS flow_st SINK TO flow_st_sink AS SELECT host, count(*) AS c FROM flow_st_src GROUP BY host;

CREATE OR REPLACE FLOW IF NOT EXISTS flow_st SINK TO flow_st_sink AS SELECT host, count(*) AS c FROM flow_st_src GROUP BY host;

CREATE OR REPLACE FLOW flow_st SINK TO flow_st_sink EXPIRE AFTER INTERVAL '2 days 1h 2 min' EVAL INTERVAL '1m' AS select host,count(*) as c from flow_st_src group by host;

SHOW CREATE FLOW flow_st;

CREATE FLOW flow_st2 SINK TO flow_st2_sink EXPIRE AFTER '300 s' EVAL INTERVAL '5 minutes' AS SELECT host FROM flow_st_src;

SELECT flow_name, expire_after FROM information_schema.flows WHERE flow_name LIKE 'flow_st%' ORDER BY flow_name;

-- Options
CREATE FLOW flow_st3 SINK TO flow_st3_sink WITH (colour = 'red') AS SELECT host FROM flow_st_src;

CREATE FLOW flow_st3 SINK TO flow_st3_sink WITH (defer_on_missing_source = 'maybe') AS SELECT host FROM flow_st_src;

CREATE FLOW flow_st3 SINK TO flow_st3_sink WITH (flow_type = 'magic') AS SELECT host FROM flow_st_src;

-- Intervals
CREATE FLOW flow_st3 SINK TO flow_st3_sink EXPIRE AFTER '1 month' AS SELECT host FROM flow_st_src;

CREATE FLOW flow_st3 SINK TO flow_st3_sink EVAL INTERVAL '0 s' AS SELECT host FROM flow_st_src;

CREATE FLOW flow_st3 SINK TO flow_st3_sink EXPIRE AFTER 'soon' AS SELECT host FROM flow_st_src;

-- Clause order is fixed.
CREATE FLOW flow_st3 SINK TO flow_st3_sink COMMENT 'c' EVAL INTERVAL '1 s' AS SELECT host FROM flow_st_src;

-- The sink cannot be a source; missing sources are named.
CREATE FLOW flow_st3 SINK TO flow_st_src AS SELECT host, ts, v FROM flow_st_src;

CREATE FLOW flow_st3 SINK TO flow_st3_sink AS SELECT * FROM flow_st_nope1 JOIN flow_st_nope2 ON true;

DROP FLOW flow_st_nope;

DROP FLOW IF EXISTS flow_st_nope;

SHOW CREATE FLOW flow_st_nope;

ADMIN FLUSH_FLOW('flow_st_nope');

COMMENT ON FLOW flow_st IS 'counts per host';

SELECT flow_name, comment FROM information_schema.flows WHERE flow_name = 'flow_st';

COMMENT ON FLOW flow_st IS NULL;

SELECT flow_name, comment FROM information_schema.flows WHERE flow_name = 'flow_st';

SHOW FLOWS LIKE 'flow_st%';

SELECT f.flow_name, f.sink_table_name, s.status, s.last_error
FROM information_schema.flows f JOIN information_schema.flow_statistics s ON f.flow_id = s.flow_id
WHERE f.flow_name LIKE 'flow_st%' ORDER BY f.flow_name DESC;

SHOW FLOWS WHERE "Flows" = 'flow_st2';

DROP FLOW flow_st;

DROP FLOW flow_st2;

DROP TABLE flow_st_src;

DROP TABLE flow_st_sink;

DROP TABLE flow_st2_sink;
