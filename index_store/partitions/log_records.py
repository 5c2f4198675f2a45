"""The ``log_records`` partition: per indexed Hudi log file, the records of its data and delete
blocks as written (key, ordering value, delete marker, place in the file, the block's instant) and
its rollback command blocks (target instant, place), so that tagging a merge-on-read table decides
which record of a key a reader keeps without opening the log files.

Nothing here depends on the timeline: which blocks count (valid instants, rollbacks across the
slice's files) is decided at tag time (``tagging.stored_logs``), so a delta commit completing or
rolled back after the build changes the answer without a rebuild. Rows are one of three kinds:
``file`` (the log file's records are here: a file without this row, one whose blocks did not
decode, is read at tag time), ``record`` and ``rollback`` (``key`` then holds the target instant).
The ``ordering`` column takes the type the ordering values of the files written together widen to
(null when the table orders by commit time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import IndexCorruptError
from index_store.hudi_log.records import promoted_type
from index_store.partitions.base import Batch, LiveIndex, live_positions, read_index_file, write_index_file

__all__ = ["LOG_RECORDS_SCHEMA", "LogRecordsPartition", "StoredLogRecords", "read_log_records"]

FILE, RECORD, ROLLBACK = "file", "record", "rollback"

LOG_RECORDS_SCHEMA = pa.schema(
    [
        ("file_idx", pa.int64()),
        ("kind", pa.string()),  # file, record or rollback
        ("key", pa.string()),  # the record key; a rollback's target instant
        ("ordering", pa.null()),  # the ordering values' type varies by table: null here
        ("is_delete", pa.bool_()),
        ("block", pa.int32()),  # the block's position among the file's blocks
        ("record", pa.int32()),  # the record's position in its block
        ("instant", pa.string()),  # the block's instant
    ]
)


@dataclass(frozen=True)
class StoredLogRecords:
    """The stored records of the live index files: ``stored`` per live file (its records are
    here), ``records`` and ``rollbacks`` with ``file_pos`` (the file's position among the live
    files) sorted by it."""

    stored: np.ndarray
    records: pa.Table  # file_pos, key, ordering, is_delete, block, record, instant
    rollbacks: pa.Table  # file_pos, target, block


class LogRecordsPartition:
    """The records of every indexed Hudi log file (``Partition``)."""

    name = "log_records"
    schema = LOG_RECORDS_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        keys = batch.record_keys
        if keys is None or keys.log_records is None:
            return None
        found = [(int(i), r) for i, r in zip(batch.file_idx, keys.log_records, strict=True) if r is not None]
        if not found:
            return None
        kind = promoted_type([r.records.schema.field("ordering").type for _, r in found])
        tables = []
        for idx, files in found:
            records, rollbacks = files.records, files.rollbacks
            ordering = records.column("ordering")
            if kind is not None and ordering.type != kind:
                try:
                    ordering = ordering.cast(kind)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                    continue  # no row: tagging reads this file
            tables.append(_rows(idx, records.set_column(1, "ordering", ordering), rollbacks, kind))
        if not tables:
            return None
        table = pa.concat_tables(tables)
        return write_index_file(root, self.name, [table], table.schema)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        live = index.live.get(self.name, ())
        if not live:
            return None
        rows = _read(root, live)
        _, alive = live_positions(index.file_idx, rows["file_idx"].to_numpy())
        rows = rows.filter(pa.array(alive))
        if not rows.num_rows:
            return None
        return write_index_file(root, self.name, [rows], rows.schema)


def _rows(idx: int, records: pa.Table, rollbacks: pa.Table, kind: pa.DataType | None) -> pa.Table:
    n, m = records.num_rows, rollbacks.num_rows
    ordering_type = kind if kind is not None else pa.null()
    marker = pa.table(
        {
            "key": pa.nulls(1, pa.string()),
            "ordering": pa.nulls(1, ordering_type),
            "is_delete": pa.nulls(1, pa.bool_()),
            "block": pa.nulls(1, pa.int32()),
            "record": pa.nulls(1, pa.int32()),
            "instant": pa.nulls(1, pa.string()),
        }
    )
    body = records.select(["key", "ordering", "is_delete", "block", "record", "instant"])
    commands = pa.table(
        {
            "key": rollbacks.column("target"),
            "ordering": pa.nulls(m, ordering_type),
            "is_delete": pa.nulls(m, pa.bool_()),
            "block": rollbacks.column("block"),
            "record": pa.nulls(m, pa.int32()),
            "instant": pa.nulls(m, pa.string()),
        }
    )
    parts = pa.concat_tables([marker, body.cast(marker.schema), commands.cast(marker.schema)])
    kinds = [FILE] + [RECORD] * n + [ROLLBACK] * m
    parts = parts.add_column(0, "kind", pa.array(kinds, pa.string()))
    return parts.add_column(0, "file_idx", pa.array(np.full(1 + n + m, idx, dtype=np.int64)))


def _read(root: Path, live: Sequence[str]) -> pa.Table:
    tables = [read_index_file(root, rel, LOG_RECORDS_SCHEMA) for rel in live]
    if not tables:
        return LOG_RECORDS_SCHEMA.empty_table()
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        where = str(root / LogRecordsPartition.name)
        raise IndexCorruptError(where, f"ordering values of types that do not mix ({exc})") from None


def read_log_records(root: Path, live: Sequence[str], file_idx: np.ndarray) -> StoredLogRecords:
    """The stored log records of the live files ``file_idx`` (sorted)."""
    rows = _read(root, live)
    pos, alive = live_positions(file_idx, rows["file_idx"].to_numpy())
    kinds = rows["kind"].combine_chunks()
    known = pc.is_in(kinds, value_set=pa.array([FILE, RECORD, ROLLBACK])).to_numpy(zero_copy_only=False)
    if not known.all() or kinds.null_count:
        raise IndexCorruptError(str(root / LogRecordsPartition.name), "rows of an unknown kind")
    rows = rows.append_column("file_pos", pa.array(pos, pa.int64())).filter(pa.array(alive))
    order = pc.sort_indices(rows, sort_keys=[("file_pos", "ascending")])
    rows = rows.take(order)
    kind = rows["kind"].combine_chunks()

    def of(name: str) -> pa.Table:
        return rows.filter(pc.equal(kind, name))

    stored = np.zeros(file_idx.size, dtype=bool)
    stored[of(FILE)["file_pos"].to_numpy()] = True
    records = of(RECORD)
    rollbacks = of(ROLLBACK)
    for table, columns in (
        (records, ("key", "is_delete", "block", "record", "instant")),
        (rollbacks, ("key", "block")),
    ):
        if any(table[c].null_count for c in columns):
            raise IndexCorruptError(str(root / LogRecordsPartition.name), "records with null fields")
    return StoredLogRecords(
        stored,
        records.select(["file_pos", "key", "ordering", "is_delete", "block", "record", "instant"]),
        pa.table(
            {"file_pos": rollbacks["file_pos"], "target": rollbacks["key"], "block": rollbacks["block"]}
        ),
    )
