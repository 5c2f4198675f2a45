"""The ``record_keys`` partition: per data file, its smallest and largest record key and a Hudi
bloom filter of its keys (RFC-37's key ranges and bloom filters, in one row per file).

Filters are stored as Hudi serializes them (``HudiBloomFilter.to_bytes``), so the footer filters
of a Hudi table are kept bit-exact and the ones this library writes for other tables are readable
by Hudi's own code. Tagging reads this partition only; it never opens a data file's footer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from index_store.errors import IndexCorruptError
from index_store.hudi_bloom import HudiBloomFilter, HudiBloomFilterSet, HudiBloomFormatError
from index_store.keys import file_key_parts, index_keys
from index_store.partitions.base import (
    Batch,
    FileKeys,
    LiveIndex,
    positions_of,
    read_index_file,
    scatter,
    write_index_file,
)

__all__ = [
    "RECORD_KEYS_SCHEMA",
    "KeyFilters",
    "RecordKeysPartition",
    "read_record_key_rows",
    "read_record_keys",
]

RECORD_KEYS_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("file_idx", pa.int64()),
        ("min_key", pa.string()),
        ("max_key", pa.string()),
        ("bloom", pa.large_binary()),  # Hudi's serialized filter; null: none (any key may be there)
        ("bloom_type", pa.string()),  # SIMPLE or DYNAMIC_V0
    ]
)

# The file part of an RFC-37 key is hashed under this pseudo column name.
_KEY_COLUMN = "_hoodie_record_key"


@dataclass(frozen=True)
class KeyFilters:
    """The key bounds and filters of N data files, aligned with the index's live files."""

    min_key: pa.StringArray  # null: no key bounds (a file without keys, or none recorded)
    max_key: pa.StringArray
    filters: HudiBloomFilterSet
    recorded: np.ndarray  # per file: does the index hold key information for it at all?
    bloom_types: pa.StringArray
    # What readers derive from these once and reuse for every batch of keys (sorted bounds).
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.min_key)


class RecordKeysPartition:
    """Key bounds and Hudi bloom filters of every data file of a keyed table (``Partition``)."""

    name = "record_keys"
    schema = RECORD_KEYS_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        if batch.record_keys is None or not len(batch.files):
            return None
        partitions = pa.array([f.partition for f in batch.files], pa.string())
        unread = batch.record_keys.unread
        recorded = None if unread is None else ~unread  # no row: nothing known of the file's keys
        keys = batch.record_keys
        return _write(root, batch.file_idx, partitions, batch.stats.files, keys, recorded=recorded)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        live = index.live.get(self.name, ())
        if not live:
            return None
        rows = read_record_key_rows(root, live, index.file_idx)
        keys = FileKeys(
            rows["min_key"],
            rows["max_key"],
            [None] * len(rows),  # unused: the serialized filters are copied as they are
        )
        return _write(
            root,
            index.file_idx,
            index.files["partition"].combine_chunks(),
            index.files["path"].combine_chunks(),
            keys,
            serialized=(rows["bloom"], rows["bloom_type"]),
            recorded=rows["recorded"].to_numpy(zero_copy_only=False),
        )


def _write(
    root: Path,
    file_idx: np.ndarray,
    partitions: pa.Array,
    paths: pa.Array,
    keys: FileKeys,
    serialized: tuple[pa.Array, pa.Array] | None = None,
    recorded: np.ndarray | None = None,
) -> str:
    if serialized is None:
        blooms = pa.array([None if f is None else f.to_bytes() for f in keys.filters], pa.large_binary())
        types = pa.array([None if f is None else f.type_code for f in keys.filters], pa.string())
    else:
        blooms, types = serialized
    rows = np.arange(len(file_idx)) if recorded is None else np.flatnonzero(recorded)
    take = pa.array(rows, pa.int64())
    table = pa.table(
        {
            "key": index_keys(_KEY_COLUMN, file_key_parts(partitions, paths)[rows]),
            "file_idx": pa.array(np.asarray(file_idx)[rows], pa.int64()),
            "min_key": keys.min_key.take(take),
            "max_key": keys.max_key.take(take),
            "bloom": blooms.take(take),
            "bloom_type": types.take(take),
        },
        schema=RECORD_KEYS_SCHEMA,
    )
    return write_index_file(root, RecordKeysPartition.name, [table], RECORD_KEYS_SCHEMA)


def read_record_key_rows(root: Path, live: Sequence[str], file_idx: np.ndarray) -> pa.Table:
    """One row per file of ``file_idx`` (the newest written): ``min_key``, ``max_key``, ``bloom``
    (serialized), ``bloom_type`` and ``recorded`` (False, with nulls, for files it has nothing on)."""
    tables = [read_index_file(root, rel, RECORD_KEYS_SCHEMA) for rel in live]
    rows = pa.concat_tables(tables) if tables else RECORD_KEYS_SCHEMA.empty_table()
    positions = positions_of(file_idx, rows["file_idx"].to_numpy())
    out = {name: scatter(rows[name], positions) for name in ("min_key", "max_key", "bloom", "bloom_type")}
    recorded = np.ones(len(file_idx), dtype=bool) if positions is None else positions >= 0
    return pa.table({**out, "recorded": pa.array(recorded)})


def read_record_keys(root: Path, live: Sequence[str], file_idx: np.ndarray) -> KeyFilters:
    """Key bounds and filters of the files ``file_idx`` (in that order)."""
    rows = read_record_key_rows(root, live, file_idx)
    blooms = rows["bloom"].combine_chunks()
    types = rows["bloom_type"].combine_chunks()
    filters: list[HudiBloomFilter | None] = []
    data, kinds = blooms.to_pylist(), types.to_pylist()
    for raw, kind in zip(data, kinds, strict=True):
        if raw is None:
            filters.append(None)
            continue
        try:
            filters.append(HudiBloomFilter.from_bytes(raw, kind))
        except (HudiBloomFormatError, ValueError) as exc:
            raise IndexCorruptError(
                str(root / RecordKeysPartition.name), f"bad key bloom filter ({exc})"
            ) from None
    return KeyFilters(
        rows["min_key"].combine_chunks(),
        rows["max_key"].combine_chunks(),
        HudiBloomFilterSet(filters),
        rows["recorded"].to_numpy(zero_copy_only=False),
        types,
    )
