-- Constants, NULL and an empty column set.
SELECT 1;

SELECT 1 AS id, 'a' AS name
UNION ALL
SELECT 2, NULL;

-- SQLNESS PROTOCOL POSTGRES
SELECT;

SELECT 'multi
line' AS txt, E'tab\there' AS esc;
