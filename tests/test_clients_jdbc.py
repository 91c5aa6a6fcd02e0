"""pgJDBC (the Debian postgresql.jar) against tidegate, with PostgreSQL 15 as the oracle.

tests/jdbc/JdbcProbe.java is compiled once per run; it runs DDL, a PreparedStatement past the
server-prepare threshold, a rollback, DatabaseMetaData calls and an error, printing one fact per
line. Its output against tidegate must equal its output against PostgreSQL (it prints no OIDs
or sizes, so the two are comparable line for line).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

JAR = "/usr/share/java/postgresql.jar"
SOURCE = Path(__file__).parent / "jdbc" / "JdbcProbe.java"


@pytest.fixture(scope="module")
def probe_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jdbc-classes")
    proc = subprocess.run(["javac", "-cp", JAR, "-d", str(out), str(SOURCE)], capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out


def run_probe(classes: Path, port: int, dbname: str, user: str) -> list[str]:
    proc = subprocess.run(["java", "-Xmx256m", "-cp", f"{classes}:{JAR}", "JdbcProbe",
                           f"jdbc:postgresql://127.0.0.1:{port}/{dbname}", user],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"JdbcProbe failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout.splitlines()


def normalise(lines: list[str]) -> list[str]:
    """getTypeInfo's row order is not specified by JDBC: compare those lines as a set."""
    return [line for line in lines if not line.startswith("type ")] + sorted(
        line for line in lines if line.startswith("type "))


@pytest.fixture(scope="module")
def oracle_output(probe_classes: Path, pg_oracle) -> list[str]:
    return normalise(run_probe(probe_classes, pg_oracle.port, "postgres", "postgres"))


EXPECTED = """\
insert count=3
columns id:int4:4 name:varchar:12 price:numeric:2 qty:int8:-5 ok:bool:-7 added:date:91 at:timestamp:93 note:text:12
row0 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row0 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
row1 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row1 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
row2 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row2 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
row3 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row3 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
row4 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row4 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
columns id:int4:4 name:varchar:12 price:numeric:2 qty:int8:-5 ok:bool:-7 added:date:91 at:timestamp:93 note:text:12
row5 1|bolt|0.25|100|true|2024-01-05|2024-01-05 08:00:00.0|null
row5 2|nut|0.10|250|false|2024-02-01|2024-02-01 17:30:00.0|steel
row5 3|gear|12.00|7|null|null|null|brass
update count=1
count after rollback=3
schema information_schema
schema pg_catalog
schema public
table public.jdbc_items TABLE
table public.jdbc_items_v VIEW
column jdbc_items.id 1 int4 4 nullable=0 NO
column jdbc_items.name 2 varchar 12 nullable=0 NO
column jdbc_items.price 3 numeric 2 nullable=1 YES
column jdbc_items.qty 4 int8 -5 nullable=1 YES
column jdbc_items.ok 5 bool -7 nullable=1 YES
column jdbc_items.added 6 date 91 nullable=1 YES
column jdbc_items.at 7 timestamp 93 nullable=1 YES
column jdbc_items.note 8 text 12 nullable=1 YES
pk jdbc_items.id seq=1 name=jdbc_items_pkey
type bool -7
type int8 -5
type bytea -2
type bpchar 1
type numeric 2
type int4 4
type int2 5
type float4 7
type float8 8
type text 12
type varchar 12
type date 91
type time 92
type timestamp 93
type timestamptz 93
type json 1111
type interval 1111
type uuid 1111
type jsonb 1111
product PostgreSQL
identifier quote "
error 42P01
after error 1
"""


def test_oracle_output_is_as_expected(oracle_output: list[str]) -> None:
    """Pins the probe's behaviour on PostgreSQL, so the comparison below compares something real."""
    assert oracle_output == normalise(EXPECTED.splitlines())


def test_tidegate_matches_oracle(probe_classes: Path, tidegate, oracle_output: list[str]) -> None:
    got = normalise(run_probe(probe_classes, tidegate.port, "tidegate", "tidegate"))
    missing = [line for line in oracle_output if line not in got]
    extra = [line for line in got if line not in oracle_output]
    assert not missing and not extra, "missing (PostgreSQL printed):\n" + "\n".join(missing) + \
        "\nextra (tidegate printed):\n" + "\n".join(extra)
    assert got == oracle_output
