"""The index's partitions, each a plug-in module (``base.Partition``), and their registry.

``REGISTRY`` lists the partitions every commit offers a batch of newly indexed files to, and that
compaction and cleaning go through. Adding a partition is one module defining it and one line
here (or ``REGISTRY.register(...)`` for one defined elsewhere, as the tests do).
"""

from __future__ import annotations

from collections.abc import Iterator

from index_store.partitions.base import INDEX_FILE_SUFFIX, Batch, LiveIndex, Partition
from index_store.partitions.bloom_filters import (
    BLOOM_SCHEMA,
    BLOOM_TYPE,
    BloomFiltersPartition,
    read_blooms,
    write_blooms,
)
from index_store.partitions.by_column import row_groups_holding
from index_store.partitions.column_stats import (
    COLUMN_STATS_SCHEMA,
    ColumnStatsPartition,
    read_column_stats,
    write_column_stats,
)
from index_store.partitions.files import (
    FILES_SCHEMA,
    LOAD_COLUMNS,
    FilesPartition,
    LiveRows,
    read_files,
    read_live_files,
    write_files,
)
from index_store.partitions.log_records import (
    LOG_RECORDS_SCHEMA,
    LogRecordsPartition,
    StoredLogRecords,
    read_log_records,
)
from index_store.partitions.record_index import (
    RECORD_INDEX_SCHEMA,
    RecordIndexPartition,
    lookup_record_keys,
    read_record_index,
)
from index_store.partitions.record_keys import (
    RECORD_KEYS_SCHEMA,
    KeyFilters,
    RecordKeysPartition,
    read_record_keys,
)
from index_store.partitions.secondary import MANIFEST_SCHEMA, SecondaryManifestPartition, read_manifest
from index_store.partitions.secondary_dict import SecondaryDictionaryPartition

__all__ = [
    "BLOOM_SCHEMA",
    "BLOOM_TYPE",
    "COLUMN_STATS_SCHEMA",
    "FILES_SCHEMA",
    "INDEX_FILE_SUFFIX",
    "LOAD_COLUMNS",
    "LOG_RECORDS_SCHEMA",
    "MANIFEST_SCHEMA",
    "RECORD_INDEX_SCHEMA",
    "RECORD_KEYS_SCHEMA",
    "REGISTRY",
    "Batch",
    "KeyFilters",
    "LiveIndex",
    "LiveRows",
    "LogRecordsPartition",
    "Partition",
    "Registry",
    "StoredLogRecords",
    "lookup_record_keys",
    "read_blooms",
    "read_column_stats",
    "read_files",
    "read_live_files",
    "read_log_records",
    "read_manifest",
    "read_record_index",
    "read_record_keys",
    "row_groups_holding",
    "write_blooms",
    "write_column_stats",
    "write_files",
]


class Registry:
    """The partitions of an index, in the order a commit writes them (``files`` first)."""

    def __init__(self, *partitions: Partition) -> None:
        self._partitions: dict[str, Partition] = {}
        for partition in partitions:
            self.register(partition)

    def register(self, partition: Partition) -> None:
        """Add ``partition``; its name must be new (the name is its folder in the index)."""
        if partition.name in self._partitions:
            raise ValueError(f"an index partition named {partition.name!r} is registered already")
        self._partitions[partition.name] = partition

    def unregister(self, name: str) -> None:
        """Forget the partition ``name`` (files it wrote stay until a compaction drops them)."""
        del self._partitions[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self._partitions)

    def __iter__(self) -> Iterator[Partition]:
        return iter(tuple(self._partitions.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._partitions


REGISTRY = Registry(
    FilesPartition(),
    ColumnStatsPartition(),
    BloomFiltersPartition(),
    RecordKeysPartition(),
    RecordIndexPartition(),
    LogRecordsPartition(),
    SecondaryManifestPartition(),
    SecondaryDictionaryPartition(),
)
