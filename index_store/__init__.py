"""The metadata index of a table: parquet partitions next to it, an atomic commit log, builders
from parquet footers, table readers (plain parquet, Hudi copy-on-write and merge-on-read) and
``IndexedTable``."""

from index_store.config import IndexConfig
from index_store.errors import (
    CommitConflictError,
    DuplicateKeyError,
    HFileCorruptError,
    HFileError,
    IndexCorruptError,
    IndexDefinitionError,
    IndexNotBuiltError,
    IndexNotWritableError,
    IndexSourceError,
    IndexStaleError,
    IndexStoreError,
    MergedReaderMissingError,
    MergedReadError,
    MetadataOutOfStepError,
    MetadataPartitionUnavailableError,
    MetadataTableError,
    NotATableError,
    PartitionPathError,
    RecordKeyError,
    TableFormatError,
    UnsupportedHFileError,
    UnsupportedTableError,
)
from index_store.secondary import IndexDefinition, UseRules
from index_store.secondary.api import IndexStatus, RowSelection
from index_store.table import Freshness, IndexedTable, PrunedSlice, PruneResult, open_table
from index_store.tables.base import DataFile, TableReader
from index_store.timeline import Commit, IndexTimeline, Snapshot

__all__ = [
    "Commit",
    "CommitConflictError",
    "DataFile",
    "DuplicateKeyError",
    "Freshness",
    "HFileCorruptError",
    "HFileError",
    "IndexConfig",
    "IndexCorruptError",
    "IndexDefinition",
    "IndexDefinitionError",
    "IndexNotBuiltError",
    "IndexNotWritableError",
    "IndexSourceError",
    "IndexStaleError",
    "IndexStatus",
    "IndexStoreError",
    "IndexTimeline",
    "IndexedTable",
    "MergedReadError",
    "MergedReaderMissingError",
    "MetadataOutOfStepError",
    "MetadataPartitionUnavailableError",
    "MetadataTableError",
    "NotATableError",
    "PartitionPathError",
    "PruneResult",
    "PrunedSlice",
    "RecordKeyError",
    "RowSelection",
    "Snapshot",
    "TableFormatError",
    "TableReader",
    "UnsupportedHFileError",
    "UnsupportedTableError",
    "UseRules",
    "open_table",
]
