-- ttl: how long a time-series table keeps a row (GreptimeDB durations and PostgreSQL intervals)
CREATE TABLE ttl_week (host STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(host)) WITH (ttl = '7d');

CREATE TABLE ttl_mixed (host STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(host)) WITH (ttl = '1h 30m');

CREATE TABLE ttl_interval (host STRING, ts TIMESTAMPTZ TIME INDEX, PRIMARY KEY(host)) WITH (ttl = '90 days');

SHOW CREATE TABLE ttl_week;

-- bad values name the option and the value
CREATE TABLE ttl_bad (host STRING, ts TIMESTAMP TIME INDEX) WITH (ttl = 'soon');

CREATE TABLE ttl_zero (host STRING, ts TIMESTAMP TIME INDEX) WITH (ttl = '0s');

-- a ttl needs a time index to judge rows by
CREATE TABLE ttl_plain (a INT) WITH (ttl = '1d');

-- ALTER TABLE SET / RESET (and GreptimeDB's SET 'ttl' = ... / UNSET 'ttl')
ALTER TABLE ttl_week SET (ttl = '1month');

SHOW CREATE TABLE ttl_week;

ALTER TABLE ttl_week SET 'ttl' = 'forever';

ALTER TABLE ttl_week UNSET 'ttl';

ALTER TABLE ttl_week RESET (ttl);

ALTER TABLE ttl_week SET (ttl = 'whenever');

ALTER TABLE ttl_week SET (fillfactor = 70);

ALTER TABLE ttl_week SET (colour = 'red');

-- a row is invisible from the moment its time index is older than now() - ttl
INSERT INTO ttl_mixed VALUES ('two hours ago', now()::timestamp - INTERVAL '2 hours'), ('an hour ago', now()::timestamp - INTERVAL '1 hour'), ('now', now()::timestamp);

SELECT host FROM ttl_mixed ORDER BY host;

SELECT count(*) FROM ttl_mixed;

UPDATE ttl_mixed SET host = host;

-- 'instant': inserts are counted, feed flows and the change feed, and are never visible
CREATE TABLE ttl_instant (host STRING, v INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(host)) WITH (ttl = 'instant');

INSERT INTO ttl_instant VALUES ('a', 1, now()::timestamp), ('b', 2, now()::timestamp);

SELECT * FROM ttl_instant;

DROP TABLE ttl_week;

DROP TABLE ttl_mixed;

DROP TABLE ttl_interval;

DROP TABLE ttl_instant;
