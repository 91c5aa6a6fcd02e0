CREATE TABLE emp (id INT PRIMARY KEY, name TEXT, dept TEXT, salary INT, hired DATE, boss INT);

INSERT INTO emp VALUES
    (1, 'ann', 'eng', 120, '2020-01-15', NULL),
    (2, 'bob', 'eng', 100, '2021-03-01', 1),
    (3, 'cid', 'ops', 90, '2019-07-30', 1),
    (4, 'dee', 'ops', NULL, '2022-11-11', 3),
    (5, 'eve', 'sales', 80, '2023-05-05', 1);

SELECT dept, count(*), sum(salary), avg(salary), min(salary), max(salary) FROM emp GROUP BY dept ORDER BY dept;

SELECT dept, count(salary) FROM emp GROUP BY dept HAVING count(*) > 1 ORDER BY 1;

SELECT name, salary FROM emp ORDER BY salary;

SELECT name, salary FROM emp ORDER BY salary DESC LIMIT 2 OFFSET 1;

SELECT e.name, b.name AS boss FROM emp e LEFT JOIN emp b ON e.boss = b.id ORDER BY e.id;

SELECT name, rank() OVER (PARTITION BY dept ORDER BY salary DESC NULLS LAST) AS r FROM emp ORDER BY dept, r;

SELECT name, sum(salary) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM emp ORDER BY id;

WITH top AS (SELECT * FROM emp WHERE salary >= 100) SELECT name FROM top ORDER BY name;

WITH RECURSIVE chain(id, depth) AS (SELECT id, 0 FROM emp WHERE boss IS NULL UNION ALL SELECT e.id, c.depth + 1 FROM emp e JOIN chain c ON e.boss = c.id) SELECT id, depth FROM chain ORDER BY id;

SELECT name FROM emp WHERE salary > (SELECT avg(salary) FROM emp) ORDER BY name;

SELECT name FROM emp WHERE id IN (SELECT boss FROM emp) ORDER BY name;

SELECT dept FROM emp WHERE id < 3 UNION SELECT dept FROM emp WHERE id > 3 ORDER BY 1;

SELECT dept FROM emp INTERSECT SELECT 'ops' ORDER BY 1;

SELECT name, CASE WHEN salary >= 100 THEN 'high' WHEN salary IS NULL THEN 'unknown' ELSE 'low' END AS band FROM emp ORDER BY id;

SELECT 7 / 2, 7 % 3, -7 / 2, 7.0 / 2, 1 / 3.0;

SELECT 'a' || NULL, concat('a', NULL, 'b'), upper(name), length(name), substring(name from 2 for 1) FROM emp WHERE id = 1;

SELECT date_trunc('month', hired), extract(year from hired), hired + 30 FROM emp WHERE id = 2;

SELECT count(*) FROM generate_series(1, 100);

SELECT date_bin(interval '15 minutes', timestamp '2024-01-01 10:37:12', timestamp '2024-01-01 00:00:00');

SELECT timestamp '2024-01-01 10:00:00' + interval '1 day 2 hours', timestamp '2024-01-02' - timestamp '2024-01-01 12:00';

SELECT '42'::int + 1, 3.7::int, CAST('2024-01-01' AS date), 10::text;

SELECT DISTINCT dept FROM emp ORDER BY dept;

SELECT coalesce(salary, -1), nullif(dept, 'eng') FROM emp ORDER BY id;

-- SQLNESS REPLACE \[file:\S+\] [FILE]
-- SQLNESS REPLACE #\d+L? #N
-- SQLNESS REPLACE plan_id=\d+ plan_id=N
-- SQLNESS REPLACE -{2,} --
-- SQLNESS REPLACE (\x20)\x20+ \1
EXPLAIN SELECT count(*) FROM emp;

DROP TABLE emp;
