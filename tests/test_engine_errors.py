"""Engine-side failures as clients see them: cancel stops Spark's work, not only the reply.

The gateway runs with Spark's UI on a free port so the test reads Spark's own REST status
(active stages, running jobs) rather than trusting the gateway's word.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import psycopg
import pytest
from tests.pgoracle import free_port
from tests.tidegate_server import start_tidegate

_LONG = ("SELECT count(*) FROM generate_series(1, 200000) a CROSS JOIN generate_series(1, 200000) b "
         "WHERE a.a + b.b > 3")


@pytest.fixture(scope="module")
def gateway_with_ui(tmp_path_factory):
    ui = free_port()
    server = start_tidegate(tmp_path_factory.mktemp("tg-cancel") / "data",
                            extra_args=["--spark-conf", "spark.ui.enabled=true",
                                        "--spark-conf", f"spark.ui.port={ui}"])
    server.wait_for_spark()
    yield server, ui
    server.stop()


def _rest(ui: int, path: str) -> list[dict]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/api/v1/{path}", timeout=5) as r:
        return json.loads(r.read())


def _spark_busy(ui: int) -> tuple[int, int]:
    """(running jobs, active stages) as Spark's status REST API reports them."""
    app = _rest(ui, "applications")[0]["id"]
    jobs = _rest(ui, f"applications/{app}/jobs?status=running")
    stages = _rest(ui, f"applications/{app}/stages?status=active")
    return len(jobs), len(stages)


def test_cancel_stops_spark_tasks(gateway_with_ui) -> None:
    server, ui = gateway_with_ui
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        errors: list[BaseException] = []

        def run() -> None:
            try:
                conn.execute(_LONG)
            except BaseException as exc:  # noqa: BLE001 - checked below
                errors.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.time() + 60
        while _spark_busy(ui)[1] == 0:  # the query's stage is running
            assert time.time() < deadline, "the long query never started a Spark stage"
            time.sleep(0.2)
        time.sleep(1.0)
        cancelled_at = time.monotonic()
        conn.cancel()
        worker.join(30)
        assert not worker.is_alive()
        assert errors and isinstance(errors[0], psycopg.errors.QueryCanceled), errors
        assert errors[0].sqlstate == "57014"
        while _spark_busy(ui) != (0, 0):
            assert time.monotonic() - cancelled_at < 10, f"Spark still busy after cancel: {_spark_busy(ui)}"
            time.sleep(0.1)
        # the session is usable afterwards
        assert conn.execute("SELECT count(*) FROM generate_series(1, 1000) g").fetchone() == (1000,)
