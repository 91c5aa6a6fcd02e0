CREATE TABLE durable (id INT PRIMARY KEY, v TEXT);

INSERT INTO durable VALUES (1, 'one'), (2, 'two');

UPDATE durable SET v = 'TWO' WHERE id = 2;

-- SQLNESS ARG restart=true
SELECT * FROM durable ORDER BY id;

INSERT INTO durable VALUES (3, 'three');

SELECT count(*) FROM durable;

DROP TABLE durable;
