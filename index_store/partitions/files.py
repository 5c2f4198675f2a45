"""The ``files`` partition: one row per data file and index version (path, size, modification time,
row count, data instant, slice key), the newest row of a ``file_idx`` winning; a tombstone row
forgets it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.keys import slice_keys
from index_store.partitions.base import Batch, LiveIndex, open_index_file, read_index_file, write_index_file
from index_store.tables.base import DataFile

__all__ = ["FILES_SCHEMA", "LOAD_COLUMNS", "FilesPartition", "LiveRows", "read_files", "read_live_files"]

FILES_SCHEMA = pa.schema(
    [
        ("file_idx", pa.int64()),
        ("path", pa.string()),
        ("partition", pa.string()),
        ("size", pa.int64()),
        ("row_count", pa.int64()),
        ("instant", pa.string()),
        ("deleted", pa.bool_()),
        ("version", pa.int64()),
        ("mtime", pa.int64()),  # ns; null in indexes written before it was recorded
        # Hash of partition and Hudi file id (keys.slice_keys): the files of one file slice (a base
        # file and its log files) share it; null for plain tables and in indexes written before it
        # was recorded (each file a slice of its own).
        ("slice_key", pa.int64()),
    ]
)

# Columns an older index may lack: read as nulls (unknown), never as an error.
_ADDED_LATER = {"mtime", "slice_key"}

# What pruning needs of each file (and what tells a file rewritten since it was indexed).
LOAD_COLUMNS = ("file_idx", "path", "row_count", "deleted", "version", "size", "mtime")


class FilesPartition:
    """The data files the index knows (``Partition``)."""

    name = "files"
    schema = FILES_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        files, gone = batch.files, batch.tombstones
        n = len(files) + len(gone)
        rows = pa.table(
            {
                "file_idx": pa.array(np.concatenate([batch.file_idx, [i for _, i in gone]]).astype(np.int64)),
                "path": pa.array([f.path for f in files] + [p for p, _ in gone], pa.string()),
                "partition": pa.array([f.partition for f in files] + [None] * len(gone), pa.string()),
                "size": pa.array([f.size for f in files] + [None] * len(gone), pa.int64()),
                "row_count": pa.concat_arrays([batch.stats.row_count, pa.nulls(len(gone), pa.int64())]),
                "instant": pa.array([f.instant for f in files] + [None] * len(gone), pa.string()),
                "deleted": pa.array([False] * len(files) + [True] * len(gone)),
                "version": pa.array(np.full(n, batch.version, dtype=np.int64)),
                "mtime": pa.array([f.mtime_ns for f in files] + [None] * len(gone), pa.int64()),
                "slice_key": pa.concat_arrays([_slice_keys(files), pa.nulls(len(gone), pa.int64())]),
            }
        )
        return write_files(root, rows)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        version = pa.array(np.full(len(index.files), index.version, dtype=np.int64))
        rows = index.files.set_column(index.files.schema.get_field_index("version"), "version", version)
        return write_files(root, rows)


def _slice_keys(files: Sequence[DataFile]) -> pa.Int64Array:
    return slice_keys(
        pa.array([f.partition for f in files], pa.string()),
        pa.array([f.file_group for f in files], pa.string()),
    )


def write_files(root: Path, rows: pa.Table) -> str:
    """Rows of the ``files`` partition (schema ``FILES_SCHEMA``)."""
    # Every open reads each path. LZ4 would decode 1M of them about 15 ms faster than zstd, but
    # store them in 38 MB instead of 18 MB: more for a cold open to read than it saves.
    table = rows.select(FILES_SCHEMA.names).cast(FILES_SCHEMA)
    return write_index_file(root, "files", [table], FILES_SCHEMA)


@dataclass(frozen=True)
class LiveRows:
    """Which rows of the ``files`` partition's live index files (read one after another) are the
    live data files, in file_idx order: positions to take, or None when all are, as they stand.
    Kept with what was read, so that more columns of the same rows can be read later."""

    take: pa.Array | None


def read_files(root: Path, live: Sequence[str], columns: Sequence[str] = FILES_SCHEMA.names) -> pa.Table:
    """The live data files: newest row per ``file_idx``, tombstones dropped, sorted by file_idx.

    ``columns`` are read besides ``LOAD_COLUMNS`` (what pruning needs).
    """
    return read_live_files(root, live, [*LOAD_COLUMNS, *columns])[0]


def read_live_files(
    root: Path, live: Sequence[str], columns: Sequence[str], rows: LiveRows | None = None
) -> tuple[pa.Table, LiveRows]:
    """``columns`` of the live data files (as ``read_files``), and which rows those were: give
    ``rows`` back to read other columns of the same rows later (only those columns are read)."""
    wanted = list(dict.fromkeys(columns))
    if rows is not None:
        table = _read(root, live, wanted)
    else:
        table = _read(root, live, list(dict.fromkeys(["file_idx", *wanted])))
        rows = _live_rows(root, live, table["file_idx"])
    if rows.take is not None:
        table = table.take(rows.take)
    return table.select(wanted), rows


def _read(root: Path, live: Sequence[str], columns: list[str]) -> pa.Table:
    schema = pa.schema([FILES_SCHEMA.field(c) for c in columns])
    tables = [
        read_index_file(root, rel, FILES_SCHEMA, columns=columns, optional=_ADDED_LATER) for rel in live
    ]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([_with_nulls(t, schema).select(columns).cast(schema) for t in tables])


def _live_rows(root: Path, live: Sequence[str], file_idx: pa.ChunkedArray) -> LiveRows:
    idx = file_idx.to_numpy()
    # A build or compaction writes each file once, in file_idx order, and no tombstone (the
    # footers' statistics of ``deleted`` say so without reading it): nothing to resolve then.
    if bool(np.all(idx[1:] > idx[:-1])) and not any(_may_hold_tombstones(root, rel) for rel in live):
        return LiveRows(None)
    rows = _read(root, live, ["file_idx", "version", "deleted"])
    # Newest version first within each file_idx, then keep the first row of each, if not deleted.
    order = pc.sort_indices(rows, sort_keys=[("file_idx", "ascending"), ("version", "descending")])
    idx = rows["file_idx"].take(order).to_numpy()
    first = np.ones(len(idx), dtype=bool)
    first[1:] = idx[1:] != idx[:-1]
    deleted = rows["deleted"].take(order).to_numpy(zero_copy_only=False)
    return LiveRows(order.filter(pa.array(first & ~deleted.astype(bool))))


def _may_hold_tombstones(root: Path, rel: str) -> bool:
    """Unless every row group's statistics of ``deleted`` say it is never true."""
    pf = open_index_file(root, rel)
    md = pf.metadata
    column = pf.schema_arrow.get_field_index("deleted")
    if column < 0:
        return True
    for r in range(md.num_row_groups):
        st = md.row_group(r).column(column).statistics
        if st is None or not st.has_min_max or st.max is not False or st.null_count:
            return True
    return False


def _with_nulls(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with a null column for each field of ``schema`` it lacks."""
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(len(table), f.type))
    return table
