-- Constant queries answered without touching any table.
SELECT 1;

SELECT 1 AS one, 'two' AS two, NULL AS three;

SELECT 1 + 2 AS sum, 'a' || 'b' AS concat;
