-- The events table tidegate_private.events (issue 19): what happened to the server, as rows.
SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_schema = 'tidegate_private' AND table_name = 'events' ORDER BY ordinal_position;

SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema = 'tidegate_private';

SHOW CREATE TABLE tidegate_private.events;

CREATE TABLE sq_events_t (id int PRIMARY KEY, v text);

ALTER TABLE sq_events_t ADD COLUMN w int;

COMMENT ON TABLE sq_events_t IS 'watched';

DROP TABLE sq_events_t;

-- a failed statement records nothing
DROP TABLE sq_events_t;

-- events are committed in batches (every second by default)
-- SQLNESS SLEEP 3s
-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d\+00 YYYY-MM-DD HH:MM:SS+00
SELECT date_trunc('second', "timestamp") AS "timestamp", type, object, username, payload->>'command' AS command, payload->>'statement' AS statement FROM tidegate_private.events WHERE object = 'public.sq_events_t' ORDER BY event_id;

SELECT count(*) > 0 AS started, bool_and(payload->>'version' IS NOT NULL) AS with_version FROM tidegate_private.events WHERE type = 'gateway.started';

SELECT count(*) AS duplicates FROM (SELECT event_id FROM tidegate_private.events GROUP BY event_id HAVING count(*) > 1) d;

-- the recorder writes; clients only read
INSERT INTO tidegate_private.events ("timestamp", event_id, type) VALUES (now(), 0, 'forged');

UPDATE tidegate_private.events SET type = 'forged';

DELETE FROM tidegate_private.events;

TRUNCATE tidegate_private.events;

ALTER TABLE tidegate_private.events ADD COLUMN note text;

DROP TABLE tidegate_private.events;

DROP SCHEMA tidegate_private CASCADE;

CREATE TABLE tidegate_private.mine (x int);

SELECT count(*) FROM tidegate_private.events WHERE type = 'forged';
