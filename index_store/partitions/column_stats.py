"""The ``column_stats`` partition: per (column, data file) typed min/max, null, NaN and value counts.

Rows are sorted by (column, file_idx), each column in row groups of its own, keyed as Hudi RFC-37
keys them (``index_store.keys``); bounds are stored in one typed slot per type family
(``index_store.codec``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import ColumnStats, FileStats
from hudi_expr.stats import leaf_columns
from index_store.codec import SLOT_TYPES, decode, encode, slot_of
from index_store.keys import file_key_parts, index_keys
from index_store.partitions.base import Batch, LiveIndex, positions_of, scatter, write_index_file
from index_store.partitions.by_column import rows_by_column

__all__ = ["COLUMN_STATS_SCHEMA", "ColumnStatsPartition", "read_column_stats", "write_column_stats"]

COLUMN_STATS_SCHEMA = pa.schema(
    [("key", pa.string()), ("column", pa.string()), ("file_idx", pa.int64())]
    + [(f"{end}_{slot}", t) for slot, t in SLOT_TYPES.items() for end in ("min", "max")]
    + [
        ("null_count", pa.int64()),
        ("nan_count", pa.int64()),
        ("value_count", pa.int64()),
        ("exact", pa.bool_()),
    ]
)


class ColumnStatsPartition:
    """Per-column statistics of every data file (``Partition``)."""

    name = "column_stats"
    schema = COLUMN_STATS_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        if not len(batch.files):
            return None
        partitions = pa.array([f.partition for f in batch.files], pa.string())
        return write_column_stats(root, batch.file_idx, partitions, batch.stats, batch.exact_columns)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        names = list(leaf_columns(index.schema))
        columns = read_column_stats(root, index.live.get(self.name, ()), index.schema, names, index.file_idx)
        paths, row_counts = index.files["path"].combine_chunks(), index.files["row_count"].combine_chunks()
        stats = FileStats(paths, row_counts, columns, index.schema)
        partitions = index.files["partition"].combine_chunks()
        return write_column_stats(root, index.file_idx, partitions, stats, index.config.exact_columns)


def write_column_stats(
    root: Path, file_idx: np.ndarray, partitions: pa.Array, stats: FileStats, exact: Iterable[str] = ()
) -> str:
    """One row per (column, file) for every leaf column of ``stats`` with storable bounds."""
    exact = set(exact)
    parts = file_key_parts(partitions, stats.files)
    n = stats.num_files
    idx = pa.array(file_idx, pa.int64())
    blocks: list[pa.Table] = []
    for name, t in sorted(leaf_columns(stats.schema).items()):
        slot = slot_of(t)
        cs = stats.column(name)
        if slot is None or cs is None:
            continue
        columns: dict[str, pa.Array] = {
            "key": index_keys(name, parts),
            "column": pa.repeat(pa.scalar(name, pa.string()), n),
            "file_idx": idx,
        }
        for s, st in SLOT_TYPES.items():
            for end, arr in (("min", cs.min), ("max", cs.max)):
                columns[f"{end}_{s}"] = encode(arr, t) if s == slot else pa.nulls(n, st)
        columns["null_count"] = cs.null_count
        columns["nan_count"] = cs.nan_count
        columns["value_count"] = pc.subtract(stats.row_count, cs.null_count)
        columns["exact"] = pa.array(np.full(n, name in exact))
        blocks.append(pa.table(columns, schema=COLUMN_STATS_SCHEMA))
    return write_index_file(root, "column_stats", blocks, COLUMN_STATS_SCHEMA)


def read_column_stats(
    root: Path, live: Sequence[str], schema: pa.Schema, columns: Iterable[str], file_idx: np.ndarray
) -> dict[str, ColumnStats]:
    """Stats of ``columns`` for the files ``file_idx`` (sorted), reading only their row groups."""
    leaves = leaf_columns(schema)
    wanted = sorted(c for c in set(columns) if c in leaves and slot_of(leaves[c]) is not None)
    if not wanted:
        return {}
    slots = sorted({slot for c in wanted if (slot := slot_of(leaves[c])) is not None})
    read_cols = ["file_idx", "null_count", "nan_count"]
    read_cols += [f"{end}_{s}" for s in slots for end in ("min", "max")]
    per_column: dict[str, list[pa.Table]] = {c: [] for c in wanted}
    for rel in live:
        for name, table in rows_by_column(root, rel, COLUMN_STATS_SCHEMA, wanted, read_cols):
            per_column[name].append(table)
    out = {}
    for name in wanted:
        if not per_column[name]:
            continue
        t = leaves[name]
        slot = slot_of(t)
        mine = pa.concat_tables(per_column[name])
        positions = positions_of(file_idx, mine["file_idx"].to_numpy())
        out[name] = ColumnStats(
            min=decode(scatter(mine[f"min_{slot}"], positions), t),
            max=decode(scatter(mine[f"max_{slot}"], positions), t),
            null_count=scatter(mine["null_count"], positions),
            nan_count=scatter(mine["nan_count"], positions),
        )
    return out
