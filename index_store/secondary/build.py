"""Building secondary index files: one per (index type, base file), all its indexed columns.

``index_file_bytes_for`` is the whole computation for one base file, a pure function of the file
and the definition (so Spark executors produce byte-identical files to a local build); the local
build runs it on a thread pool, since pyarrow releases the GIL while it reads and sorts.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from index_store.builder import _column, _parallel, _show, top_field
from index_store.data_files import reading_data_file
from index_store.errors import IndexStaleError
from index_store.partitions.secondary import MANIFEST_SCHEMA
from index_store.secondary.format import FileInfo, bloom_filters, entries_batch, index_file_bytes
from index_store.secondary.kinds import index_kind

__all__ = [
    "BuiltFiles",
    "ComputeIndexFiles",
    "FileTask",
    "build_files",
    "file_id_of",
    "index_file_bytes_for",
    "index_file_path",
    "index_files_bytes_for",
    "staged_path",
    "sync_files",
    "write_durably",
    "write_index_file_for",
]


Counts = dict[str, dict[str, Any]]  # per column: entry counts and the keys' bloom filter bytes
ColumnKey = tuple[str, str]  # (index type, column)


@dataclass(frozen=True)
class FileTask:
    """One base file to index for one index type: which columns, of which types."""

    kind: str
    path: str  # relative to the table root
    size: int
    mtime_ns: int | None
    row_count: int
    file_idx: int  # the index's number of the base file
    file_group: str | None  # Hudi's file id, when the table has file groups
    columns: tuple[str, ...]
    types: tuple[pa.DataType, ...]  # of ``columns`` in the table schema


def file_id_of(path: str, file_group: str | None) -> str:
    """The file id an index file is filed under: Hudi's file group id, else the file name's stem."""
    if file_group:
        return file_group
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "file"


def index_file_path(task: FileTask, version: int) -> str:
    """``<index type>/<instant>/<file id>/<unique>.idx``: RFC-51's layout, the instant being the
    index commit that builds it (a unique name, so two racing builders never write one file)."""
    return f"{task.kind}/{version:020d}/{file_id_of(task.path, task.file_group)}/{uuid.uuid4().hex}.idx"


def index_file_bytes_for(table_root: str, task: FileTask) -> tuple[bytes, dict[str, dict[str, Any]]]:
    """The index file of one base file (read its indexed columns, cut (key, row) pairs, sort),
    and its per-column entry counts."""
    return index_files_bytes_for(table_root, [task])[0]


def index_files_bytes_for(table_root: str, tasks: Sequence[FileTask]) -> list[tuple[bytes, Counts]]:
    """``index_file_bytes_for`` of several base files, each byte for byte the same, computed as
    a batch: per indexed column the (key, row) pairs of every file are sorted together
    (``entries_by_file``), so the per-file fixed costs of encoding and sorting are paid once."""
    return _index_files(table_root, tasks)[0]


def _index_files(
    table_root: str, tasks: Sequence[FileTask]
) -> tuple[list[tuple[bytes, Counts]], dict[ColumnKey, pa.Table]]:
    """``index_files_bytes_for``, and the global dictionary's rows of those files per (index type,
    column): ``key``, ``file_idx``, ``rows`` (the entries' keys and counts, nulls included), as
    ``dictionary.fresh_entries`` would read them back from the files."""
    tables = [_read_task(table_root, task) for task in tasks]
    blocks: list[dict[str, pa.Table]] = [{} for _ in tasks]
    blooms: list[dict[str, bytes]] = [{} for _ in tasks]
    dictionary: dict[ColumnKey, pa.Table] = {}
    # Tasks of one index type and column share a key type: one batch of pairs per such group.
    groups: dict[tuple[str, str, pa.DataType], list[int]] = {}
    for i, task in enumerate(tasks):
        for column, data_type in zip(task.columns, task.types, strict=True):
            groups.setdefault((task.kind, column, data_type), []).append(i)
    for (kind_name, column, data_type), members in groups.items():
        kind = index_kind(kind_name)
        key_type = kind.key_type(data_type)
        # The files' values end to end: one call of the index type cuts every file's pairs.
        columns = []
        for i in members:
            task, table = tasks[i], tables[i]
            # A file written before the column existed holds only NULLs in it.
            present = top_field(table.schema, column) is not None
            values = _column(table, column) if present else pa.nulls(task.row_count, data_type)
            columns.append(values if values.type == data_type else values.cast(data_type))
        starts = np.cumsum([0] + [tasks[i].row_count for i in members])
        keys, rows = kind.pairs(_concat(columns, data_type))
        rows = np.asarray(rows, dtype=np.int64)
        files = np.searchsorted(starts, rows, side="right") - 1
        batch, bounds, by_key = entries_batch(
            _key_typed(keys, key_type), files, rows - starts[files], [tasks[i].row_count for i in members]
        )
        entries = [batch.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
        # Every file's bloom filter at once (each file's filter is its own).
        for i, block, bloom in zip(members, entries, bloom_filters(batch["key"], bounds), strict=True):
            blocks[i][column] = block
            blooms[i][column] = bloom
        # The dictionary's rows of the batch, in key order (``entries_batch``).
        file_idx = np.asarray([tasks[i].file_idx for i in members], dtype=np.int64)
        entry_file = np.repeat(file_idx, np.diff(bounds))
        order = pa.array(by_key)
        part = pa.table(
            {
                "key": batch["key"].take(order).cast(key_type),
                "file_idx": entry_file[by_key],
                "rows": batch["count"].take(order).cast(pa.int64()),
            }
        )
        dictionary[(kind_name, column)] = (
            pa.concat_tables([dictionary[(kind_name, column)], part])
            if (kind_name, column) in dictionary
            else part
        )
    out = []
    for task, per_column, filters in zip(tasks, blocks, blooms, strict=True):
        info = FileInfo(task.path, task.size, task.mtime_ns, task.row_count)
        out.append(index_file_bytes(task.kind, info, {c: per_column[c] for c in task.columns}, filters))
    return out, dictionary


def _read_task(table_root: str, task: FileTask) -> pa.Table:
    """The top-level fields of one base file holding the task's columns (checked unchanged)."""
    path = os.path.join(table_root, task.path)
    with reading_data_file(path, doing="indexing", then="run sync again"):
        # No pre-buffering: for one column of a small file its I/O threads measured 10-20% more
        # CPU than plain reads (neutral on large files).
        pf = pq.ParquetFile(path, pre_buffer=False)
    if pf.metadata.num_rows != task.row_count:
        raise IndexStaleError(
            table_root, f"{task.path} has {pf.metadata.num_rows} rows, the index says {task.row_count}"
        )
    tops = [top_field(pf.schema_arrow, c) for c in task.columns]
    # One thread: batches run on the worker pool already, and for a small file pyarrow's own
    # threads cost more than they save (measured 20% less CPU, half the wall time, 200 files).
    return pf.read(columns=list(dict.fromkeys(t for t in tops if t is not None)), use_threads=False)


def _concat(columns: Sequence[pa.Array], data_type: pa.DataType) -> pa.Array:
    if len(columns) == 1:
        return columns[0]
    if pa.types.is_dictionary(data_type):  # each file has its own dictionary: decode
        return pa.concat_arrays([c.cast(data_type.value_type) for c in columns])
    return pa.concat_arrays(columns)


def _key_typed(keys: pa.Array, key_type: pa.DataType) -> pa.Array:
    """``keys`` cast to the stored key type (a dictionary's values only: it stays encoded)."""
    if pa.types.is_dictionary(keys.type):
        return pa.DictionaryArray.from_arrays(keys.indices, keys.dictionary.cast(key_type))
    return keys.cast(key_type)


# ``compute(table_root, staging, tasks, rels)`` writes the index file of every task at
# ``staging / rels[i]`` (``write_index_file_for``) wherever it likes, and returns their counts in
# order: ``adapters.spark`` runs one Spark task per base file, each writing its own file.
ComputeIndexFiles = Callable[[str, Path, Sequence[FileTask], Sequence[str]], Sequence[Counts]]


def write_index_file_for(table_root: str, index_root: Path, task: FileTask, rel: str) -> Counts:
    """Compute the index file of ``task`` and write it at ``staged_path(index_root, rel)`` all at once (a
    retried or duplicated task rewrites the same bytes, never a torn file); its counts."""
    content, counts = index_file_bytes_for(table_root, task)
    write_durably(staged_path(index_root, rel), content)
    return counts


@dataclass(frozen=True)
class BuiltFiles:
    """What ``build_files`` wrote: the manifest rows of its index files and, when it computed them
    itself, their global dictionary rows per (index type, column) (None: read them back from the
    files, ``dictionary.fresh_entries``)."""

    rows: pa.Table
    dictionary: dict[ColumnKey, pa.Table] | None


def build_files(
    table_root: str,
    index_root: Path,
    tasks: Sequence[FileTask],
    version: int,
    progress: bool | None = None,
    workers: int | None = None,
    compute: ComputeIndexFiles | None = None,
) -> BuiltFiles:
    """Write the index file of every task under ``version``; their manifest rows (and dictionary
    rows, unless ``compute`` wrote them elsewhere)."""
    rels = [index_file_path(task, version) for task in tasks]
    if compute is not None:
        counts = list(compute(table_root, index_root, tasks, rels))
        if len(counts) != len(tasks):
            raise ValueError(f"compute returned {len(counts)} index files for {len(tasks)} base files")
        return BuiltFiles(manifest_rows(tasks, rels, version, counts), None)

    def one(batch: list[tuple[FileTask, str]]) -> tuple[list[Counts], dict[ColumnKey, pa.Table]]:
        results, dictionary = _index_files(table_root, [task for task, _ in batch])
        for (_, rel), (content, _) in zip(batch, results, strict=True):
            staged_path(index_root, rel).write_bytes(content)
        return [counts for _, counts in results], dictionary

    index_root.mkdir(parents=True, exist_ok=True)
    # A thread per core by default (at most 8): the batches hold the GIL part of the time, and
    # twice as many threads as cores measured 8-37% more CPU for no shorter build (2 cores).
    n_workers = workers or min(8, os.cpu_count() or 2)
    batches = _batches(list(zip(tasks, rels, strict=True)), n_workers)
    done = _parallel(one, batches, n_workers, _show(progress), "building secondary index (batches)")
    sync_files(index_root, [staged_path(index_root, rel) for rel in rels])
    parts: dict[ColumnKey, list[pa.Table]] = {}
    for _, dictionary in done:
        for key, part in dictionary.items():
            parts.setdefault(key, []).append(part)
    return BuiltFiles(
        manifest_rows(tasks, rels, version, [counts for batch, _ in done for counts in batch]),
        {key: pa.concat_tables(p) for key, p in parts.items()},
    )


BATCH_ROWS = 1_000_000  # base-file rows sorted together at most (memory: tens of bytes a row)


def _batches(jobs: list[tuple[FileTask, str]], workers: int) -> list[list[tuple[FileTask, str]]]:
    """Consecutive runs of jobs of at most ``BATCH_ROWS`` rows (a bigger file alone), and at
    least ``workers`` (and 4) runs when there are that many files, so every worker has one."""
    total = sum(task.row_count for task, _ in jobs)
    limit = max(1, min(BATCH_ROWS, -(-total // max(workers, 4))))  # _parallel: 4 items or more
    out: list[list[tuple[FileTask, str]]] = []
    rows = 0
    for job in jobs:
        if not out or rows + job[0].row_count > limit:
            out.append([])
            rows = 0
        out[-1].append(job)
        rows += job[0].row_count
    return out


def staged_path(staging: Path, rel: str) -> Path:
    """Where the index file ``rel`` is written before its commit: flat in ``staging`` under its
    unique name (no folder per base file to make and remove: folders cost more than the files)."""
    return staging / rel.rsplit("/", 1)[-1]


def sync_files(folder: Path, paths: Sequence[Path]) -> None:
    """Make the written ``paths`` (in ``folder``) durable before a commit names them: one
    ``syncfs`` of their file system on Linux (about ten times faster than an ``fsync`` per
    file for a few hundred files), else an ``fsync`` each."""
    if _syncfs(folder):
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _syncfs(folder: Path) -> bool:
    """``syncfs(2)`` of the file system holding ``folder``; False where there is none or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(folder, os.O_RDONLY)
    except (OSError, AttributeError):
        return False
    try:
        return bool(libc.syncfs(fd) == 0)
    except AttributeError:
        return False
    finally:
        os.close(fd)


def write_durably(path: Path, content: bytes) -> None:
    """Write ``content`` at ``path`` all at once: a temporary file renamed over it, so that two
    attempts of one task (a retry, a speculative copy) writing the same bytes never tear it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}-{path.name}")
    with open(tmp, "wb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def manifest_rows(
    tasks: Sequence[FileTask],
    rels: Sequence[str],
    version: int,
    counts: Sequence[Mapping[str, Mapping[str, Any]]],
) -> pa.Table:
    """Manifest rows (one per task and column) for freshly built files."""
    records = []
    for task, rel, per_column in zip(tasks, rels, counts, strict=True):
        for column in task.columns:
            c = per_column[column]
            records.append(
                {
                    "index_type": task.kind,
                    "column": column,
                    "file_idx": task.file_idx,
                    "index_file": rel,
                    "data_size": task.size,
                    "data_mtime": task.mtime_ns,
                    "row_count": task.row_count,
                    "distinct": c["distinct"],
                    "null_rows": c["null_rows"],
                    "pairs": c["pairs"],
                    "max_rows": c["max_rows"],
                    "bloom": c.get("bloom"),
                    "version": version,
                }
            )
    return pa.Table.from_pylist(records, schema=MANIFEST_SCHEMA)
