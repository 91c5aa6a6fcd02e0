CREATE TABLE cpu (host STRING, ts TIMESTAMP NOT NULL, usage DOUBLE, TIME INDEX (ts), PRIMARY KEY (host));

INSERT INTO cpu VALUES ('a', '2024-01-01 00:00:00', 1.0), ('b', '2024-01-01 00:00:00', 2.0);

INSERT INTO cpu VALUES ('a', '2024-01-01 00:00:00', 10.0), ('a', '2024-01-01 00:01:00', 3.0);

SELECT * FROM cpu ORDER BY host, ts;

CREATE TABLE cpu_log (host STRING, ts TIMESTAMP NOT NULL, usage DOUBLE, TIME INDEX (ts), PRIMARY KEY (host)) WITH (append_mode = 'true');

INSERT INTO cpu_log VALUES ('a', '2024-01-01 00:00:00', 1.0);

INSERT INTO cpu_log VALUES ('a', '2024-01-01 00:00:00', 10.0);

SELECT * FROM cpu_log ORDER BY usage;

DROP TABLE cpu;

DROP TABLE cpu_log;
