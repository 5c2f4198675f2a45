"""The ``secondary`` partition: which index file holds which column of which base file.

One row per (index type, column, base file): the index file (relative to the index root), the
base file's size and modification time when it was indexed, and the entry counts that estimate a
lookup's selectivity before any index file is opened. Every secondary index commit writes the
whole table anew (it is small: files x indexed columns), so a snapshot has exactly one live
manifest; the index files themselves are listed in the timeline under their type's name, which
is how ``clean`` knows which ones no version uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.partitions.base import Batch, LiveIndex, read_index_file, write_index_file

__all__ = ["MANIFEST", "MANIFEST_SCHEMA", "SecondaryManifestPartition", "read_manifest", "write_manifest"]

MANIFEST = "secondary"
MANIFEST_SCHEMA = pa.schema(
    [
        pa.field("index_type", pa.string(), nullable=False),
        pa.field("column", pa.string(), nullable=False),
        pa.field("file_idx", pa.int64(), nullable=False),
        pa.field("index_file", pa.string(), nullable=False),
        pa.field("data_size", pa.int64(), nullable=False),
        pa.field("data_mtime", pa.int64()),
        pa.field("row_count", pa.int64(), nullable=False),
        pa.field("distinct", pa.int64(), nullable=False),
        pa.field("null_rows", pa.int64(), nullable=False),
        pa.field("pairs", pa.int64(), nullable=False),
        pa.field("max_rows", pa.int64(), nullable=False),
        pa.field("bloom", pa.binary()),  # of the file's distinct keys (hudi_expr.BloomFilter)
        pa.field("version", pa.int64(), nullable=False),
    ]
)


def write_manifest(root: Path, rows: pa.Table) -> str:
    order = pc.sort_indices(
        rows, sort_keys=[("index_type", "ascending"), ("column", "ascending"), ("file_idx", "ascending")]
    )
    return write_index_file(root, MANIFEST, [rows.take(order).cast(MANIFEST_SCHEMA)], MANIFEST_SCHEMA)


def read_manifest(root: Path, live: tuple[str, ...] | list[str]) -> pa.Table:
    """The live manifest rows (empty when no secondary index was ever built)."""
    if not live:
        return MANIFEST_SCHEMA.empty_table()
    parts = []
    for rel in live:
        table = read_index_file(root, rel, MANIFEST_SCHEMA, optional=("bloom",))
        if "bloom" not in table.column_names:  # written before manifests carried blooms: none
            table = table.append_column("bloom", pa.nulls(len(table), pa.binary()))
        parts.append(table.select(MANIFEST_SCHEMA.names).cast(MANIFEST_SCHEMA))
    return pa.concat_tables(parts)


def live_rows(manifest: pa.Table, file_idx: np.ndarray, defined: set[tuple[str, str]]) -> pa.Table:
    """Rows of live base files (``file_idx``) and of defined (type, column) pairs."""
    if not len(manifest):
        return manifest
    keep = pc.is_in(manifest["file_idx"], value_set=pa.array(file_idx, pa.int64())).to_numpy(
        zero_copy_only=False
    )
    pairs = zip(manifest["index_type"].to_pylist(), manifest["column"].to_pylist(), strict=True)
    keep &= np.fromiter((p in defined for p in pairs), dtype=bool, count=len(manifest))
    return manifest.filter(pa.array(keep))


def files_by_type(manifest: pa.Table) -> dict[str, list[str]]:
    """The index files ``manifest`` refers to, per index type (what the timeline lists)."""
    out: dict[str, dict[str, None]] = {}
    for kind, rel in zip(manifest["index_type"].to_pylist(), manifest["index_file"].to_pylist(), strict=True):
        out.setdefault(kind, {})[rel] = None
    return {k: list(v) for k, v in out.items()}


class SecondaryManifestPartition:
    """The manifest as a partition: ordinary commits leave it alone; compaction keeps what is live."""

    name = MANIFEST
    schema = MANIFEST_SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        return None  # index files are built by build_index, never as a side effect of a data commit

    def compact(self, root: Path, index: LiveIndex) -> Mapping[str, list[str]] | None:
        manifest = read_manifest(root, tuple(index.live.get(MANIFEST, ())))
        defined = {(t, c) for d in index.config.secondary_indexes for t in [d.index_type] for c in d.columns}
        rows = live_rows(manifest, index.file_idx, defined)
        if not len(rows) and not len(manifest):
            return None
        return {MANIFEST: [write_manifest(root, rows)], **files_by_type(rows)}
