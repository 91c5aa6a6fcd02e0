CREATE TABLE monitor (
    host VARCHAR(64) NOT NULL,
    ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    cpu DOUBLE PRECISION DEFAULT 0,
    memory DOUBLE PRECISION,
    TIME INDEX (ts),
    PRIMARY KEY (host)
) WITH (append_mode = 'false') COMMENT 'host metrics';

CREATE TABLE IF NOT EXISTS monitor (x int);

CREATE TABLE monitor (x int);

SHOW TABLES;

SHOW CREATE TABLE monitor;

CREATE TABLE accounts (
    id BIGINT PRIMARY KEY,
    owner TEXT NOT NULL,
    balance NUMERIC(12, 2) DEFAULT 0,
    opened DATE
);

CREATE TABLE accounts_copy AS SELECT id, owner FROM accounts;

SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name;

DROP TABLE accounts_copy;

DROP TABLE accounts_copy;

DROP TABLE IF EXISTS accounts_copy;

DROP TABLE monitor;

DROP TABLE accounts;
