"""Flows without a server: statement grammar, intervals, window arithmetic, metadata persistence."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from catalog.flows import FlowDef, FlowProgress, FlowStats, FlowStore, information_schema_rows, render_create_flow
from engine.flows import syntax
from engine.flows.windows import US, WindowFn, merge_ranges, micros_text, times_to_micros
from tidegate.errors import SqlError
from tidegate.statements import Kind, classify


def _us(*args: int) -> int:
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * US)


def test_create_flow_clauses_and_normalised_query() -> None:
    stmt = syntax.parse("create or replace flow f sink to s.out expire after interval '1 hour' "
                        "eval interval '1m' comment 'it''s' with (defer_on_missing_source = on, 'flow_type' = 'Batching') "
                        "as select host,count(*) as c, left(host, 2) from t -- note\n where v in (1,2) group by host;")
    assert isinstance(stmt, syntax.CreateFlow)
    assert (stmt.name, stmt.sink_schema, stmt.sink_table, stmt.or_replace) == ("f", "s", "out", True)
    assert (stmt.expire_after, stmt.eval_interval, stmt.comment) == (3600, 60, "it's")
    assert stmt.options == {"defer_on_missing_source": "true", "flow_type": "batching"}
    assert stmt.query == "SELECT host, count(*) AS c, left(host, 2) FROM t WHERE v IN (1, 2) GROUP BY host"


@pytest.mark.parametrize("text,seconds", [("5 minutes", 300), ("300 s", 300), ("1m", 60), ("2 days 1h 2 min", 176520),
                                          ("1 week", 604800), ("90s", 90)])
def test_interval_forms(text: str, seconds: int) -> None:
    assert syntax.interval_seconds(text) == seconds


def test_interval_and_option_errors() -> None:
    with pytest.raises(SqlError) as e:
        syntax.interval_seconds("1 year", "EXPIRE AFTER")
    assert e.value.sqlstate == "22023"
    with pytest.raises(SqlError) as e:
        syntax.parse("CREATE FLOW f SINK TO s WITH (a = 1) AS SELECT 1")
    assert e.value.message == ('unrecognized flow option "a"; supported options: defer_on_missing_source, '
                               'experimental_enable_incremental_read, flow_type, spark_writes')
    stmt = syntax.parse("CREATE FLOW f SINK TO s WITH (Experimental_Enable_Incremental_Read = ON) AS SELECT 1")
    assert stmt.options == {"experimental_enable_incremental_read": "true"}
    with pytest.raises(SqlError) as e:
        syntax.parse("CREATE FLOW f SINK TO s AS")
    assert e.value.message == "syntax error at end of input"


def test_statement_kinds() -> None:
    for text in ("show flow status", "ADMIN flush_flow('x')", "create or replace flow f sink to s as select 1",
                 "SHOW CREATE FLOW f", "comment on flow f is null", "DROP FLOW IF EXISTS f"):
        assert classify(text).kind is Kind.FLOW, text
    for text in ("SHOW TABLES", "CREATE TABLE flow (x int)", "DROP TABLE flow", "COMMENT ON TABLE flow IS NULL"):
        assert classify(text).kind is not Kind.FLOW, text
    assert syntax.parse("SHOW FLOWS FROM s LIKE 'a%'") == syntax.ShowFlows("s", "a%", None)
    assert syntax.parse("comment on flow f is null") == syntax.CommentOnFlow("f", None)
    assert syntax.parse("admin flush_flow('f')") == syntax.FlushFlow("f", "ADMIN FLUSH_FLOW('f')")


def test_date_bin_windows_including_negative_times() -> None:
    fn = WindowFn("date_bin", 60 * US, 0)
    times = pa.array([_us(2024, 1, 1, 0, 0, 1), _us(2024, 1, 1, 0, 0, 59), _us(1969, 12, 31, 23, 59, 30), None],
                     pa.int64())
    assert [micros_text(s) for s in fn.starts(times)] == [
        "1969-12-31 23:59:00.000000", "2024-01-01 00:00:00.000000"]


def test_calendar_windows_and_range_merging() -> None:
    week = WindowFn("date_trunc", unit="week")
    assert micros_text(week.start_of(_us(2024, 1, 3))) == "2024-01-01 00:00:00.000000"  # a Monday
    quarter = WindowFn("date_trunc", unit="quarter")
    start = quarter.start_of(_us(2024, 5, 17))
    assert micros_text(start) == "2024-04-01 00:00:00.000000"
    assert micros_text(quarter.end(start)) == "2024-07-01 00:00:00.000000"
    minute = WindowFn("date_bin", 60 * US, 0)
    starts = [0, 60 * US, 600 * US, 1200 * US]
    assert merge_ranges(minute, starts) == [(0, 120 * US), (600 * US, 660 * US), (1200 * US, 1260 * US)]
    assert merge_ranges(minute, starts, limit=2) == [(0, 660 * US), (1200 * US, 1260 * US)]


def test_times_to_micros_forms() -> None:
    ts = pa.array([datetime(1970, 1, 1, 0, 0, 1)], pa.timestamp("us"))
    assert times_to_micros(ts).to_pylist() == [US]
    assert times_to_micros(pa.array([1], pa.date32())).to_pylist() == [86_400 * US]


def test_store_persists_definitions_progress_and_stats(tmp_path) -> None:
    path = tmp_path / "catalog.sqlite"
    store = FlowStore(path)
    f = store.create(FlowDef("f", "public", "public", "out", "SELECT 1", "public", "batching",
                             {"defer_on_missing_source": "true"}, 60, None, "c", sources=["public.t"],
                             missing_sources=["public.t"]))
    assert f.flow_id == 1024
    store.save_progress(f.flow_id, FlowProgress({"16384": 3}, 2))
    store.save_stats(f.flow_id, FlowStats(status="active", runs=2))
    store.close()
    again = FlowStore(path)
    g = again.get("f")
    assert g is not None and g.pending and g.expire_after == 60 and g.options == {"defer_on_missing_source": "true"}
    assert again.progress(g.flow_id) == FlowProgress({"16384": 3}, 2)
    assert again.stats(g.flow_id).runs == 2
    with pytest.raises(SqlError) as e:
        again.create(FlowDef("f", "public", "public", "out", "SELECT 1", "public", "batching"))
    assert e.value.sqlstate == "42710"
    rows = information_schema_rows(again, "tidegate")
    assert rows["flows"].column("source_table_names").to_pylist() == [""]
    assert rows["flow_statistics"].column("status").to_pylist() == ["pending"]
    assert render_create_flow(g) == ("CREATE FLOW IF NOT EXISTS f\nSINK TO public.out\nEXPIRE AFTER '60 s'\n"
                                     "COMMENT 'c'\nWITH (defer_on_missing_source = 'true')\nAS SELECT 1")
    replaced = again.create(FlowDef("f", "public", "public", "out", "SELECT 2", "public", "batching"),
                            replace_existing=True)
    assert replaced.flow_id == 1025 and again.progress(1024) == FlowProgress()
    again.close()
