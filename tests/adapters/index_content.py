"""The content of an index, partition by partition, in one order: what two builds that wrote it in
different files (a Spark build writes one file per task, a local build one per partition) must
agree on."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store import open_table
from index_store.partitions import REGISTRY


def partition_tables(root: Path, index_root: Path, name: str) -> dict[str, pa.Table]:
    """Every live index file of each partition, read back as written, in one order (a Spark
    build writes one file per task, a local build one per partition)."""
    table = open_table(root, index_path=index_root / name)
    live = table.snapshot().live
    return {
        p: canonical(pa.concat_tables([read_any(table.index_root / rel) for rel in live[p]]))
        for p in REGISTRY.names()
        if live[p]
    }


def read_any(path: Path) -> pa.Table:
    """An index file: parquet, or the record index's Arrow IPC."""
    try:
        return pq.read_table(path)
    except pa.ArrowInvalid:
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all().replace_schema_metadata(None)


def canonical(table: pa.Table) -> pa.Table:
    """``table``'s rows sorted by every column that sorts (files' rows are not ordered alike)."""
    keys = [
        (f.name, "ascending")
        for f in table.schema
        if not (pa.types.is_nested(f.type) or pa.types.is_dictionary(f.type))
    ]
    return table.take(pc.sort_indices(table, sort_keys=keys)).combine_chunks()
