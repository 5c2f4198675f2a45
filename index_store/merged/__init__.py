"""Merged reads of merge-on-read tables: each file slice's base file with its log files merged
onto it, by hudi-rs (the Hudi project's own reader), never by a row merge written here.

- ``schema.py``: the one schema every read returns (the newest base file's, meta columns
  included), and batches conformed to it.
- ``hudi_rs.py``: hudi-rs imported on first use, asked for the merged rows of one slice.
- ``read.py``: ``read_slices`` (a table) and ``MergedSlices`` (an Arrow stream, new at each scan):
  slices without log files read as plain parquet, slices with log files through hudi-rs.
- ``kept.py``: the file slices pruning keeps, from the files it keeps.
- ``rows.py``: ``IndexedTable.read``/``count``/``exists`` of a merge-on-read table.

``query_type="snapshot"`` (the default) reads the merged rows; ``"read_optimized"`` reads base files
only, as Hudi's read-optimized query does (updates and deletes still in log files are not seen, and
file groups of log files only have no rows).
"""

from index_store.merged.kept import kept_slices, slices_of_files
from index_store.merged.read import (
    QUERY_TYPES,
    MergedSlices,
    QueryType,
    needs_merge,
    query_type_of,
    read_slices,
)
from index_store.merged.schema import conform, merged_schema

__all__ = [
    "QUERY_TYPES",
    "MergedSlices",
    "QueryType",
    "conform",
    "kept_slices",
    "merged_schema",
    "needs_merge",
    "query_type_of",
    "read_slices",
    "slices_of_files",
]
