CREATE TABLE acp (a STRING, b INT, ts TIMESTAMP TIME INDEX, PRIMARY KEY(a));

INSERT INTO acp VALUES ('r1', 1, '2024-01-01');

ALTER TABLE acp ADD COLUMN c INT DEFAULT 200 AFTER b;

ALTER TABLE acp ADD COLUMN d INT FIRST;

ALTER TABLE acp ADD COLUMN e INT AFTER nope;

-- positional INSERT follows the new order
INSERT INTO acp VALUES (7, 'r2', 2, 300, '2024-01-02');

SELECT * FROM acp ORDER BY a;

SELECT column_name, ordinal_position FROM information_schema.columns WHERE table_name = 'acp' ORDER BY ordinal_position;

SHOW CREATE TABLE acp;

COPY (SELECT * FROM acp ORDER BY a) TO STDOUT;

ALTER TABLE acp DROP COLUMN b;

SELECT * FROM acp ORDER BY a;

DROP TABLE acp;
