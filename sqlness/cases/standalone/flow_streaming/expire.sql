-- EXPIRE AFTER on a streaming flow is the watermark on the time index: once the newest row is
-- 1 minute past a window's end, changes to that window are late, counted and ignored.
CREATE TABLE fs_events (host TEXT, ts TIMESTAMP TIME INDEX, PRIMARY KEY (host));

CREATE FLOW fs_expire SINK TO fs_expire_sink EXPIRE AFTER '1 minute' WITH (flow_type = 'streaming') AS
SELECT date_bin(INTERVAL '10 seconds', ts, '2000-01-01 00:00:00'::timestamp) AS w, count(*) AS n
FROM fs_events GROUP BY w;

INSERT INTO fs_events VALUES ('a', '2024-01-01 00:00:01');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_expire');

INSERT INTO fs_events VALUES ('b', '2024-01-01 00:10:01');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_expire');

-- Late: its window ended long before the watermark (00:09:01).
INSERT INTO fs_events VALUES ('late', '2024-01-01 00:00:02');

INSERT INTO fs_events VALUES ('c', '2024-01-01 00:10:03');

-- SQLNESS REPLACE (?m)^(\|\s+)\d+(\s+\|)$ \1<rows>\2
ADMIN FLUSH_FLOW('fs_expire');

SELECT w, n FROM fs_expire_sink ORDER BY w;

SELECT flow_name, late_rows >= 1 AS late_counted, input_rows >= 4 AS all_read, status FROM information_schema.flow_statistics WHERE flow_name = 'fs_expire';

DROP FLOW fs_expire;
