-- a GreptimeDB database is a schema of database "tidegate"
CREATE DATABASE gdb;

CREATE DATABASE gdb;

CREATE DATABASE IF NOT EXISTS gdb;

CREATE DATABASE tidegate;

CREATE DATABASE gdb_opts WITH (ttl = '7d');

CREATE TABLE gdb.m (host STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(host));

INSERT INTO gdb.m VALUES ('a', 0);

USE gdb;

SHOW search_path;

INSERT INTO m VALUES ('b', 1000);

SELECT * FROM tidegate.gdb.m ORDER BY host;

SELECT * FROM other.gdb.m;

DROP DATABASE gdb;

DROP SCHEMA gdb CASCADE;
