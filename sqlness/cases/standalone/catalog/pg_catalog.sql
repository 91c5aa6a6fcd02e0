CREATE TABLE cat_t (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, score NUMERIC(5, 2));

SELECT column_name, data_type, is_nullable, ordinal_position FROM information_schema.columns WHERE table_name = 'cat_t' ORDER BY ordinal_position;

SELECT schema_name FROM information_schema.schemata ORDER BY schema_name;

SELECT c.relname, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relname = 'cat_t';

SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a WHERE a.attrelid = 'cat_t'::regclass AND a.attnum > 0 ORDER BY a.attnum;

SELECT current_database(), current_schema(), current_user;

SHOW search_path;

SET search_path TO public;

SHOW search_path;

SELECT current_setting('search_path');

DROP TABLE cat_t;
