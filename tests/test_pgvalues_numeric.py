"""PostgreSQL's per-value numeric scale rules (tidegate/pgvalues.py) against PostgreSQL 15 itself.

A quotient, square root, logarithm or integer power of numeric values has a display scale
PostgreSQL picks from the operands' leading base-10000 digits; the wire codec recomputes such
results from their exact operands with these functions. Generated operands (integers and
fractions of many magnitudes and scales, NBASE boundaries such as 9999 / 10000 / 20000, zero),
each result compared as text with what PostgreSQL prints.
"""

from __future__ import annotations

import random
from decimal import Decimal

import psycopg
import pytest

from tidegate import pgvalues as pv
from tidegate.errors import SqlError

CASES = 1500


def _operand(rnd: random.Random) -> Decimal:
    k = rnd.random()
    if k < 0.15:
        return Decimal(rnd.choice([0, 1, 2, 5, 10, 9999, 10000, 20000, 99999999, -1, -10000]))
    bound = 10 ** rnd.randint(1, 20)
    return Decimal(rnd.randint(-bound, bound)).scaleb(-rnd.randint(0, 14))


def _scale(d: Decimal) -> int:
    return max(-d.as_tuple().exponent, 0)


def _questions(seed: int) -> list[tuple[str, object]]:
    """(PostgreSQL query, thunk computing tidegate's text) pairs."""
    rnd = random.Random(seed)
    out: list[tuple[str, object]] = []
    while len(out) < CASES:
        a, b = _operand(rnd), _operand(rnd)
        op = rnd.choice(["div", "sqrt", "ln", "log", "logb", "power", "power_fraction"])
        if op == "div" and b:
            out.append((f"SELECT ({a})::numeric / ({b})::numeric",
                        lambda a=a, b=b: pv.numeric_div(a, b, max(_scale(a), _scale(b)))))
        elif op == "sqrt":
            a = abs(a)
            out.append((f"SELECT sqrt(({a})::numeric)", lambda a=a: pv.numeric_sqrt(a, _scale(a))))
        elif op == "ln" and a:
            a = abs(a)
            out.append((f"SELECT ln(({a})::numeric)", lambda a=a: pv.numeric_ln(a, _scale(a))))
        elif op == "log" and a:
            a = abs(a)
            out.append((f"SELECT log(({a})::numeric)", lambda a=a: pv.numeric_log(Decimal(10), a, 0, _scale(a))))
        elif op == "logb" and a and b and abs(b) != 1:
            a, b = abs(a), abs(b)
            out.append((f"SELECT log(({b})::numeric, ({a})::numeric)",
                        lambda a=a, b=b: pv.numeric_log(b, a, _scale(b), _scale(a))))
        elif op == "power":
            e = rnd.choice([0, 1, -1, 2, 3, 7, -3, 20, -20, 2147483647, rnd.randint(-60, 60)])
            if abs(a) > 10**6:
                a = a.scaleb(-a.adjusted())
            if e < 0 and not a:
                continue
            out.append((f"SELECT power(({a})::numeric, {e})", lambda a=a, e=e: pv.numeric_power_int(a, e, _scale(a))))
        elif op == "power_fraction":
            a, y = abs(a), Decimal(rnd.randint(-10**5, 10**5)).scaleb(-rnd.randint(0, 4))
            if a.adjusted() > 12:
                a = a.scaleb(-a.adjusted())
            if a or y > 0:
                out.append((f"SELECT power(({a})::numeric, ({y})::numeric)",
                            lambda a=a, y=y: pv.numeric_power(a, y, _scale(a), _scale(y))))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_numeric_results_match_postgresql(pg_oracle, seed: int) -> None:
    wrong = []
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as conn:
        for sql, mine in _questions(seed):
            try:
                got = format(mine(), "f")
            except SqlError as e:
                got = f"ERROR {e.sqlstate}"
            res = conn.pgconn.exec_(sql.encode())
            expected = (res.get_value(0, 0) or b"").decode() if res.status == psycopg.pq.ExecStatus.TUPLES_OK \
                else f"ERROR {res.error_field(psycopg.pq.DiagnosticField.SQLSTATE).decode()}"
            if got != expected:
                wrong.append(f"{sql}: PostgreSQL {expected[:60]}, tidegate {got[:60]}")
    assert not wrong, "\n".join(wrong[:20])


def test_numeric_input_keeps_every_digit_of_a_large_exponent(pg_oracle) -> None:
    """'1e30' is a 31-digit integer, as PostgreSQL reads it (Python's default decimal context
    keeps 28 digits and made it malformed input); past PostgreSQL's 131072 digits before the
    point the value overflows the format (22003), without building a number that long."""
    texts = ["1e30", "-2.5E+40", "123456789012345678901234567890.5e3", "1e131071"]
    with psycopg.connect(pg_oracle.dsn, autocommit=True) as conn:
        for text in texts:
            expected = conn.execute("SELECT %s::numeric::text", (text,)).fetchone()[0]
            assert str(pv.parse_numeric(text)) == expected or format(pv.parse_numeric(text), "f") == expected
        with pytest.raises(psycopg.errors.NumericValueOutOfRange) as pg_error:
            conn.execute("SELECT '1e131072'::numeric")
    with pytest.raises(SqlError) as ours:
        pv.parse_numeric("1e131072")
    assert (ours.value.sqlstate, ours.value.message) == (pg_error.value.sqlstate, pg_error.value.diag.message_primary)
    with pytest.raises(SqlError, match="value overflows numeric format"):
        pv.parse_numeric("1e999999999")
