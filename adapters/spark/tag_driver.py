"""Tagging a small batch on Spark: its distinct keys collected in one job, tagged on the driver.

For a batch whose keys are small enough to broadcast (Spark's own
``spark.sql.autoBroadcastJoinThreshold``, measured on the plan's size estimate), the distributed
stages cost more than the work: each Spark job and shuffle is a fixed cost of tens to hundreds of
milliseconds, while ``IndexedTable.tag`` answers thousands of keys in milliseconds. So one job
encodes and checks the keys on the executors (errors raised there, as on the distributed path) and
returns them as Arrow; the driver deduplicates them and runs the local ``tag`` (the same answers by
construction, merge-on-read tables and every method included); the answers, only the keys found,
go back as a small local relation that the caller broadcasts into its final join.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from index_store import IndexedTable
from index_store.tagging import tag_stats
from index_store.tagging.tagger import OnDuplicate

__all__ = ["driver_batch_bytes", "estimated_bytes", "tag_on_driver"]


def driver_batch_bytes(spark: SparkSession) -> int:
    """The largest estimated batch (bytes of its key columns) tagged on the driver: Spark's
    ``spark.sql.autoBroadcastJoinThreshold`` (what Spark itself is willing to broadcast); -1
    (broadcasts off) turns the driver path off."""
    raw = spark.conf.get("spark.sql.autoBroadcastJoinThreshold") or "-1"
    text = raw.strip().lower()
    units = {"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix) and text[: -len(suffix)].strip().lstrip("-").isdigit():
            return int(text[: -len(suffix)]) * units[suffix]
    return int(text) if text.lstrip("-").isdigit() else -1


def estimated_bytes(df: DataFrame) -> int | None:
    """Catalyst's size estimate of ``df`` (the one its broadcast decisions use: exact for local and
    cached data, file sizes for a scan); None when it cannot be had (not a classic session)."""
    try:
        size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
        return int(size if isinstance(size, int) else size.toString())  # py4j makes a BigInt an int
    except Exception:
        return None


def tag_on_driver(
    spark: SparkSession,
    indexed: IndexedTable,
    inputs: DataFrame,
    columns: dict[str, str],
    using: Literal["auto", "bloom", "record"],
    on_duplicate: OnDuplicate,
    collect: Any,
) -> tuple[DataFrame, dict[str, Any]]:
    """``(answers, stats)``: the keys of ``inputs`` (its ``columns["key"]`` and, when present,
    ``columns["partition"]``: encoded keys and partition paths) that a live file holds, one row per
    (input, file) with ``columns["file"]`` and ``columns["file_id"]``, as a local relation; and the
    counters of ``SparkTagStats``. ``collect(what, job)`` runs the one Spark job (its failure as
    the library error the task raised)."""
    key, part = columns["key"], columns.get("partition")
    names = [key] if part is None else [key, part]
    start = time.perf_counter()
    got: pa.Table = collect("record keys", lambda: inputs.select(*names).toArrow())
    distinct = got.group_by(names, use_threads=False).aggregate([])
    collected = time.perf_counter()
    keys = distinct[key].combine_chunks().cast(pa.string())
    parts = distinct[part].combine_chunks().cast(pa.string()) if part is not None else None
    local = indexed.tag(keys, parts, using=using, on_duplicate=on_duplicate)
    found = local.filter(pc.is_valid(local["file"]))
    table = {key: found["key"].cast(pa.string())}
    if part is not None:
        table[part] = found["partition"].cast(pa.string())
    table[columns["file"]] = found["file"].cast(pa.string())
    table[columns["file_id"]] = found["file_id"].cast(pa.string())
    answers = spark.createDataFrame(pa.table(table))
    counts = tag_stats(local)
    stats = {
        "after_range": counts.after_range,
        "after_bloom": counts.after_bloom,
        "files_read": counts.files_read,
        "slices_read": counts.slices_read,
        "updates": counts.updates,
        "several_files": counts.several_files,
        "seconds": {"keys": collected - start, "driver": time.perf_counter() - collected},
    }
    return answers, stats
