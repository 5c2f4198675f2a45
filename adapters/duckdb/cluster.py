"""Re-clustering on DuckDB (``index_store.clustering`` checks, stages, indexes and reports): the rows
of the source sorted by the columns, or by the z-order or Hilbert key of their ranks
(``index_store.curves``), streamed into files in that order."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from index_store.clustering import ClusterJob, ClusterResult, run_cluster, write_in_order
from index_store.curves import curve_keys

__all__ = ["cluster"]

_ROW = "__hudi_cluster_row"
_KEY = "__hudi_cluster_key"
_BATCH_ROWS = 65_536


def cluster(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    by: Sequence[str],
    strategy: str = "zorder",
    target_file_mb: float | None = None,
) -> ClusterResult:
    """Write a copy of the plain parquet table ``source`` re-clustered by ``by`` into ``out`` (a
    new or empty folder) with DuckDB, index it, and report the layout of ``by`` before and after.
    Files of about ``target_file_mb``; None: as many as the source's, at least cores x 4 of 1 MiB
    or more (``index_store.clustering.default_file_count``)."""
    return run_cluster(_write, source, out, by, strategy, target_file_mb)


@contextlib.contextmanager
def _connection(scratch: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    try:
        con.execute("SET temp_directory = ?", [str(scratch)])  # large sorts spill into the staging
        yield con
    finally:
        con.close()


def _write(job: ClusterJob) -> int:
    scratch = job.folder / ".duckdb-tmp"
    listed = ", ".join(_string(f) for f in job.files)
    hive = "true" if job.partitioned else "false"
    source = (
        f"read_parquet([{listed}], hive_partitioning = {hive}, union_by_name = true, can_have_nan = true)"
    )
    order = ", ".join(f"{_quote(c)} ASC NULLS FIRST" for c in job.by)
    with _connection(scratch) as con:
        if job.strategy == "linear":
            query = f"SELECT * FROM {source} ORDER BY {order}"
        else:
            # The key needs every value of the columns (their ranks): the rows are numbered once,
            # every key computed, and the keys joined back by number.
            con.execute(f"CREATE TEMP TABLE src AS SELECT *, row_number() OVER () AS {_ROW} FROM {source}")
            picked = ", ".join(_quote(c) for c in job.by)
            columns = con.sql(f"SELECT {picked} FROM src ORDER BY {_ROW}").to_arrow_table()
            keys = curve_keys(job.strategy, [columns.column(c) for c in job.by])
            numbered = pa.table({_ROW: pa.array(range(1, len(keys) + 1), pa.int64()), _KEY: pa.array(keys)})
            con.register("cluster_keys", numbered)
            query = (
                f"SELECT src.* EXCLUDE ({_ROW}) FROM src JOIN cluster_keys USING ({_ROW}) "
                f"ORDER BY {_KEY}, {order}"
            )
        written = write_in_order(con.sql(query).to_arrow_reader(_BATCH_ROWS), job.folder, job.per_file)
    shutil.rmtree(scratch, ignore_errors=True)
    return written


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
