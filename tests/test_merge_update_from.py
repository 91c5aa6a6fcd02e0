"""MERGE (PostgreSQL 15), UPDATE ... FROM and DELETE ... USING, against PostgreSQL 15.

dbt's incremental ``merge`` strategy sends MERGE and its snapshots send UPDATE ... FROM; both are
ordinary PostgreSQL. Each script runs statement by statement on tidegate and on the oracle: every
statement must end the same way (the same rows, command tag, or SQLSTATE).
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from tests.targets import Target, target_for

SCHEMA = [
    "DROP TABLE IF EXISTS mu_t", "DROP TABLE IF EXISTS mu_s", "DROP TABLE IF EXISTS mu_k",
    "DROP TABLE IF EXISTS mu_ts",
    "CREATE TABLE mu_t (id int PRIMARY KEY, v text NOT NULL, n int DEFAULT 7)",
    "CREATE TABLE mu_s (id int, v text, op text)",
    "CREATE TABLE mu_k (a int, b text)",
    "INSERT INTO mu_t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'd', 4)",
    "INSERT INTO mu_s VALUES (1, 'A', 'upd'), (2, 'B', 'del'), (3, 'C', 'keep'), (5, 'E', 'ins'),"
    " (6, NULL, 'ins'), (7, 'G', 'skip')",
    "INSERT INTO mu_k VALUES (1, 'x'), (1, 'x'), (2, 'y'), (NULL, 'n')",
]

SCRIPTS = {
    "merge_all_actions": [
        """MERGE INTO mu_t t USING mu_s s ON t.id = s.id
             WHEN MATCHED AND s.op = 'del' THEN DELETE
             WHEN MATCHED AND s.op = 'upd' THEN UPDATE SET v = s.v, n = t.n + 100
             WHEN MATCHED THEN DO NOTHING
             WHEN NOT MATCHED AND s.op = 'skip' THEN DO NOTHING
             WHEN NOT MATCHED AND s.v IS NOT NULL THEN INSERT (id, v) VALUES (s.id, s.v)
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, 'dflt', DEFAULT)""",
        "SELECT * FROM mu_t ORDER BY id",
    ],
    "merge_errors_leave_nothing": [
        "MERGE INTO mu_t t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = 0",
        "MERGE INTO mu_t t USING (SELECT 1 AS id UNION ALL SELECT 1) s ON t.id = s.id WHEN MATCHED THEN DO NOTHING",
        "MERGE INTO mu_t t USING (SELECT 10 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
        "MERGE INTO mu_t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 3",
        "MERGE INTO mu_t t USING (VALUES (2), (20)) s(id) ON t.id = s.id"
        " WHEN MATCHED THEN UPDATE SET v = 'ok' WHEN NOT MATCHED THEN INSERT VALUES (4, 'dup')",
        "MERGE INTO mu_t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1",
        "SELECT * FROM mu_t ORDER BY id",
    ],
    "merge_moves_and_frees_keys": [
        "MERGE INTO mu_t t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 99, v = 'moved'",
        "MERGE INTO mu_t t USING (VALUES (2, 'x'), (8, 'y')) s(id, v) ON t.id = s.id"
        " WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, length(s.v))",
        "SELECT * FROM mu_t ORDER BY id",
    ],
    "merge_in_a_block_rolls_back": [
        "BEGIN",
        "MERGE INTO mu_t t USING (SELECT 4 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE",
        "INSERT INTO mu_t VALUES (40, 'in block')",
        "MERGE INTO mu_t t USING (SELECT 40 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = -1",
        "SELECT * FROM mu_t ORDER BY id",
        "ROLLBACK",
        "SELECT * FROM mu_t ORDER BY id",
    ],
    "merge_keyless_target": [
        "MERGE INTO mu_k k USING (VALUES (1, 'X'), (3, 'Z')) s(a, b) ON k.a = s.a"
        " WHEN MATCHED THEN UPDATE SET b = s.b WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b)",
        "SELECT * FROM mu_k ORDER BY a, b",
        "MERGE INTO mu_k k USING (VALUES (2)) s(a) ON k.a = s.a WHEN MATCHED THEN DELETE",
        "SELECT * FROM mu_k ORDER BY a, b",
    ],
    "update_from": [
        "UPDATE mu_t SET v = s.v, n = mu_t.n * 10 FROM mu_s s WHERE mu_t.id = s.id AND s.op <> 'keep'",
        "SELECT * FROM mu_t ORDER BY id",
        "UPDATE mu_t t SET v = t.v || '!' FROM mu_s s JOIN mu_k k ON k.a = s.id WHERE t.id = s.id",
        "SELECT * FROM mu_t ORDER BY id",
        "UPDATE mu_k SET b = upper(s.v) FROM mu_s s WHERE mu_k.a = s.id",
        "SELECT * FROM mu_k ORDER BY a, b",
        "UPDATE mu_t SET v = NULL FROM mu_s s WHERE mu_t.id = s.id",
        "UPDATE mu_t SET id = 1 FROM mu_s s WHERE mu_t.id = s.id AND s.id = 2",
        "UPDATE mu_t SET v = 'none' FROM mu_s s WHERE mu_t.id = s.id AND s.op = 'nothing'",
        "SELECT * FROM mu_t ORDER BY id",
    ],
    "names_as_dbt_writes_them": [
        # dbt's merge strategy: upper-case unquoted aliases (folded like any name), a schema-qualified
        # target, and bare column names in INSERT VALUES (only the source is in scope there).
        """merge into "public"."mu_t" as DBT_INTERNAL_DEST using mu_s as DBT_INTERNAL_SOURCE
             on ((DBT_INTERNAL_SOURCE.id = DBT_INTERNAL_DEST.id))
             when matched and DBT_INTERNAL_SOURCE."v" is not null then update set
               "id" = DBT_INTERNAL_SOURCE."id", "v" = DBT_INTERNAL_SOURCE."v"
             when not matched and v is not null then insert ("id", "v") values ("id", "v")""",
        "SELECT * FROM mu_t ORDER BY id",
        # dbt's snapshots: the target's columns named through its schema-qualified name
        """update "public"."mu_t" set n = S.id * 2 from mu_s as S
             where S.id::text = "public"."mu_t".id::text and "public"."mu_t".n is not null""",
        "UPDATE public.mu_t SET v = 'q' WHERE public.mu_t.id = 3",
        "DELETE FROM public.mu_t WHERE public.mu_t.v = 'G'",
        "SELECT * FROM mu_t ORDER BY id",
        "UPDATE public.mu_t AS x SET v = 'r' WHERE public.mu_t.id = 3",
        "MERGE INTO mu_t t USING mu_s s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (id, t.v)",
    ],
    "delete_using": [
        "DELETE FROM mu_t USING mu_s s WHERE mu_t.id = s.id AND s.v = 'Z'",
        "DELETE FROM mu_t t USING mu_s s, mu_k k WHERE t.id = s.id AND k.a = s.id",
        "SELECT * FROM mu_t ORDER BY id",
        "DELETE FROM mu_k USING mu_s WHERE mu_k.a = mu_s.id",
        "SELECT * FROM mu_k ORDER BY a, b",
    ],
}


@pytest.fixture(scope="module")
def servers(request) -> dict[str, Target]:
    return {name: target_for(request, name) for name in ("postgres", "tidegate")}


def _outcomes(target: Target, script: list[str]) -> list[tuple]:
    out = []
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SCHEMA:
            conn.execute(stmt)
        for stmt in script:
            try:
                cur = conn.execute(stmt)
                rows = cur.fetchall() if cur.description else None
                out.append(("ok", cur.statusmessage, rows))
            except psycopg.Error as e:
                out.append(("error", e.sqlstate))
                if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                    conn.execute("ROLLBACK")
    return out


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_matches_postgres(servers, name):
    want = _outcomes(servers["postgres"], SCRIPTS[name])
    got = _outcomes(servers["tidegate"], SCRIPTS[name])
    for stmt, g, w in zip(SCRIPTS[name], got, want):
        assert g == w, stmt
    changes = [o for o in want if o[0] == "ok" and o[1].startswith(("MERGE", "UPDATE", "DELETE"))
               and not o[1].endswith(" 0")]
    errors = [o for o in want if o[0] == "error"]
    assert changes or len(errors) >= 3, "the script changes rows (or fails in several ways) on PostgreSQL"


def test_merge_refusals(servers):
    """PostgreSQL 17's MERGE additions are refused with 0A000, and RETURNING after a join too."""
    with psycopg.connect(servers["tidegate"].dsn, autocommit=True) as conn:
        for stmt in SCHEMA:
            conn.execute(stmt)
        for sql in ["MERGE INTO mu_t t USING mu_s s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE",
                    "UPDATE mu_t SET v = s.v FROM mu_s s WHERE mu_t.id = s.id RETURNING *",
                    "DELETE FROM mu_t USING mu_s s WHERE mu_t.id = s.id RETURNING mu_t.id"]:
            with pytest.raises(psycopg.errors.FeatureNotSupported):
                conn.execute(sql)
        assert conn.execute("SELECT count(*), sum(n) FROM mu_t").fetchone() == (4, 10)


def test_concurrent_merges_insert_one_key_once(servers):
    """Two sessions MERGE the same new key at once: the second waits for the first's commit and
    then finds the key (no insert) or fails with 23505; the key is held by exactly one row, the
    first session's."""
    target = servers["tidegate"]
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SCHEMA:
            conn.execute(stmt)
    merge = ("MERGE INTO mu_t t USING (SELECT 50 AS id) s ON t.id = s.id"
             " WHEN NOT MATCHED THEN INSERT VALUES (s.id, %s)")
    first_merged = threading.Event()
    outcomes: dict[str, str] = {}

    def first() -> None:
        with psycopg.connect(target.dsn) as conn:
            outcomes["first"] = conn.execute(merge, ["first"]).statusmessage
            first_merged.set()
            time.sleep(1.5)  # the second session's MERGE runs meanwhile
            conn.commit()

    def second() -> None:
        first_merged.wait(60)
        with psycopg.connect(target.dsn) as conn:
            try:
                outcomes["second"] = conn.execute(merge, ["second"]).statusmessage
                conn.commit()
            except psycopg.errors.UniqueViolation:
                outcomes["second"] = "23505"

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert outcomes["first"] == "MERGE 1"
    assert outcomes["second"] in ("MERGE 0", "23505")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT v FROM mu_t WHERE id = 50").fetchall() == [("first",)]


def test_merge_needs_the_privileges_of_its_actions(servers):
    target = servers["tidegate"]
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        for stmt in SCHEMA:
            conn.execute(stmt)
        conn.execute("DROP ROLE IF EXISTS mu_reader")
        conn.execute("CREATE ROLE mu_reader LOGIN")
        conn.execute("GRANT SELECT, INSERT ON mu_t, mu_s TO mu_reader")
    with psycopg.connect(target.dsn.replace("user=tidegate", "user=mu_reader"), autocommit=True) as conn:
        conn.execute("MERGE INTO mu_t t USING mu_s s ON t.id = s.id WHEN NOT MATCHED AND s.v IS NOT NULL"
                     " THEN INSERT (id, v) VALUES (s.id, s.v)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("MERGE INTO mu_t t USING mu_s s ON t.id = s.id WHEN MATCHED THEN DELETE")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE mu_t SET v = s.v FROM mu_s s WHERE mu_t.id = s.id")
        assert conn.execute("SELECT count(*) FROM mu_t").fetchone() == (6,)
