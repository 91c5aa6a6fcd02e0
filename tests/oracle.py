"""Run generated questions on PostgreSQL 15 and tidegate and judge each answer (issue 17).

A statement passes when tidegate gives PostgreSQL's answer (column names, text values and
command tag; double precision compared to 12 significant digits, since a sum's last digit depends
on the order rows are added), or the error PostgreSQL gives (same SQLSTATE), or a 0A000 refusal
whose message names one of the gaps listed in docs/UNSUPPORTED.md (the one documented place).
Everything else is a failure, classified as a *wrong answer* (rows where PostgreSQL gives other
rows or an error) or a *wrong error* (an error where PostgreSQL answers or errs differently).

The long run, against servers you started::

    python -m tests.oracle --statements 100000 --pg DSN --tidegate DSN
    python -m tests.oracle --statements 100000 --start   # starts both servers itself
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import psycopg
from psycopg import pq

from tests import sqlgen

UNSUPPORTED_DOC = Path(__file__).resolve().parent.parent / "docs" / "UNSUPPORTED.md"
_FLOAT_OIDS = {700, 701}
_NUMERIC_OID = 1700


def documented_gaps() -> list[str]:
    """The message fragments of docs/UNSUPPORTED.md: each gap's bullet starts with one in backticks."""
    gaps = re.findall(r"^- `([^`]+)`", UNSUPPORTED_DOC.read_text(), flags=re.M)
    assert gaps, f"no gaps listed in {UNSUPPORTED_DOC}"
    return gaps


@dataclass(frozen=True)
class Answer:
    error: tuple[str, str] | None = None  # (SQLSTATE, message)
    tag: str = ""
    names: tuple[str, ...] = ()
    types: tuple[int, ...] = ()
    rows: tuple[tuple[str | None, ...], ...] = ()

    def show(self) -> str:
        if self.error:
            return f"ERROR {self.error[0]}: {self.error[1]}"
        return f"{self.tag} {list(self.names)} {[list(r) for r in self.rows[:12]]}"


def ask(conn: psycopg.Connection, sql: str) -> Answer:
    res = conn.pgconn.exec_(sql.encode())
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return Answer(error=((res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode(),
                             (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode()))
    if res.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
        return Answer(error=("?????", f"status {res.status.name}"))
    return Answer(tag=(res.command_status or b"").decode(),
                  names=tuple(res.fname(i).decode() for i in range(res.nfields)),
                  types=tuple(res.ftype(i) for i in range(res.nfields)),
                  rows=tuple(tuple(None if (v := res.get_value(r, c)) is None else v.decode()
                                   for c in range(res.nfields)) for r in range(res.ntuples)))


def _close_floats(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a == b
    if math.isnan(x) or math.isinf(x):
        return a == b
    return math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-300)


def same(expected: Answer, got: Answer) -> bool:
    if expected.error or got.error:
        return bool(expected.error and got.error and expected.error[0] == got.error[0])
    if (expected.tag, expected.names) != (got.tag, got.names) or len(expected.rows) != len(got.rows):
        return False
    if expected.rows == got.rows:
        return True
    floats = [t in _FLOAT_OIDS for t in expected.types]
    if all(e == g or (f and _close_floats(e, g))
           for er, gr in zip(expected.rows, got.rows) for e, g, f in zip(er, gr, floats)):
        return True
    # Equal numbers may print differently ('2' and '2.00' keep their own scales) and then tie in an
    # ORDER BY, whose order among ties is unspecified: the same rows, ordered by equal numbers.
    numerics = [t == _NUMERIC_OID for t in expected.types]
    return any(numerics) and Counter(expected.rows) == Counter(got.rows) and all(
        e == g or (n and _same_number(e, g))
        for er, gr in zip(expected.rows, got.rows) for e, g, n in zip(er, gr, numerics))


def _same_number(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and Decimal(a) == Decimal(b)
    except InvalidOperation:
        return False


@dataclass
class Verdicts:
    total: int = 0
    exact: int = 0
    same_error: int = 0
    refused: Counter = field(default_factory=Counter)  # gap -> count
    wrong_answers: list[str] = field(default_factory=list)
    wrong_errors: list[str] = field(default_factory=list)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # (zone, sql) -> the difference

    def summary(self) -> str:
        return (f"{self.total} statements: {self.exact} answered as PostgreSQL, {self.same_error} with "
                f"PostgreSQL's error, {sum(self.refused.values())} refused as documented gaps, "
                f"{len(self.wrong_answers)} wrong answers, {len(self.wrong_errors)} wrong errors")


class Oracle:
    """``clients`` connection pairs per session time zone, with the generated tables created on both."""

    def __init__(self, pg_dsn: str, tg_dsn: str, clients: int = 2):
        self.gaps = documented_gaps()
        self.pairs: dict[str, list[tuple[psycopg.Connection, psycopg.Connection]]] = {}
        for zone in sqlgen.ZONES:
            self.pairs[zone] = []
            for _ in range(clients):
                pair = (psycopg.connect(pg_dsn, autocommit=True), psycopg.connect(tg_dsn, autocommit=True))
                for conn in pair:
                    conn.execute(f"SET TIME ZONE '{zone}'")
                    conn.execute("SET statement_timeout = '60s'")  # a statement that hangs fails, 57014
                self.pairs[zone].append(pair)
        setup = sqlgen.setup_statements()
        for conn in self.pairs[sqlgen.ZONES[0]][0]:
            for stmt in setup:
                conn.execute(stmt)

    def close(self) -> None:
        for pairs in self.pairs.values():
            for pair in pairs:
                for conn in pair:
                    conn.close()

    def judge(self, questions: list[sqlgen.Question], verdicts: Verdicts | None = None) -> Verdicts:
        """Each zone's questions on that zone's connections, every connection pair in a thread of
        its own: tidegate runs their statements concurrently, as it would for as many clients."""
        v = verdicts or Verdicts()
        lock = threading.Lock()
        threads = []
        for zone, pairs in self.pairs.items():
            mine = [q for q in questions if q.zone == zone]
            for k, pair in enumerate(pairs):
                threads.append(threading.Thread(target=self._judge_on, args=(pair, mine[k::len(pairs)], v, lock)))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return v

    def _judge_on(self, pair: tuple[psycopg.Connection, psycopg.Connection], questions: list[sqlgen.Question],
                  v: Verdicts, lock: threading.Lock) -> None:
        pg, tg = pair
        for q in questions:
            expected, got = ask(pg, q.sql), ask(tg, q.sql)
            with lock:
                self._record(q, expected, got, v)

    def _record(self, q: sqlgen.Question, expected: Answer, got: Answer, v: Verdicts) -> None:
        v.total += 1
        if same(expected, got):
            if expected.error:
                v.same_error += 1
            else:
                v.exact += 1
            return
        if got.error and got.error[0] == "0A000":
            gap = next((g for g in self.gaps if g in got.error[1]), None)
            if gap is not None:
                v.refused[gap] += 1
                return
        line = f"[{q.zone}] {q.sql}\n    postgres: {expected.show()}\n    tidegate: {got.show()}"
        (v.wrong_errors if got.error else v.wrong_answers).append(line)
        v.failed[(q.zone, q.sql)] = line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--statements", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--pg", help="PostgreSQL 15 DSN")
    ap.add_argument("--tidegate", help="tidegate DSN")
    ap.add_argument("--start", action="store_true", help="start a PostgreSQL and a tidegate of its own")
    ap.add_argument("--show", type=int, default=30, help="failures to print")
    args = ap.parse_args(argv)
    stop = []
    if args.start:
        import tempfile

        from tests.pgoracle import start_postgres
        from tests.tidegate_server import start_tidegate
        pg = start_postgres()
        tg = start_tidegate(Path(tempfile.mkdtemp(prefix="oracle-tg-")))
        tg.wait_for_spark()
        stop = [pg.stop, tg.stop]
        args.pg, args.tidegate = pg.dsn, tg.dsn
    if not (args.pg and args.tidegate):
        ap.error("give --pg and --tidegate, or --start")
    try:
        oracle = Oracle(args.pg, args.tidegate)
        rng_seed, verdicts, started = args.seed, Verdicts(), time.monotonic()
        while verdicts.total < args.statements:
            # Each round: the whole catalogue (new argument combinations) and as many random queries.
            batch = sqlgen.questions(rng_seed, per_signature=4, random_count=2000)
            oracle.judge(batch[: args.statements - verdicts.total], verdicts)
            rng_seed += 1
            print(f"{verdicts.summary()} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        for line in (verdicts.wrong_answers + verdicts.wrong_errors)[: args.show]:
            print(line)
        print(f"seed {args.seed}: {verdicts.summary()}")
        for gap, count in verdicts.refused.most_common():
            print(f"  refused {count:6d}  {gap}")
        oracle.close()
        return 1 if verdicts.wrong_answers or verdicts.wrong_errors else 0
    finally:
        for fn in stop:
            fn()


if __name__ == "__main__":
    sys.exit(main())
