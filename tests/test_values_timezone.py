"""Time zones and intervals as a user sees them through psycopg, compared with PostgreSQL 15.

Every transcript runs statement by statement on tidegate and on the PostgreSQL oracle, under
several session time zones (``SET TIME ZONE``); each statement's command tag, column names and
text-format rows (or SQLSTATE) must be identical. Table names carry the zone so the shared
gateway's other suites never meet them.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import psycopg
import pytest

from tests.targets import Target, target_for
from tests.test_sql_vs_postgres import run_raw

ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]


def _suffix(zone: str) -> str:
    return zone.replace("/", "_").lower()


def timezone_transcript(zone: str) -> list[str]:
    """timestamptz computed in the session zone: rows stored with explicit offsets (whatever the
    zone, the same instants), then casts, date_trunc, extract, to_char, comparisons, AT TIME ZONE
    and constant queries, all of which depend on the session's TimeZone."""
    t = f"vtz_{_suffix(zone)}"
    return [
        f"SET TIME ZONE '{zone}'",
        f"DROP TABLE IF EXISTS {t}",
        f"CREATE TABLE {t} (id int, tz timestamptz, ts timestamp)",
        f"INSERT INTO {t} VALUES (1, '2024-01-01 05:00:00+00', '2024-01-01 00:00:00'),"
        " (2, '2024-07-01 23:30:00+00', '2024-07-01 23:30:00'),"
        " (3, '2024-03-10 06:59:59+00', '2024-03-10 01:59:59'),"
        " (4, NULL, NULL),"
        " (5, '2024-07-01 12:00:00-04', '2024-07-01 12:00:00'),"
        " (6, '2024-11-03 06:30:00Z', '2024-11-03 03:30:00'),"
        " (7, '2023-12-31 18:30:00+00', '2024-03-10 02:30:00'),"
        " (11, '2040-07-01 23:30:00+00', '2040-07-01 23:30:00')",  # past the zone's listed transitions (2037)
        # timestamptz values Spark computes: literals and casts read in the session zone
        f"INSERT INTO {t} SELECT 8, timestamptz '2024-07-01 12:00:00', timestamp '2024-07-01 12:00:00'",
        f"INSERT INTO {t} SELECT 9, ts::timestamptz, ts FROM {t} WHERE id = 2",
        f"INSERT INTO {t} SELECT 10, '2024-02-29 23:00:00'::timestamptz, NULL",
        f"SELECT id, tz, ts FROM {t} ORDER BY id",
        f"SELECT id, tz::date, tz::timestamp, ts::timestamptz, tz::time FROM {t} ORDER BY id",
        f"SELECT id, date_trunc('day', tz), date_trunc('hour', tz), date_trunc('month', tz) FROM {t} ORDER BY id",
        f"SELECT id, extract(hour from tz), extract(day from tz), date_part('dow', tz), extract(epoch from tz),"
        f" extract(epoch from ts) FROM {t} ORDER BY id",
        f"SELECT id, to_char(tz, 'YYYY-MM-DD HH24:MI') FROM {t} ORDER BY id",
        f"SELECT id FROM {t} WHERE tz = '2024-07-01 12:00:00' ORDER BY id",
        f"SELECT id FROM {t} WHERE tz < timestamptz '2024-07-01 12:00:00' ORDER BY id",
        f"SELECT id, tz = ts, tz::date = date '2024-07-01' FROM {t} ORDER BY id",
        f"SELECT tz::date AS d, count(*) FROM {t} GROUP BY 1 ORDER BY 1",
        f"SELECT id, tz AT TIME ZONE 'UTC', ts AT TIME ZONE 'UTC', tz AT TIME ZONE 'Asia/Tokyo' FROM {t} ORDER BY id",
        f"SELECT id, tz + interval '1 day 02:00', tz - interval '90 minutes', tz + interval '1 month' FROM {t} ORDER BY id",
        f"SELECT id, date_bin('1 hour', tz, timestamptz '2024-01-01 00:00:00'), date_bin('1 hour', ts, timestamp '2024-01-01')"
        f" FROM {t} ORDER BY id",
        f"UPDATE {t} SET tz = ts::timestamptz WHERE id = 4 OR id = 7",
        f"SELECT id, tz FROM {t} WHERE id IN (4, 7) ORDER BY id",
        # constant queries (no table)
        "SELECT timestamptz '2024-07-01 12:00:00'",
        "SELECT '2024-07-01 12:00:00'::timestamptz, '2024-01-15 12:00'::timestamptz",
        "SELECT timestamptz '2024-07-01 23:30:00+00'",
        "SELECT (timestamptz '2024-07-01 23:30:00+00')::date, (timestamptz '2024-07-01 23:30:00+00')::timestamp",
        "SELECT timestamp '2024-07-01 12:00:00'::timestamptz, '2024-01-01 00:00'::timestamp::timestamptz",
        "SELECT date_trunc('day', timestamptz '2024-07-01 23:30:00+00')",
        "SELECT extract(hour from timestamptz '2024-07-01 23:30:00+00')",
        "SELECT date '2024-07-01'::timestamptz",
        "SELECT timestamptz '2024-07-01 23:30:00+00' + interval '1 day'",
        "SELECT timestamptz '2024-03-09 12:00:00' + interval '1 day', timestamptz '2024-03-09 12:00:00' + interval '24 hours',"
        " timestamptz '2024-03-11 12:00:00' - interval '1 day 1 hour'",
        "SELECT make_timestamp(2024, 7, 1, 12, 30, 0)",
        # more rows than the few-rows encoder takes, into summers past 2037 and years past 9999
        "SELECT g, timestamptz '2036-01-01 12:00:00+00' + g * interval '1 month',"
        " timestamptz '9999-01-01 12:00:00+00' + g * interval '200 months' FROM generate_series(1, 40) g ORDER BY g",
        "SELECT make_timestamptz(2024, 7, 1, 12, 30, 0)",
        "SELECT timezone('UTC', timestamptz '2024-07-01 12:00:00'), timestamp '2024-07-01 12:00' AT TIME ZONE 'UTC'",
        "SELECT timestamptz '2024-07-01 00:00+00' AT TIME ZONE '+05', timestamptz '2024-07-01 00:00+00' AT TIME ZONE '-7',"
        " timestamptz '2024-07-01 00:00+00' AT TIME ZONE 'UTC+5', timestamptz '2024-07-01 00:00+00' AT TIME ZONE 'EST',"
        " timestamptz '2024-07-01 00:00+00' AT TIME ZONE 'america/new_york', timestamp '2024-07-01 00:00' AT TIME ZONE 'UTC+5'",
        f"DROP TABLE {t}",
    ]


def stored_timezone_transcript(zone: str) -> list[str]:
    """Timestamps stored into a timestamptz column without an offset are local time in the
    session zone (plain string literals, typed literals, timestamp values, UPDATE ... SET)."""
    t = f"vtz_store_{_suffix(zone)}"
    return [
        f"SET TIME ZONE '{zone}'",
        f"DROP TABLE IF EXISTS {t}",
        f"CREATE TABLE {t} (id int, tz timestamptz, ts timestamp)",
        f"INSERT INTO {t} VALUES (1, '2024-01-01 00:00:00', '2024-01-01 00:00:00'),"
        " (2, '2024-03-10 02:30:00', '2024-03-10 02:30:00'),"  # a DST gap in New York
        " (3, '2024-11-03 01:30:00', '2024-11-03 01:30:00'),"  # the repeated hour: standard time
        " (4, NULL, NULL),"
        " (9, '2040-07-01 12:00:00', '2040-07-01 12:00:00'), (10, '2040-03-11 02:30:00', NULL)",
        f"INSERT INTO {t} (id, tz, ts) VALUES (5, timestamptz '2024-07-01 12:00:00', timestamp '2024-07-01 12:00:00')",
        f"INSERT INTO {t} VALUES (6, '2024-07-01 12:00:00'::timestamptz, '2024-07-01 12:00:00'::timestamp)",
        f"INSERT INTO {t} SELECT 7, ts, ts FROM {t} WHERE id = 1",
        f"INSERT INTO {t} VALUES (8, DATE '2024-02-29', NULL)",
        f"UPDATE {t} SET tz = '2025-01-01 08:00:00' WHERE id = 4",
        f"SELECT id, tz, tz::date, extract(hour from tz) FROM {t} ORDER BY id",
        f"SELECT id FROM {t} WHERE tz = '2024-01-01 00:00:00' ORDER BY id",
        f"DROP TABLE {t}",
    ]


INTERVAL_STATEMENTS = [
    "SELECT interval '-1 2:03:04'",
    "SELECT interval '1 -2:03:04', interval '-1 -2:03:04', interval '1 day -02:00'",
    "SELECT '-1 2:03:04'::interval, CAST('-1 2:03:04' AS interval)",
    "SELECT interval 'P1DT2H', 'P1DT2H'::interval, CAST('P1Y2M3DT4H5M6S' AS interval)",
    "SELECT interval 'PT1.5S', 'P1W'::interval, 'PT-30M'::interval",
    "SELECT interval '1 year 2 mons', '1 year 2 mons'::interval, interval '1 yr 2 mon 3 d'",
    "SELECT interval '@ 1 hour ago', '@ 1 day 2 hours ago'::interval, interval '1 day ago'",
    "SELECT interval '1:30', interval '90 minutes', interval '1.5 hours', interval '0.5 days'",
    "SELECT interval '1 day 02:03:04.5', interval '-00:00:01', interval '3 weeks'",
    "SELECT interval '1.5 years', interval '1 month -1 day', interval '100 seconds'",
    "SELECT interval '2 hours' * 3, interval '1 day' - interval '1 hour', -interval '1 day 2 hours'",
    "SELECT timestamp '2024-01-31 10:00' + interval '1 month', timestamp '2024-01-01' - interval '-1 2:03:04'",
    "SELECT timestamp '2024-01-01 00:00' + 'P1DT2H'::interval",
    "SELECT 'nonsense'::interval",
    "SELECT interval '1 fortnight'",
    "SELECT make_timestamp(2024, 2, 29, 23, 59, 59.5)",
    "SELECT make_interval(days => 3, hours => 4), make_interval(1, 2, 0, 3), make_interval(secs => 1.5)",
    "SELECT timestamp '2024-01-01' + make_interval(days => 2), interval '1 day' + interval '-2 hours'",
    "SELECT make_interval(days => g), make_interval(months => g, hours => -g) FROM generate_series(1, 2) g",
]


# Interval input as PostgreSQL 15 reads it, fed to the one parser (tidegate.pgvalues) that the
# codec, casts and storage share; each is also compared end to end in a cast below.
INTERVAL_INPUTS = [
    "-1 2:03:04", "1 -2:03:04", "-1 -2:03:04", "1 day -02:00", "P1DT2H", "P1Y2M3DT4H5M6S", "PT1.5S",
    "P1W", "PT-30M", "P1.5Y", "P0001-02-03T04:05:06", "P1DT-2H", "PT", "P", "1 year 2 mons",
    "1 yr 2 mon 3 d", "@ 1 hour ago", "@ 1 day 2 hours ago", "1 day ago", "-1.5 hours ago", "1:30",
    "1:30.5", "10:20:30.123456789", "90 minutes", "1.5 hours", "0.5 days", "1.5 weeks", "1.5 months",
    "0.1 mon", "1.5 years", "1 month -1 day", "100 seconds", "5", "1-2", "-1-2", "1 2", "1 2:03",
    "5 6:00", "4 5 hours", "4 5 mons", "30 1 hour 5", "1 hour 30", "1 hour 30 2 min", "1 day 3",
    "1 day 1 day", "1 week 2 days", "2 h 3m", "1day", "+1 -1:00", "1,5 hours", "1 millisecond",
    "1.5 ms", "3 microseconds", "1 century 1 decade 1 millennium", "day", "  ", "nonsense",
    "1 fortnight", "-0.5 min", "@1 day", "1 days 2 hours 3 minutes 4 seconds", "+5 days",
]


def test_interval_parser_matches_postgres(oracle: Target) -> None:
    from tidegate.errors import SqlError
    from tidegate.pgvalues import format_interval, parse_interval_fields

    problems = []
    with psycopg.connect(oracle.dsn, autocommit=True) as conn:
        for text in INTERVAL_INPUTS:
            res = run_raw(conn, f"SELECT interval '{text}'")
            expected = res[0] if res[0] == "ERROR" else res[2][0][0]
            try:
                got = format_interval(*parse_interval_fields(text))
            except SqlError as exc:
                got = "ERROR" if exc.sqlstate in ("22007", "22015") else exc.sqlstate
            if got != expected:
                problems.append(f"{text!r}: PostgreSQL {expected!r}, tidegate.pgvalues {got!r}")
    assert not problems, "\n".join(problems)


def test_interval_casts_match_postgres(oracle: Target, gateway: Target) -> None:
    """The same inputs as literals, casts and stored values, through the gateway."""
    valid = []
    with psycopg.connect(oracle.dsn, autocommit=True) as conn:
        for text in INTERVAL_INPUTS:
            if run_raw(conn, f"SELECT interval '{text}'")[0] != "ERROR":
                valid.append(text)
    casts = ", ".join(f"'{text}'::interval" for text in valid)
    literals = ", ".join(f"interval '{text}'" for text in valid)
    values = ", ".join(f"({k}, '{text}')" for k, text in enumerate(valid))
    statements = [
        f"SELECT {casts}",
        f"SELECT {literals}",
        "DROP TABLE IF EXISTS vtz_interval_inputs",
        "CREATE TABLE vtz_interval_inputs (k int, i interval)",
        f"INSERT INTO vtz_interval_inputs VALUES {values}",
        "SELECT k, i FROM vtz_interval_inputs ORDER BY k",
        "SELECT '1 fortnight'::interval",
        "INSERT INTO vtz_interval_inputs VALUES (99, '1 day 1 day')",
        "DROP TABLE vtz_interval_inputs",
    ]
    problems = _compare(oracle, gateway, statements)
    assert not problems, "\n".join(problems)


def interval_transcript() -> list[str]:
    t = "vtz_intervals"
    return [
        f"DROP TABLE IF EXISTS {t}",
        f"CREATE TABLE {t} (id int, i interval)",
        f"INSERT INTO {t} VALUES (1, '-1 2:03:04'), (2, 'P1DT2H'), (3, '1 year 2 mons'), (4, '@ 1 hour ago'),"
        " (5, interval '-1 2:03:04'), (6, 'P1Y2M3DT4H5M6.5S'::interval), (7, '1 day -02:00'), (8, NULL)",
        f"SELECT id, i FROM {t} ORDER BY id",
        f"SELECT id FROM {t} WHERE i = interval '26 hours' ORDER BY id",
        f"INSERT INTO {t} VALUES (9, 'bogus')",
        f"DROP TABLE {t}",
    ]


@pytest.fixture(scope="module")
def oracle(request: pytest.FixtureRequest) -> Target:
    return target_for(request, "postgres")


@pytest.fixture(scope="module")
def gateway(request: pytest.FixtureRequest) -> Target:
    return target_for(request, "tidegate")


def _compare(oracle: Target, gateway: Target, statements: list[str]) -> list[str]:
    problems = []
    with psycopg.connect(oracle.dsn, autocommit=True) as oconn, psycopg.connect(gateway.dsn, autocommit=True) as gconn:
        for sql in statements:
            expected = run_raw(oconn, sql)
            got = run_raw(gconn, sql)
            if expected[0] == "ERROR":
                expected, got = expected[:2], got[:2]
            if got != expected:
                problems.append(f"{sql}\n    expected: {expected}\n    actual:   {got}")
    return problems


@pytest.mark.parametrize("zone", ZONES)
def test_timestamptz_follows_session_zone(zone: str, oracle: Target, gateway: Target) -> None:
    problems = _compare(oracle, gateway, timezone_transcript(zone))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("setting", ["-7", "'UTC+5'", "'+05:30'", "INTERVAL '+05:30' HOUR TO MINUTE"])
def test_offset_time_zones(setting: str, oracle: Target, gateway: Target) -> None:
    """Numeric zones are hours east; POSIX spellings ('UTC+5', '+05:30') hours west, as in PostgreSQL."""
    statements = [
        f"SET TIME ZONE {setting}",
        "SELECT timestamptz '2024-07-01 12:00:00', '2024-07-01 23:30:00+00'::timestamptz::date,"
        " extract(hour from timestamptz '2024-07-01 23:30:00+00'), timestamp '2024-07-01 12:00'::timestamptz",
        "SELECT id, tstz::timestamp, date_trunc('day', tstz) FROM vtz_offsets ORDER BY id",
    ]
    setup = ["DROP TABLE IF EXISTS vtz_offsets", "CREATE TABLE vtz_offsets (id int, tstz timestamptz)",
             "INSERT INTO vtz_offsets VALUES (1, '2024-07-01 23:30:00+00'), (2, '2024-01-01 03:00:00+00')"]
    for target in (oracle, gateway):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            for sql in setup:
                conn.execute(sql)
    problems = _compare(oracle, gateway, statements)
    assert not problems, "\n".join(problems)


# A timestamp without offset stored into a timestamptz column (fast INSERT path, COPY, UPDATE)
# is read in the session's TimeZone, as PostgreSQL reads it.
@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_timestamptz_stored_in_session_zone(zone: str, oracle: Target, gateway: Target) -> None:
    problems = _compare(oracle, gateway, stored_timezone_transcript(zone))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("zone", ZONES)
def test_interval_input_matches_postgres(zone: str, oracle: Target, gateway: Target) -> None:
    statements = [f"SET TIME ZONE '{zone}'"] + INTERVAL_STATEMENTS
    problems = _compare(oracle, gateway, statements)
    assert not problems, "\n".join(problems)


def test_interval_column_matches_postgres(oracle: Target, gateway: Target) -> None:
    problems = _compare(oracle, gateway, interval_transcript())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("zone", ZONES)
def test_timestamptz_values_through_psycopg(zone: str, oracle: Target, gateway: Target) -> None:
    """Typed values psycopg builds (binary and text results, bound parameters) agree with PostgreSQL."""
    table = f"vtz_typed_{_suffix(zone)}"
    results = {}
    for target in (oracle, gateway):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"SET TIME ZONE '{zone}'")
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (id int, tz timestamptz, i interval)")
            conn.execute(f"INSERT INTO {table} SELECT 1, timestamptz '2024-01-01 00:00:00', '-1 2:03:04'")
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s, %s)",
                         (2, dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.timezone.utc), dt.timedelta(days=1, hours=2)))
            conn.execute(f"INSERT INTO {table} VALUES (%s, %s::timestamptz, %s::interval)",
                         (3, "2024-07-01 12:00:00", "P1DT2H"))
            out = []
            for binary in (False, True):
                cur = conn.cursor(binary=binary)
                cur.execute(f"SELECT id, tz, tz::date, extract(hour from tz), i FROM {table} ORDER BY id")
                out.append(cur.fetchall())
            cur = conn.cursor()
            cur.execute(f"SELECT id FROM {table} WHERE tz::date = %s ORDER BY id", (dt.date(2024, 1, 1),))
            out.append(cur.fetchall())
            conn.execute(f"DROP TABLE {table}")
            results[target.name] = out
    assert results["tidegate"] == results["postgres"]
    # and what that is, said outright: midnight in the session zone, its date and hour there
    first = results["postgres"][0][0]
    assert first[1] == dt.datetime(2024, 1, 1, tzinfo=ZoneInfo(zone))
    assert first[2] == dt.date(2024, 1, 1) and first[3] == Decimal(0)
    assert first[4] == dt.timedelta(days=-1, hours=2, minutes=3, seconds=4)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_copy_into_timestamptz_reads_the_session_zone(zone: str, oracle: Target, gateway: Target) -> None:
    """COPY FROM text rows without an offset into a timestamptz column: local time in the zone."""
    t = f"vtz_copy_{_suffix(zone)}"
    answers = []
    for target in (oracle, gateway):
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f"SET TIME ZONE '{zone}'")
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE TABLE {t} (id int, tz timestamptz)")
            with conn.cursor().copy(f"COPY {t} (id, tz) FROM STDIN") as copy:
                copy.write("1\t2024-01-01 00:00:00\n2\t2024-07-01 12:00:00+02\n3\t\\N\n4\t2040-07-01 12:00:00\n")
            conn.execute("SET TIME ZONE 'UTC'")
            answers.append(conn.execute(f"SELECT id, tz FROM {t} ORDER BY id").fetchall())
            conn.execute(f"DROP TABLE {t}")
    assert answers[0] == answers[1], answers
