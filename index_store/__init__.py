"""The metadata index of a table: parquet partitions next to it, an atomic commit log, builders
from parquet footers, table readers (plain parquet, Hudi copy-on-write) and ``IndexedTable``."""

from index_store.config import IndexConfig
from index_store.errors import (
    CommitConflictError,
    IndexCorruptError,
    IndexNotBuiltError,
    IndexNotWritableError,
    IndexStoreError,
    TableFormatError,
    UnsupportedTableError,
)
from index_store.table import IndexedTable, PruneResult, open_table
from index_store.tables.base import DataFile, TableReader
from index_store.timeline import Commit, IndexTimeline, Snapshot

__all__ = [
    "Commit",
    "CommitConflictError",
    "DataFile",
    "IndexConfig",
    "IndexCorruptError",
    "IndexNotBuiltError",
    "IndexNotWritableError",
    "IndexStoreError",
    "IndexTimeline",
    "IndexedTable",
    "PruneResult",
    "Snapshot",
    "TableFormatError",
    "TableReader",
    "UnsupportedTableError",
    "open_table",
]
