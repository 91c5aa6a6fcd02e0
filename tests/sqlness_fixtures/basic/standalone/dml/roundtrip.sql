CREATE TABLE fx_roundtrip (
    id INT PRIMARY KEY,
    name TEXT,
    score DOUBLE PRECISION,
    at TIMESTAMPTZ
);

INSERT INTO fx_roundtrip VALUES
    (1, 'ann', 1.5, '2024-01-01 10:00:00+02'),
    (2, NULL, 0.1, NULL);

-- rows come back as the server's text
SELECT * FROM fx_roundtrip ORDER BY id;

SELECT * FROM fx_roundtrip WHERE id > 5;

UPDATE fx_roundtrip SET score = score * 2;

SELECT * FROM fx_missing;

DROP TABLE fx_roundtrip;
