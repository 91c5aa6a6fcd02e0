SELECT * FROM no_such_table;

CREATE TABLE err_t (id INT PRIMARY KEY, v TEXT NOT NULL);

SELECT nope FROM err_t;

SELECT * FROM err_t WHERE;

SELECT no_such_function(1);

SELECT 1 / 0;

SELECT 'abc'::int;

INSERT INTO err_t VALUES (1, 'a'), (1, 'b');

SELECT count(*) FROM err_t;

INSERT INTO err_t VALUES (2, NULL);

INSERT INTO err_t (id, nope) VALUES (3, 'x');

CREATE TABLE err_t (x INT);

DROP TABLE err_t;
