"""The metadata index of a table: parquet partitions next to it, an atomic commit log, builders
from parquet footers, table readers (plain parquet, Hudi copy-on-write) and ``IndexedTable``."""

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
from index_store.timeline import Commit, Snapshot, Timeline

__all__ = [
    "Commit",
    "CommitConflictError",
    "DataFile",
    "IndexCorruptError",
    "IndexNotBuiltError",
    "IndexNotWritableError",
    "IndexStoreError",
    "IndexedTable",
    "PruneResult",
    "Snapshot",
    "TableFormatError",
    "TableReader",
    "Timeline",
    "UnsupportedTableError",
    "open_table",
]
