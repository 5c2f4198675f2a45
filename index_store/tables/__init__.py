"""Table readers: what data files a table has right now, by format (plain parquet directory, Hudi),
each format found through ``FORMATS`` (``tables.registry``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

import pyarrow as pa

# The errors readers raise, importable from here as before.
from index_store.errors import NotATableError, TableFormatError, UnsupportedTableError
from index_store.tables.base import (
    DataFile,
    FileSlice,
    Listing,
    Partitioning,
    ReadMethod,
    TableReader,
    TableReaderBase,
)
from index_store.tables.hudi import HUDI_FORMAT, HudiCowTable, HudiTable
from index_store.tables.plain import PLAIN_FORMAT, PlainParquetTable, require_directory
from index_store.tables.refused import DELTA_FORMAT, ICEBERG_FORMAT
from index_store.tables.registry import FormatRegistry, OpenOptions, TableFormat
from index_store.tables.rows import reads_whole_files, require_file_reads

__all__ = [
    "FORMATS",
    "DataFile",
    "FileSlice",
    "FormatRegistry",
    "HudiCowTable",
    "HudiTable",
    "Listing",
    "NotATableError",
    "OpenOptions",
    "Partitioning",
    "PlainParquetTable",
    "ReadMethod",
    "TableFormat",
    "TableFormatError",
    "TableReader",
    "TableReaderBase",
    "UnsupportedTableError",
    "list_files",
    "listing",
    "open_reader",
    "reads_whole_files",
    "require_file_reads",
    "require_table",
]

# The formats open_reader asks, in order; a folder none of them recognises is plain parquet.
FORMATS = FormatRegistry(HUDI_FORMAT, DELTA_FORMAT, ICEBERG_FORMAT, fallback=PLAIN_FORMAT)


def listing(reader: TableReader, *, stat: bool = False) -> Listing:
    """``reader``'s live files as a ``Listing`` (the same object while a reader that can tell
    knows nothing changed); ``stat``: every file's size and modification time read now."""
    return reader.listing(stat=stat)


def list_files(reader: TableReader, *, stat: bool = False) -> list[DataFile]:
    """``reader.list_files()``; ``stat``: every file's size and modification time read now."""
    return list(reader.listing(stat=stat).files)


def require_table(reader: TableReader, files: Sequence[DataFile]) -> None:
    """``NotATableError`` when ``reader``'s folder, whose live ``files`` these are, is no table: a
    plain folder with no parquet file but other files. An empty folder is an empty table, and a
    Hudi table is one with or without data commits."""
    if not files:
        found = reader.stray_files()
        if found:
            raise NotATableError(reader.root, found)


def open_reader(
    path: str | os.PathLike[str],
    *,
    partition_schema: pa.Schema | None = None,
    record_key_field: str | None = None,
    check_files: Literal["watch", "stat"] = "watch",
) -> TableReader:
    """The reader for the table at ``path``, by the first of ``FORMATS`` that recognises it: Hudi
    when it has ``.hoodie/hoodie.properties``, else a plain parquet directory.

    Raises ``FileNotFoundError`` / ``NotADirectoryError`` for a bad path, ``TableFormatError`` for a
    ``.hoodie`` folder without properties or a folder inside a Hudi table, and
    ``UnsupportedTableError`` for Delta Lake / Iceberg tables (whose folders hold files their logs
    have removed, so reading them as plain directories would return wrong results). A merge-on-read
    Hudi table opens, with ``read_as == "slices"`` (``tables.rows`` refuses reads of its rows).
    ``partition_schema`` applies to plain directories only; ``record_key_field`` overrides the
    record-key column of either kind; ``check_files`` says how a plain directory's listing is
    checked (``tables.plain``).
    """
    root = require_directory(path)
    return FORMATS.open(root, OpenOptions(partition_schema, record_key_field, check_files))
