CREATE SCHEMA sales;

CREATE SCHEMA sales;

CREATE SCHEMA IF NOT EXISTS sales;

CREATE TABLE sales.orders (id INT PRIMARY KEY, amount NUMERIC(10, 2), region TEXT);

INSERT INTO sales.orders VALUES (1, 10.50, 'eu'), (2, 20.25, 'us'), (3, 5.00, 'eu');

CREATE VIEW sales.eu_orders AS SELECT id, amount FROM sales.orders WHERE region = 'eu';

SELECT * FROM sales.eu_orders ORDER BY id;

DROP SCHEMA sales;

DROP VIEW sales.eu_orders;

COMMENT ON TABLE sales.orders IS 'all orders';

SELECT obj_description('sales.orders'::regclass, 'pg_class');

DROP SCHEMA sales CASCADE;

SELECT * FROM sales.orders;
