"""Re-clustering on Spark, for tables larger than one machine (``index_store.clustering`` checks,
stages, indexes and reports): the rows sorted by the columns, or by the z-order or Hilbert key of
their ranks, and written as files of ``per_file`` rows in that order, by the executors.

The files hold the same rows as DuckDB's (``adapters.duckdb.cluster``) with the same bounds on the
clustering columns: each column's cells come from ``index_store.curves.column_ranks`` over its
distinct values (collected to the driver: they must fit it), the keys from the same curve code on
the executors, and rows are cut into files by their position in one global order (key, then the
columns), each file written whole by one Spark task (Spark's parquet writer; no Python handles a
row). Types are Spark's: a TIMESTAMP column is written with the session's UTC time zone
(``timestamp[us, tz=UTC]``) where DuckDB writes a zone-less one, the instants the same; and Spark's
parquet writer leaves out the min and max of a float column in a file that holds NaN, so the index
has no bounds for that column in such files (the layout report counts them as missing).
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

from index_store.clustering import ClusterJob, ClusterResult, run_cluster
from index_store.curves import column_ranks, grid_bits, hilbert_keys, zorder_keys

__all__ = ["cluster"]

_KEY = "__hudi_cluster_key"
_PART = "__hudi_cluster_partition"
_FILE = "__hudi_cluster_file"
_POS = "__hudi_cluster_position"
_ROW = "__hudi_cluster_row"
_SIGN = np.uint64(1 << 63)


def cluster(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    by: Sequence[str],
    strategy: str = "zorder",
    target_file_mb: float | None = None,
    spark: SparkSession | None = None,
) -> ClusterResult:
    """Write a copy of the plain parquet table ``source`` re-clustered by ``by`` into ``out`` (a
    new or empty folder) with Spark (the active session, else a local one), index it, and report
    the layout of ``by`` before and after. Files of about ``target_file_mb``; None: as many as the
    source's, at least cores x 4 of 1 MiB or more (``index_store.clustering.default_file_count``)."""
    session = spark or SparkSession.getActiveSession()
    if session is None:
        from adapters.spark.session import local_session

        session = local_session()
    return run_cluster(partial(_write, session), source, out, by, strategy, target_file_mb)


def _write(spark: SparkSession, job: ClusterJob) -> int:
    reader = spark.read.option("mergeSchema", "true")
    if job.partitioned:
        reader = reader.option("basePath", job.table.root)
    rows = reader.parquet(*job.files)
    columns = [_column(c) for c in rows.columns]
    order = [_column(c).asc_nulls_first() for c in job.by]
    if job.strategy != "linear":
        rows = _with_key(spark, rows, job.by, job.strategy)
        order = [F.col(_KEY).asc(), *order]
    # One global order, made concrete once: a range partitioning is sampled at random, so the
    # partitions counted below must be the very ones written.
    ordered = rows.orderBy(*order).localCheckpoint(eager=True)
    numbered = ordered.withColumn(_PART, F.spark_partition_id()).withColumn(
        _ROW, F.monotonically_increasing_id()
    )
    counts: dict[int, int] = {int(part): int(n) for part, n in numbered.groupBy(_PART).count().collect()}
    offsets, total = [], 0
    for part in sorted(counts):
        offsets += [F.lit(part), F.lit(total)]
        total += counts[part]
    # A row's position: its partition's offset plus its index in the partition (the low 33 bits of
    # monotonically_increasing_id, whose high bits are the partition).
    position = F.create_map(*offsets)[F.col(_PART)] + F.col(_ROW) - F.shiftleft(F.col(_PART).cast("long"), 33)
    placed = numbered.withColumn(_POS, position).withColumn(_FILE, F.floor(F.col(_POS) / job.per_file))
    files = -(-total // job.per_file)
    spark_out = job.folder / ".spark-output"
    (
        placed.repartition(max(files, 1), _FILE)
        .sortWithinPartitions(_FILE, _POS)
        .select(*columns, _FILE)
        .write.option("compression", "snappy")
        .partitionBy(_FILE)
        .parquet(str(spark_out))
    )
    written = 0
    for folder in sorted(spark_out.glob(f"{_FILE}=*")):
        [data] = [p for p in folder.iterdir() if p.suffix == ".parquet"]  # one task wrote it whole
        os.rename(data, job.folder / f"part-{int(folder.name.split('=', 1)[1]):05d}.parquet")
        written += 1
    shutil.rmtree(spark_out)
    return written


def _quoted(name: str) -> str:
    """``name`` as a Spark column reference to the top-level column of that name: quoted in
    backticks, else Spark would read ``a.b`` as field ``b`` of a struct ``a``."""
    return "`" + name.replace("`", "``") + "`"


def _column(name: str) -> Column:
    """The top-level column ``name`` (``"a.b"``, ``"my col"`` and keywords included)."""
    return F.col(_quoted(name))


def _with_key(spark: SparkSession, rows: DataFrame, by: list[str], strategy: str) -> DataFrame:
    """``rows`` with the curve key of its clustering columns (signed, in the same order)."""
    bits = grid_bits(len(by))
    cells = []
    for i, column in enumerate(by):
        distinct = rows.select(_column(column)).distinct().toArrow().column(0)
        cell, value = f"__hudi_cluster_cell_{i}", f"__hudi_cluster_value_{i}"
        table = pa.table({value: distinct, cell: pa.array(column_ranks(distinct, bits).astype(np.int64))})
        lookup = spark.createDataFrame(table)
        same = rows[_quoted(column)].eqNullSafe(lookup[value])
        rows = rows.join(F.broadcast(lookup), same, "inner").drop(value)
        cells.append(cell)
    curve = _Keys(zorder_keys if strategy == "zorder" else hilbert_keys, bits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "prefer type hints": a callable object has none
        udf = arrow_udf(curve, "long", ArrowUDFType.SCALAR)
    return rows.withColumn(_KEY, udf(*[F.col(c) for c in cells])).drop(*cells)


class _Keys:
    """A scalar Arrow UDF (no pandas, unlike ``mapInArrow`` in PySpark 4.3): the cells' curve key."""

    def __init__(self, curve: Callable[[Sequence[np.ndarray], int], np.ndarray], bits: int) -> None:
        self.curve, self.bits = curve, bits

    def __call__(self, *cells: pa.Array) -> pa.Array:
        grid = [np.asarray(c, dtype=np.int64).astype(np.uint64) for c in cells]
        key = self.curve(grid, self.bits)
        # Spark has no unsigned 64-bit type: with the top bit flipped, signed order is unsigned order.
        return pa.array((key ^ _SIGN).view(np.int64))
