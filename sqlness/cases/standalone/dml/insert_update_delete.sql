CREATE TABLE items (id INT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(8, 2), qty INT DEFAULT 1);

INSERT INTO items (id, name, price) VALUES (1, 'apple', 0.50), (2, 'pear', 0.75), (3, 'plum', 1.20);

INSERT INTO items VALUES (1, 'dup', 9.99, 1);

INSERT INTO items (id, name) VALUES (4, NULL);

INSERT INTO items VALUES (1, 'apple', 0.55, 2) ON CONFLICT (id) DO UPDATE SET price = EXCLUDED.price, qty = EXCLUDED.qty;

INSERT INTO items VALUES (2, 'ignored', 0, 0) ON CONFLICT DO NOTHING;

SELECT * FROM items ORDER BY id;

UPDATE items SET price = price * 2 WHERE id >= 2;

UPDATE items SET qty = qty + 1 WHERE name = 'apple' RETURNING id, qty;

DELETE FROM items WHERE price > 2;

DELETE FROM items WHERE id = 1 RETURNING *;

SELECT * FROM items ORDER BY id;

INSERT INTO items SELECT id + 10, name || '-copy', price, qty FROM items;

SELECT id, name FROM items ORDER BY id;

DROP TABLE items;
