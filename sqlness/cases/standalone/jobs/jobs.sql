-- Jobs (issue 20): SUBMIT JOB returns at once; WAIT, FETCH and CANCEL JOB name a job by id or by
-- the caller's most recent job of that name.
CREATE TABLE sq_job_src (id int PRIMARY KEY, v text, amount numeric(8,2));

INSERT INTO sq_job_src VALUES (1, 'a', 1.50), (2, 'b', NULL), (3, 'c', 2.25);

-- SQLNESS REPLACE job-\d{6} job-<id>
SUBMIT JOB sq_job_query AS SELECT id, upper(v) AS v, amount * 2 AS twice FROM sq_job_src ORDER BY id;

-- SQLNESS REPLACE job-\d{6} job-<id>
-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(\.\d+)?\+00 <time>
-- SQLNESS REPLACE 127\.0\.0\.1:\d+ <gateway>
-- SQLNESS REPLACE -{2,} --
-- SQLNESS REPLACE (\x20)\x20+ \1
WAIT JOB 'sq_job_query' TIMEOUT '60 s';

FETCH JOB 'sq_job_query';

SELECT job_name, statement, status, submitted_by, rows, error_code, timeout, attempts FROM information_schema.jobs WHERE job_name = 'sq_job_query';

-- SQLNESS REPLACE job-\d{6} job-<id>
SUBMIT JOB sq_job_insert WITH (timeout = '10 min') AS INSERT INTO sq_job_src SELECT id + 10, v, amount FROM sq_job_src;

-- SQLNESS REPLACE job-\d{6} job-<id>
-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(\.\d+)?\+00 <time>
-- SQLNESS REPLACE 127\.0\.0\.1:\d+ <gateway>
-- SQLNESS REPLACE -{2,} --
-- SQLNESS REPLACE (\x20)\x20+ \1
WAIT JOB 'sq_job_insert';

FETCH JOB 'sq_job_insert';

SELECT count(*) FROM sq_job_src;

-- a failed job: FETCH gives its own error
-- SQLNESS REPLACE job-\d{6} job-<id>
SUBMIT JOB sq_job_fails AS SELECT id / 0 FROM sq_job_src;

-- SQLNESS REPLACE job-\d{6} job-<id>
-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(\.\d+)?\+00 <time>
-- SQLNESS REPLACE 127\.0\.0\.1:\d+ <gateway>
-- SQLNESS REPLACE -{2,} --
-- SQLNESS REPLACE (\x20)\x20+ \1
WAIT JOB 'sq_job_fails';

FETCH JOB 'sq_job_fails';

-- what a job may not run
SUBMIT JOB AS SET search_path = public;

SUBMIT JOB AS BEGIN;

SUBMIT JOB AS COPY sq_job_src TO STDOUT;

SUBMIT JOB AS SUBMIT JOB AS SELECT 1;

SUBMIT JOB WITH (priority = 'high') AS SELECT 1;

SUBMIT JOB WITH (timeout = 'later') AS SELECT 1;

SUBMIT JOB sq_job_broken SELECT 1;

FETCH JOB 'sq_job_nothing';

CANCEL JOB 'sq_job_nothing';

WAIT JOB 'sq_job_query' TIMEOUT 'never';

BEGIN;

SUBMIT JOB AS SELECT 1;

ROLLBACK;

-- SQLNESS REPLACE job-\d{6} job-<id>
-- SQLNESS REPLACE \d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(\.\d+)?\+00 <time>
-- SQLNESS REPLACE 127\.0\.0\.1:\d+ <gateway>
-- SQLNESS REPLACE -{2,} --
-- SQLNESS REPLACE (\x20)\x20+ \1
CANCEL JOB 'sq_job_insert';

DROP TABLE sq_job_src;
