"""A local Spark session set up the way this library needs it (tests, demos, benchmarks)."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["local_session"]


def local_session(
    app_name: str = "hudi-index", cores: int = 2, memory: str = "1g", timezone: str = "UTC"
) -> SparkSession:
    """A ``local[cores]`` session: UI off, Python workers on this interpreter, and Python data
    source filter pushdown on (``spark.sql.python.filterPushdown.enabled``), which the
    ``hudi_index`` data source needs to receive filters at all."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.driver.memory", memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores * 2))
        .config("spark.sql.session.timeZone", timezone)
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        .getOrCreate()
    )
