"""UNIQUE, FOREIGN KEY, CREATE/DROP INDEX, with PostgreSQL 15 as the oracle.

The same statements run on both servers through psycopg; every answer (rows, command tags,
SQLSTATEs, messages and DETAILs) must be PostgreSQL's. Then what the oracle cannot show: racing
inserts of one UNIQUE value store one row, and pandas ``to_sql`` / SQLAlchemy ``create_all`` with
UNIQUE, ForeignKey and Index plus an ORM session work end to end.
"""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship
from tests.targets import Target, target_for


def _p(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:6]


def _run(conn: psycopg.Connection, statements: list[str]) -> list[object]:
    out: list[object] = []
    for s in statements:
        try:
            cur = conn.execute(s)
            out.append((s, cur.fetchall() if cur.description else cur.statusmessage))
        except psycopg.Error as e:
            out.append((s, "error", e.sqlstate, e.diag.message_primary, e.diag.message_detail))
    return out


def _play(target: Target, statements: list[str], setup: list[str] = ()) -> list[object]:
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        _run(conn, list(setup))
        return _run(conn, statements)


def _same_as_postgres(request: pytest.FixtureRequest, statements: list[str]) -> list[object]:
    expected = _play(target_for(request, "postgres"), statements)
    got = _play(target_for(request, "tidegate"), statements)
    diffs = [(e, g) for e, g in zip(expected, got) if e != g]
    assert not diffs and len(expected) == len(got), "\n".join(f"postgres {e}\ntidegate {g}" for e, g in diffs)
    return expected


def _errors(out: list[object]) -> list[str]:
    return [o[2] for o in out if len(o) > 2 and o[1] == "error"]


def test_unique_column_and_table_constraints(request: pytest.FixtureRequest) -> None:
    t = _p("cu_")
    out = _same_as_postgres(request, [
        f"CREATE TABLE {t} (id int PRIMARY KEY, email text UNIQUE, a int, b int, CONSTRAINT {t}_ab UNIQUE (a, b))",
        f"INSERT INTO {t} VALUES (1, 'x@e', 1, 1), (2, 'y@e', 1, 2)",
        f"INSERT INTO {t} VALUES (3, 'x@e', 5, 5)",  # 23505 on email
        f"INSERT INTO {t} VALUES (3, 'z@e', 1, 2)",  # 23505 on (a, b)
        f"INSERT INTO {t} VALUES (3, 'q@e', 7, 7), (4, 'q@e', 8, 8)",  # duplicate within the statement
        # NULLs are distinct: many rows with a NULL in the key
        f"INSERT INTO {t} VALUES (5, NULL, NULL, 1), (6, NULL, NULL, 1), (7, NULL, 1, NULL)",
        f"INSERT INTO {t} VALUES (8, NULL, 1, NULL)",
        f"SELECT id, email, a, b FROM {t} ORDER BY id",
        f"UPDATE {t} SET email = 'x@e' WHERE id = 2",  # 23505
        f"UPDATE {t} SET email = 'w@e' WHERE id = 1",
        f"UPDATE {t} SET email = 'x@e' WHERE id = 2",  # freed by the previous update
        f"UPDATE {t} SET a = a + 10 WHERE a IS NOT NULL",  # rows move together, no clash
        f"SELECT id, email, a, b FROM {t} ORDER BY id",
        f"DELETE FROM {t} WHERE id = 1",
        f"INSERT INTO {t} VALUES (1, 'w@e', 11, 1)",
        f"SELECT id, email, a, b FROM {t} ORDER BY id",
        f"INSERT INTO {t} VALUES (9, 'w@e', 0, 0) ON CONFLICT (id) DO NOTHING",  # PK target: the UNIQUE still checked
        f"CREATE TABLE {t}_bad (a int UNIQUE, b int CONSTRAINT {t}_ab UNIQUE)",  # 42P07: index name taken
        f"SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint "
        f"WHERE conrelid = '{t}'::regclass ORDER BY conname",
        f"SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '{t}' ORDER BY indexname",
        f"SELECT constraint_name, constraint_type FROM information_schema.table_constraints "
        f"WHERE table_name = '{t}' AND constraint_type <> 'CHECK' ORDER BY constraint_name",
        f"SELECT constraint_name, column_name, ordinal_position FROM information_schema.key_column_usage "
        f"WHERE table_name = '{t}' ORDER BY constraint_name, ordinal_position",
        f"SELECT c.relname, i.indisunique, i.indisprimary, i.indnatts FROM pg_index i "
        f"JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = '{t}'::regclass ORDER BY 1",
    ])
    assert _errors(out) == ["23505", "23505", "23505", "23505", "23505", "42P07"]


def test_unique_refusals_and_on_conflict(request: pytest.FixtureRequest) -> None:
    t = _p("cr_")
    with psycopg.connect(target_for(request, "tidegate").dsn, autocommit=True) as conn:
        out = _run(conn, [
            f"CREATE TABLE {t}_n (a int UNIQUE NULLS NOT DISTINCT)",
            f"CREATE TABLE {t}_d (a int UNIQUE DEFERRABLE)",
            f"CREATE TABLE {t} (id int PRIMARY KEY, u int UNIQUE)",
            f"INSERT INTO {t} VALUES (1, 1) ON CONFLICT (u) DO NOTHING",
            f"INSERT INTO {t} VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET u = 2",
            f"CREATE INDEX ON {t} ((u + 1))",
            f"CREATE INDEX ON {t} USING gin (u)",
            f"CREATE INDEX ON {t} (u) WHERE u > 0",
            f"SELECT count(*) FROM pg_indexes WHERE tablename = '{t}'",
        ])
    assert [o[2] for o in out if o[1] == "error"] == ["0A000"] * 7
    assert "NULLS NOT DISTINCT" in out[0][3] and "DEFERRABLE" in out[1][3]
    assert out[2][1] == "CREATE TABLE" and all("ON CONFLICT" in o[3] for o in out[3:5])
    assert "expressions" in out[5][3] and "gin" in out[6][3] and "WHERE" in out[7][3]
    assert out[8][1] == [(2,)]  # the primary key's and the UNIQUE constraint's


def test_alter_table_unique_and_drop_constraint(request: pytest.FixtureRequest) -> None:
    t = _p("ca_")
    out = _same_as_postgres(request, [
        f"CREATE TABLE {t} (id int PRIMARY KEY, v int)",
        f"INSERT INTO {t} VALUES (1, 10), (2, 10), (3, NULL), (4, NULL)",
        f"ALTER TABLE {t} ADD CONSTRAINT {t}_v UNIQUE (v)",  # 23505: could not create unique index
        f"UPDATE {t} SET v = 20 WHERE id = 2",
        f"ALTER TABLE {t} ADD CONSTRAINT {t}_v UNIQUE (v)",
        f"ALTER TABLE {t} ADD CONSTRAINT {t}_v UNIQUE (v)",  # 42P07? no: 42710 / 42P07 as PostgreSQL says
        f"INSERT INTO {t} VALUES (5, 20)",
        f"ALTER TABLE {t} DROP CONSTRAINT {t}_v",
        f"INSERT INTO {t} VALUES (5, 20)",
        f"ALTER TABLE {t} DROP CONSTRAINT {t}_v",  # 42704
        f"ALTER TABLE {t} DROP CONSTRAINT IF EXISTS {t}_v",
        f"SELECT count(*) FROM pg_constraint WHERE conrelid = '{t}'::regclass",
    ])
    assert _errors(out)[0] == "23505"


def test_foreign_keys(request: pytest.FixtureRequest) -> None:
    p, c = _p("fp_"), _p("fc_")
    out = _same_as_postgres(request, [
        f"CREATE TABLE {p} (id int PRIMARY KEY, code text UNIQUE)",
        f"CREATE TABLE {c} (id int PRIMARY KEY, pid int REFERENCES {p}, pcode text, "
        f"FOREIGN KEY (pcode) REFERENCES {p} (code) ON DELETE RESTRICT)",
        f"INSERT INTO {p} VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        f"INSERT INTO {c} VALUES (10, 1, 'a'), (11, NULL, NULL), (12, 2, NULL)",
        f"INSERT INTO {c} VALUES (13, 9, NULL)",  # 23503: Key (pid)=(9) is not present
        f"INSERT INTO {c} VALUES (13, 1, 'zz')",
        f"UPDATE {c} SET pid = 7 WHERE id = 11",
        f"UPDATE {c} SET pid = 3 WHERE id = 11",
        f"DELETE FROM {p} WHERE id = 1",  # still referenced
        f"DELETE FROM {p} WHERE code = 'b'",
        f"UPDATE {p} SET id = 30 WHERE id = 3",  # referenced by row 11
        f"DELETE FROM {c} WHERE id = 11",
        f"UPDATE {p} SET id = 30 WHERE id = 3",
        f"DELETE FROM {p}",  # row 1 still referenced
        f"TRUNCATE {p}",
        f"DROP TABLE {p}",
        f"SELECT id, pid, pcode FROM {c} ORDER BY id",
        f"SELECT conname, contype, confdeltype, confupdtype, pg_get_constraintdef(oid) FROM pg_constraint "
        f"WHERE conrelid = '{c}'::regclass ORDER BY conname",
        f"SELECT constraint_name, unique_constraint_name, match_option, update_rule, delete_rule "
        f"FROM information_schema.referential_constraints WHERE constraint_name LIKE '{c}%' ORDER BY 1",
        f"CREATE TABLE {c}_x (pid int REFERENCES {p} (code))",  # 42804: incompatible types
        f"CREATE TABLE {c}_y (pid int REFERENCES {c}_nope)",  # 42P01
        f"CREATE TABLE {c}_z (v text REFERENCES {c} (pcode))",  # 42830: not unique
        f"DROP TABLE {p} CASCADE",
        f"INSERT INTO {c} VALUES (20, 99, 'nope')",
        f"SELECT count(*) FROM pg_constraint WHERE conrelid = '{c}'::regclass AND contype = 'f'",
    ])
    assert _errors(out)[:6] == ["23503"] * 6


def test_foreign_key_actions_refused(request: pytest.FixtureRequest) -> None:
    p = _p("fr_")
    with psycopg.connect(target_for(request, "tidegate").dsn, autocommit=True) as conn:
        out = _run(conn, [
            f"CREATE TABLE {p} (id int PRIMARY KEY)",
            f"CREATE TABLE {p}_c1 (pid int REFERENCES {p} ON DELETE CASCADE)",
            f"CREATE TABLE {p}_c2 (pid int REFERENCES {p} ON UPDATE SET NULL)",
            f"CREATE TABLE {p}_c3 (pid int REFERENCES {p} MATCH FULL)",
            f"SELECT count(*) FROM pg_class WHERE relname LIKE '{p}_c%'",
        ])
    assert [o[2] for o in out[1:4]] == ["0A000"] * 3
    assert ["CASCADE" in out[1][3], "SET NULL" in out[2][3], "MATCH FULL" in out[3][3]] == [True] * 3
    assert out[4][1] == [(0,)]


def test_foreign_keys_in_a_transaction(request: pytest.FixtureRequest) -> None:
    """An ORM flush: parent and child inserted in one block, children deleted before the parent."""
    p = _p("ft_")
    results = []
    for name in ("postgres", "tidegate"):
        target = target_for(request, name)
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            _run(conn, [f"CREATE TABLE {p} (id int PRIMARY KEY)",
                        f"CREATE TABLE {p}_c (id int PRIMARY KEY, pid int NOT NULL REFERENCES {p})"])
        with psycopg.connect(target.dsn) as conn:
            out = _run(conn, [f"INSERT INTO {p} VALUES (1)", f"INSERT INTO {p}_c VALUES (1, 1)",
                              f"SELECT * FROM {p}_c"])
            conn.commit()
            out += _run(conn, [f"DELETE FROM {p}_c WHERE pid = 1", f"DELETE FROM {p} WHERE id = 1"])
            conn.commit()
            out += _run(conn, [f"INSERT INTO {p}_c VALUES (2, 1)"])
            conn.rollback()
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            out += _run(conn, [f"SELECT count(*) FROM {p}", f"SELECT count(*) FROM {p}_c"])
        results.append(out)
    assert results[0] == results[1]
    assert _errors(results[1]) == ["23503"]


def test_create_and_drop_index(request: pytest.FixtureRequest) -> None:
    t = _p("ci_")
    out = _same_as_postgres(request, [
        f"CREATE TABLE {t} (id int PRIMARY KEY, a int, b text)",
        f"INSERT INTO {t} VALUES (1, 1, 'x'), (2, 1, 'y')",
        f"CREATE INDEX ix_{t}_a ON {t} (a)",
        f"CREATE INDEX ix_{t}_a ON {t} (b)",  # 42P07
        f"CREATE INDEX IF NOT EXISTS ix_{t}_a ON {t} (b)",
        f"CREATE INDEX ON {t} USING btree (b DESC, a)",
        f"CREATE UNIQUE INDEX ux_{t}_a ON {t} (a)",  # 23505: could not create unique index
        f"CREATE UNIQUE INDEX ux_{t}_b ON {t} (b)",
        f"INSERT INTO {t} VALUES (3, 2, 'x')",  # 23505 on ux_b
        f"INSERT INTO {t} VALUES (3, 2, 'z'), (4, 2, NULL), (5, 2, NULL)",
        f"CREATE TABLE ix_{t}_a (x int)",  # 42P07: the name is an index's
        f"SELECT c.relname, c.relkind, i.indisunique, pg_get_indexdef(c.oid) FROM pg_class c "
        f"JOIN pg_index i ON i.indexrelid = c.oid WHERE i.indrelid = '{t}'::regclass ORDER BY 1",
        f"SELECT relhasindex FROM pg_class WHERE oid = '{t}'::regclass",
        f"DROP INDEX {t}_pkey",  # 2BP01: the constraint requires it
        f"DROP INDEX {t}",  # 42809? PostgreSQL: "is not an index"
        f"DROP INDEX ix_{t}_a, ux_{t}_b",
        f"DROP INDEX ix_{t}_a",  # 42704
        f"DROP INDEX IF EXISTS ix_{t}_a",
        f"INSERT INTO {t} VALUES (6, 2, 'x')",
        f"SELECT indexname FROM pg_indexes WHERE tablename = '{t}' ORDER BY 1",
    ])
    assert "23505" in _errors(out) and "42P07" in _errors(out)


def test_racing_unique_inserts_store_one_row(request: pytest.FixtureRequest) -> None:
    target = target_for(request, "tidegate")
    t = _p("crace_")
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {t} (id int, u int UNIQUE)")
    barrier = threading.Barrier(4)
    outcome: list[str] = []

    def insert(i: int) -> None:
        with psycopg.connect(target.dsn) as conn:
            conn.execute(f"INSERT INTO {t} VALUES ({i}, 7)")
            barrier.wait()
            try:
                conn.commit()
                outcome.append("ok")
            except psycopg.Error as e:
                outcome.append(e.sqlstate)

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(outcome) == ["23505"] * 3 + ["ok"]
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (1,)


# -- pandas and SQLAlchemy ------------------------------------------------------------------------

def test_pandas_to_sql_and_read_sql(request: pytest.FixtureRequest) -> None:
    pd = pytest.importorskip("pandas")
    t = _p("pd_")
    frames = []
    for name in ("postgres", "tidegate"):
        engine = sa.create_engine(target_for(request, name).url)
        try:
            df = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None], "c": [1.5, 2.5, 3.5]})
            df.to_sql(t, engine)  # default index=True: an "index" column and CREATE INDEX ix_<t>_index
            df.to_sql(t, engine, if_exists="append")
            back = pd.read_sql(f"SELECT * FROM {t} ORDER BY a, \"index\"", engine)
            indexes = pd.read_sql(f"SELECT indexname, indexdef FROM pg_indexes WHERE tablename = '{t}'", engine)
            insp = sa.inspect(engine)
            frames.append((back.to_dict("list"), indexes.to_dict("list"),
                           [(i["name"], i["column_names"], i["unique"]) for i in insp.get_indexes(t)]))
            df.to_sql(t, engine, if_exists="replace", index=False)
            frames.append(pd.read_sql_table(t, engine).sort_values("a").reset_index(drop=True).to_dict("list"))
        finally:
            engine.dispose()
    half = len(frames) // 2
    assert frames[:half] == frames[half:]
    assert frames[0][1]["indexname"] == [f"ix_{t}_index"]


def test_sqlalchemy_create_all_and_orm(request: pytest.FixtureRequest) -> None:
    suffix = uuid.uuid4().hex[:6]

    class Base(DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = f"sa_author_{suffix}"
        id: Mapped[int] = mapped_column(primary_key=True)
        email: Mapped[str] = mapped_column(sa.String(80), unique=True)
        name: Mapped[str] = mapped_column(sa.String(80), index=True)
        books: Mapped[list["Book"]] = relationship(back_populates="author", cascade="all, delete-orphan")

    class Book(Base):
        __tablename__ = f"sa_book_{suffix}"
        __table_args__ = (sa.UniqueConstraint("author_id", "title"), sa.Index(f"ix_book_{suffix}_title", "title"))
        id: Mapped[int] = mapped_column(primary_key=True)
        author_id: Mapped[int] = mapped_column(sa.ForeignKey(f"sa_author_{suffix}.id"))
        title: Mapped[str] = mapped_column(sa.String(80))
        author: Mapped[Author] = relationship(back_populates="books")

    seen = []
    for name in ("postgres", "tidegate"):
        engine = sa.create_engine(target_for(request, name).url)
        try:
            Base.metadata.create_all(engine)
            with Session(engine) as session:
                a = Author(email="a@x", name="Ann", books=[Book(title="One"), Book(title="Two")])
                session.add(a)
                session.add(Author(email="b@x", name="Bob"))
                session.commit()
                ids = sorted(x.id for x in session.scalars(sa.select(Author)))
            with Session(engine) as session:
                session.add(Author(email="a@x", name="Dup"))
                with pytest.raises(sa.exc.IntegrityError) as unique_err:
                    session.commit()
            with Session(engine) as session:
                session.add(Book(author_id=999, title="Orphan"))
                with pytest.raises(sa.exc.IntegrityError) as fk_err:
                    session.commit()
            with Session(engine) as session:
                ann = session.scalars(sa.select(Author).where(Author.email == "a@x")).one()
                session.delete(ann)  # the ORM deletes the books first, then the author
                session.commit()
                left = session.execute(sa.select(sa.func.count()).select_from(Book)).scalar()
            insp = sa.inspect(engine)
            reflected = (
                sorted((u["name"], u["column_names"]) for u in insp.get_unique_constraints(Book.__tablename__)),
                sorted((f["constrained_columns"], f["referred_table"], f["referred_columns"])
                       for f in [dict(x, constrained_columns=tuple(x["constrained_columns"]),
                                      referred_columns=tuple(x["referred_columns"]))
                                 for x in insp.get_foreign_keys(Book.__tablename__)]),
                sorted((i["name"], i["column_names"], i["unique"]) for i in insp.get_indexes(Author.__tablename__)),
            )
            seen.append((ids, unique_err.value.orig.sqlstate, fk_err.value.orig.sqlstate, left, reflected))
            Base.metadata.drop_all(engine)
        finally:
            engine.dispose()
    assert seen[0] == seen[1]
    assert seen[1][1:3] == ("23505", "23503")


def test_unique_across_statements_of_one_transaction(request: pytest.FixtureRequest) -> None:
    """executemany and an explicit block: a later statement clashing with an earlier, uncommitted one."""
    t = _p("cx_")
    results = []
    for name in ("postgres", "tidegate"):
        target = target_for(request, name)
        out: list[object] = []
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {t} (id int, u text UNIQUE)")
            with conn.cursor() as cur:
                try:
                    cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(1, "a"), (2, "b"), (3, "a")])
                except psycopg.Error as e:
                    out.append((e.sqlstate, e.diag.message_primary, e.diag.message_detail))
                cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", [(1, "a"), (2, "b"), (3, None), (4, None)])
            out.append(conn.execute(f"SELECT id, u FROM {t} ORDER BY id").fetchall())
        with psycopg.connect(target.dsn) as conn:
            out += _run(conn, [f"DELETE FROM {t} WHERE u = 'a'", f"INSERT INTO {t} VALUES (5, 'a')",
                               f"INSERT INTO {t} VALUES (6, 'b')"])
            conn.rollback()
            out += _run(conn, [f"INSERT INTO {t} VALUES (7, 'c')", f"INSERT INTO {t} VALUES (8, 'c')"])
            conn.rollback()
        results.append(out)
    assert results[0] == results[1]
    assert results[1][0][0] == "23505"
