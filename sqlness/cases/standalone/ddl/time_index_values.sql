SET TIME ZONE 'UTC';

-- integers written to a time index are epoch values in its unit (GreptimeDB)
CREATE TABLE tiv_ms (h STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(h));

CREATE TABLE tiv_s (h STRING, ts TIMESTAMP(0) TIME INDEX, PRIMARY KEY(h));

CREATE TABLE tiv_us (h STRING, ts TIMESTAMP(6) TIME INDEX, PRIMARY KEY(h));

CREATE TABLE tiv_ns (h STRING, ts TIMESTAMP(9) TIME INDEX, PRIMARY KEY(h));

CREATE TABLE tiv_tz (h STRING, ts TIMESTAMPTZ TIME INDEX, PRIMARY KEY(h));

INSERT INTO tiv_ms VALUES ('a', 0), ('b', 1700000000123);

INSERT INTO tiv_ms SELECT 'c', 1700000000456;

INSERT INTO tiv_s VALUES ('a', 1700000000), ('b', '2024-01-01 00:00:00.5');

INSERT INTO tiv_us VALUES ('a', 1700000000123456);

INSERT INTO tiv_ns VALUES ('a', 1700000000123456789);

INSERT INTO tiv_tz VALUES ('a', 1700000000000);

SELECT * FROM tiv_ms ORDER BY h;

SELECT * FROM tiv_s ORDER BY h;

SELECT * FROM tiv_us;

SELECT * FROM tiv_ns;

SELECT * FROM tiv_tz;

SHOW CREATE TABLE tiv_ns;

-- text keeps PostgreSQL's input rules
INSERT INTO tiv_ms VALUES ('d', 'not a time');

-- other columns keep PostgreSQL's rules
CREATE TABLE tiv_plain (a TIMESTAMP(0), b TIMESTAMP(9), d DATE);

INSERT INTO tiv_plain (a) VALUES (0);

INSERT INTO tiv_plain (d) VALUES (5000000000);

INSERT INTO tiv_plain (a, b) VALUES ('1999-12-31 23:59:59.5', '2024-01-01 00:00:00.1234565'), ('2024-01-01 00:00:00.5', '2024-01-01 00:00:00.1234575');

SELECT a, b FROM tiv_plain ORDER BY a;

SHOW CREATE TABLE tiv_plain;

DROP TABLE tiv_ms;

DROP TABLE tiv_s;

DROP TABLE tiv_us;

DROP TABLE tiv_ns;

DROP TABLE tiv_tz;

DROP TABLE tiv_plain;
