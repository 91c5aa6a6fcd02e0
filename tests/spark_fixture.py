"""A lean local Spark session for tests: one per test module, sized for a shared 2-core box.

Use it from a test module with::

    from tests.spark_fixture import spark  # noqa: F401  (a module-scoped pytest fixture)
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import pytest


def make_spark_session(app_name: str = "tidegate-tests"):
    """Start (or reuse) a local[2] SparkSession configured like the engine's (UTC, ANSI)."""
    from pyspark.sql import SparkSession

    from engine.spark import jar_conf

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.ansi.enabled", "true")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Test data is tiny: compiling whole-stage code costs more than it saves.
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
    )
    # The jars the engine's sessions need: the JVM of this process starts once, with the first
    # session's classpath, and an engine started later in it (another test module) reuses it.
    for key, value in jar_conf().items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    # Spark logs every failed query at ERROR with a full JVM stack; tests that expect errors
    # would drown the output.
    session.sparkContext.setLogLevel("OFF")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return session


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    session = make_spark_session()
    yield session
    session.stop()
