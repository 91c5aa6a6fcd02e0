CREATE TABLE all_types (
    b BOOLEAN, i2 SMALLINT, i4 INTEGER, i8 BIGINT, f4 REAL, f8 DOUBLE PRECISION, n NUMERIC(10, 3),
    t TEXT, vc VARCHAR(5), c CHAR(3), by BYTEA, d DATE, tm TIME, ts TIMESTAMP, tstz TIMESTAMPTZ,
    iv INTERVAL, j JSON, jb JSONB, u UUID, ai INT[], at TEXT[]
);

INSERT INTO all_types VALUES (
    true, 32767, -2147483648, 9223372036854775807, 1.5, 0.1, 1234567.891,
    'hello', 'abc', 'x', '\xdeadbeef', '2024-02-29', '13:45:30.5', '2024-02-29 13:45:30.123456',
    '2024-02-29 13:45:30+00', '1 day 02:00:00', '{"a": 1}', '{"b": [1, 2]}',
    'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,2,NULL}', '{"x y",z}'
);

INSERT INTO all_types (b) VALUES (NULL);

SELECT * FROM all_types ORDER BY b;

INSERT INTO all_types (vc) VALUES ('toolong');

INSERT INTO all_types (i4) VALUES ('abc');

SELECT i4 + 1, f8 * 2, n / 2, vc || '!', length(c), d + 1, ts + interval '1 hour' FROM all_types WHERE b;

DROP TABLE all_types;
