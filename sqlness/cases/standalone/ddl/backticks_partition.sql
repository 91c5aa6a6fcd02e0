CREATE TABLE `bt_Logs` (`log` STRING, `Host` STRING, ts TIMESTAMP TIME INDEX, PRIMARY KEY(`Host`));

INSERT INTO `bt_Logs` (`log`, `Host`, ts) VALUES ('`kept`', 'h1', '2024-01-01');

SELECT `log`, "Host", ts FROM "bt_Logs" WHERE `Host` = 'h1';

SELECT column_name FROM information_schema.columns WHERE table_name = 'bt_Logs' ORDER BY ordinal_position;

SHOW CREATE TABLE `bt_Logs`;

SELECT `unterminated FROM x;

DROP TABLE `bt_Logs`;

CREATE TABLE bt_part (c INT, ts TIMESTAMP TIME INDEX) PARTITION ON COLUMNS (c) (c < 3, c >= 3);
