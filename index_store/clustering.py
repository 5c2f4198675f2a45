"""Re-cluster a plain parquet table into a new folder: rows sorted by some columns (``linear``) or
by a space-filling curve of their ranks (``zorder``, ``hilbert``), cut into files of a target size,
then indexed. Statistics skip files only when files hold narrow ranges of the columns queried; this
writes a copy whose files do, and never touches the source. The engines (``adapters.duckdb.cluster``,
``adapters.spark.cluster``) only sort and write; what they share is here.

The copy is written into a hidden staging folder next to ``out`` and renamed to ``out`` only once
every file is written and indexed: a failure (a full disk, say) leaves no table that looks complete.
Rows go to files in clustered order, ``per_file`` rows each (the last may hold fewer), the number
that makes files of about the target size given the source's bytes per row (by default, as many
files as the source has, and at least ``cores x 4`` of 1 MiB or more: ``default_file_count``, so a
re-clustered copy is read as parallel as its source); ties of the order are
rows equal in every clustering column, so any engine writes files with the same bounds on them.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast, get_args

import pyarrow as pa
import pyarrow.parquet as pq

from index_store import IndexedTable, open_table
from index_store.errors import IndexStoreError
from index_store.layout import layout_report

__all__ = [
    "STRATEGIES",
    "ClusterError",
    "ClusterJob",
    "ClusterResult",
    "ClusterWriteError",
    "Strategy",
    "default_file_count",
    "run_cluster",
    "source_report",
]

Strategy = Literal["linear", "zorder", "hilbert"]
"""How rows are ordered: by the columns in turn, or along a z-order or Hilbert curve of their ranks."""
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)


class ClusterError(IndexStoreError, ValueError):
    """The table cannot be re-clustered as asked (the message says why and what to do)."""


class ClusterWriteError(IndexStoreError):
    """Writing the copy failed (a full disk, say); nothing was left at the destination."""


@dataclass(frozen=True)
class ClusterResult:
    """What a clustering wrote: the new table and its layout before and after."""

    out: str
    files: int
    rows: int
    seconds: float
    before: pa.Table  # layout_report of the source for the clustering columns
    after: pa.Table  # the same for the copy


@dataclass(frozen=True)
class ClusterJob:
    """What an engine is asked to write: the source's files, in clustered order, into ``folder``."""

    table: IndexedTable
    files: list[str]  # absolute paths of the source's data files
    partitioned: bool  # hive-partitioned: the partition columns are read from the folder names
    by: list[str]  # the clustering columns, as the table spells them
    strategy: Strategy
    rows: int
    per_file: int  # rows per written file
    folder: Path  # where the files go (the staging folder)


Writer = Callable[[ClusterJob], int]  # writes the files, returns how many


def run_cluster(
    writer: Writer,
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    by: Sequence[str],
    strategy: str,
    target_file_mb: float | None = None,
) -> ClusterResult:
    """Check the request, let ``writer`` write the clustered files into a staging folder, index
    them there and move the folder to ``out``; the layout of ``by`` before and after.
    ``target_file_mb`` None: ``default_file_count`` files of about equal size."""
    started = time.perf_counter()
    table = _plain_source(source)
    if strategy not in STRATEGIES:
        raise ClusterError(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    if target_file_mb is not None and not target_file_mb > 0:
        raise ClusterError(f"the target file size must be positive, got {target_file_mb} MB")
    listed = table.reader.list_files()
    if not listed:
        raise ClusterError(f"{table.root} has no data files to cluster")
    files = [os.path.join(table.root, f.path) for f in listed]
    schema, rows = _schema_and_rows(table, files)
    columns = _columns(table, schema, by)
    target = _new_folder(out)
    before = source_report(table, columns)
    total_bytes = sum(f.size for f in listed)
    if target_file_mb is None:
        per_file = max(1, math.ceil(rows / default_file_count([f.size for f in listed])))
    else:
        per_file = max(1, math.ceil(rows * target_file_mb * 1024 * 1024 / max(total_bytes, 1)))
    staging = target.parent / f".{target.name}.staging-{uuid.uuid4().hex[:12]}"
    staging.mkdir()
    try:
        partitioned = len(table.reader.partition_schema()) > 0
        job = ClusterJob(
            table, files, partitioned, columns, cast(Strategy, strategy), rows, per_file, staging
        )
        written = writer(job)
        open_table(staging).build(progress=False)
        if target.exists():
            target.rmdir()  # empty, checked above; the rename needs it gone
        os.rename(staging, target)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise ClusterWriteError(
                f"writing the clustered copy failed: {exc.strerror} (disk full or a file size limit); "
                f"nothing was left at {target}"
            ) from exc
        raise
    after = layout_report(open_table(target).stats(columns, with_blooms=False), columns)
    return ClusterResult(str(target), written, rows, time.perf_counter() - started, before, after)


MIN_DEFAULT_FILE_BYTES = 1024 * 1024


def default_file_count(sizes: Sequence[int], cores: int | None = None) -> int:
    """How many files a clustering writes with no target size: as many as the source's (files of
    its mean size), and at least ``cores x 4`` (this machine's cores by default) so that a source
    of a few large files is still read in parallel, though never files under 1 MiB for that."""
    if cores is None:
        cores = available_cores()
    total = sum(sizes)
    by_cores = min(4 * max(cores, 1), total // MIN_DEFAULT_FILE_BYTES)
    return max(len(sizes), by_cores, 1)


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def source_report(table: IndexedTable, columns: Sequence[str]) -> pa.Table:
    """The layout of ``columns`` in ``table``: from its index, or from an index built in a
    temporary folder when it has none (the source folder is never written to)."""
    with contextlib.suppress(IndexStoreError):
        if table.snapshot().version:
            return layout_report(table.stats(columns, with_blooms=False), columns)
    with tempfile.TemporaryDirectory(prefix="hudi-index-layout-") as scratch:
        temporary = open_table(table.root, index_path=scratch)
        temporary.build(progress=False)
        return layout_report(temporary.stats(columns, with_blooms=False), columns)


def _plain_source(source: str | os.PathLike[str]) -> IndexedTable:
    table = open_table(source)
    if table.reader.read_as != "glob":  # only a folder whose every file is live is rewritten here
        raise ClusterError(
            f"{table.root} is a Hudi table: use Hudi's clustering (hoodie.clustering.* with a z-order or "
            "hilbert layout strategy), which keeps its timeline; this tool writes plain parquet"
        )
    return table


def _schema_and_rows(table: IndexedTable, files: list[str]) -> tuple[pa.Schema, int]:
    """The columns of the files (by name, with the hive partition columns) and their row count."""
    footers = [pq.read_metadata(f) for f in files]
    schema = pa.unify_schemas([m.schema.to_arrow_schema() for m in footers], promote_options="permissive")
    for field in table.reader.partition_schema():
        if field.name not in schema.names:
            schema = schema.append(field)
    return schema, sum(m.num_rows for m in footers)


def _columns(table: IndexedTable, schema: pa.Schema, by: Sequence[str]) -> list[str]:
    """``by`` as the table spells its columns (names ignore case, as in DuckDB)."""
    if isinstance(by, str) or not by:
        raise ClusterError("give the columns to cluster by (--by a,b)")
    names = schema.names
    found: list[str] = []
    for name in by:
        matches = [n for n in names if n.lower() == name.lower()]
        exact = [n for n in matches if n == name]
        if not matches:
            raise ClusterError(f"no column {name!r} in {table.root}; its columns: {', '.join(names)}")
        if len(matches) > 1 and not exact:
            raise ClusterError(f"{name!r} names {' and '.join(matches)}: say which (case matters here)")
        found.append(exact[0] if exact else matches[0])
    if len(set(found)) < len(found):
        raise ClusterError(f"a column is named twice in {list(by)}")
    return found


def _new_folder(out: str | os.PathLike[str]) -> Path:
    target = Path(out).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ClusterError(f"{target} exists and is not an empty folder: give a new folder for the copy")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def write_in_order(batches: pa.RecordBatchReader, folder: Path, per_file: int) -> int:
    """Stream ``batches`` into ``part-NNNNN.parquet`` files of ``per_file`` rows; how many files."""
    files = 0
    writer: pq.ParquetWriter | None = None
    in_file = 0
    try:
        for batch in batches:
            start = 0
            while start < batch.num_rows:
                if writer is None:
                    writer = pq.ParquetWriter(folder / f"part-{files:05d}.parquet", batches.schema)
                    files += 1
                    in_file = 0
                take = min(per_file - in_file, batch.num_rows - start)
                writer.write_batch(batch.slice(start, take))
                start += take
                in_file += take
                if in_file == per_file:
                    writer.close()
                    writer = None
    finally:
        if writer is not None:
            writer.close()
    return files
