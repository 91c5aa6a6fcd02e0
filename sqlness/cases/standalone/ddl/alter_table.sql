CREATE TABLE people (id INT PRIMARY KEY, name TEXT);

INSERT INTO people VALUES (1, 'ada'), (2, 'grace');

ALTER TABLE people ADD COLUMN age INT;

SELECT * FROM people ORDER BY id;

ALTER TABLE people RENAME COLUMN name TO full_name;

SELECT id, full_name FROM people ORDER BY id;

ALTER TABLE people DROP COLUMN age;

SELECT * FROM people ORDER BY id;

ALTER TABLE people RENAME TO persons;

SELECT * FROM people;

SELECT count(*) FROM persons;

ALTER TABLE persons ADD COLUMN id INT;

ALTER TABLE persons DROP COLUMN nope;

TRUNCATE persons;

SELECT count(*) FROM persons;

DROP TABLE persons;
