"""The ``bloom_filters`` partition: one serialized bloom filter per (bloom column, data file)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import BloomFilter, BloomFilterSet
from index_store.errors import IndexCorruptError
from index_store.keys import file_key_parts, index_keys
from index_store.partitions.base import Batch, LiveIndex, positions_of, scatter, write_index_file
from index_store.partitions.by_column import rows_by_column

__all__ = ["BLOOM_SCHEMA", "BLOOM_TYPE", "BloomFiltersPartition", "read_blooms", "write_blooms"]

BLOOM_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("column", pa.string()),
        ("file_idx", pa.int64()),
        ("bloom", pa.large_binary()),
        ("type", pa.string()),
    ]
)

BLOOM_TYPE = "hudi_expr.bloom.v1"


class BloomFiltersPartition:
    """Bloom filters of the index's bloom columns (``Partition``)."""

    name = "bloom_filters"
    schema = BLOOM_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        if not len(batch.files) or not batch.blooms:
            return None
        partitions = pa.array([f.partition for f in batch.files], pa.string())
        return write_blooms(root, batch.file_idx, partitions, batch.stats.files, batch.blooms)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        columns = index.config.bloom_columns
        blooms = read_blooms(root, index.live.get(self.name, ()), columns, index.file_idx)
        return write_blooms(
            root,
            index.file_idx,
            index.files["partition"].combine_chunks(),
            index.files["path"].combine_chunks(),
            {c: [b[i] for i in range(len(b))] for c, b in blooms.items()},
        )


def write_blooms(
    root: Path,
    file_idx: np.ndarray,
    partitions: pa.Array,
    files: pa.Array,
    blooms: Mapping[str, Sequence[BloomFilter | None]],
) -> str:
    """One row per (column, file) that has a bloom filter."""
    parts = file_key_parts(partitions, files)
    blocks = []
    for name in sorted(blooms):
        filters = blooms[name]
        have = np.array([b is not None for b in filters], dtype=bool)
        rows = np.flatnonzero(have)
        blocks.append(
            pa.table(
                {
                    "key": index_keys(name, parts[rows]),
                    "column": pa.array([name] * len(rows), pa.string()),
                    "file_idx": pa.array(np.asarray(file_idx)[rows], pa.int64()),
                    "bloom": pa.array([b.to_bytes() for b in filters if b is not None], pa.large_binary()),
                    "type": pa.array([BLOOM_TYPE] * len(rows), pa.string()),
                },
                schema=BLOOM_SCHEMA,
            )
        )
    return write_index_file(root, "bloom_filters", blocks, BLOOM_SCHEMA)


def read_blooms(
    root: Path, live: Sequence[str], columns: Iterable[str], file_idx: np.ndarray
) -> dict[str, BloomFilterSet]:
    """Bloom filters of ``columns`` for the files ``file_idx`` (a file without one: None)."""
    wanted = sorted(set(columns))
    per_column: dict[str, list[pa.Table]] = {c: [] for c in wanted}
    for rel in live:
        for name, table in rows_by_column(root, rel, BLOOM_SCHEMA, wanted, ["file_idx", "bloom", "type"]):
            per_column[name].append(table.filter(pc.equal(table["type"], BLOOM_TYPE)))
    out: dict[str, BloomFilterSet] = {}
    for name in wanted:
        if not per_column[name]:
            continue
        mine = pa.concat_tables(per_column[name])
        serialized = scatter(mine["bloom"], positions_of(file_idx, mine["file_idx"].to_numpy()))
        try:
            out[name] = BloomFilterSet.from_arrow(serialized)
        except ValueError as exc:
            raise IndexCorruptError(str(root / "bloom_filters"), f"bad bloom filter ({exc})") from None
    return out
