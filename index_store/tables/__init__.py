"""Table readers: what data files a table has right now (plain parquet directory or Hudi COW)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

import pyarrow as pa

from index_store.errors import NotATableError, TableFormatError, UnsupportedTableError
from index_store.tables.base import DataFile, Listing, TableReader
from index_store.tables.hudi import HudiCowTable
from index_store.tables.plain import PlainParquetTable, require_directory

__all__ = [
    "DataFile",
    "HudiCowTable",
    "Listing",
    "PlainParquetTable",
    "TableReader",
    "list_files",
    "listing",
    "open_reader",
    "require_table",
]


def listing(reader: TableReader, *, stat: bool = False) -> Listing:
    """``reader``'s live files as a ``Listing`` (the same object while a plain directory's reader
    knows nothing changed); ``stat``: every file's size and modification time read now."""
    if isinstance(reader, PlainParquetTable):
        return reader.listing(stat=stat)
    return Listing(reader.list_files())  # other readers list (and stat) everything each time


def list_files(reader: TableReader, *, stat: bool = False) -> list[DataFile]:
    """``reader.list_files()``; ``stat``: every file's size and modification time read now."""
    if isinstance(reader, PlainParquetTable):
        return reader.list_files(stat=stat)
    return reader.list_files()


def require_table(reader: TableReader, files: Sequence[DataFile]) -> None:
    """``NotATableError`` when ``reader``'s folder, whose live ``files`` these are, is no table: a
    plain folder with no parquet file but other files. An empty folder is an empty table, and a
    Hudi table is one with or without data commits."""
    if not files and isinstance(reader, PlainParquetTable):
        found = reader.stray_files()
        if found:
            raise NotATableError(reader.root, found)


def _is_iceberg(root: str) -> bool:
    metadata = os.path.join(root, "metadata")
    if not os.path.isdir(metadata):
        return False
    with os.scandir(metadata) as entries:
        return any(e.name.endswith(".metadata.json") for e in entries)


def _refuse_inside_hudi(root: str) -> None:
    """A folder inside a Hudi table (a partition, or a merge-on-read table's files) is not a table:
    read as plain parquet it would mix every file slice and miss the log files."""
    parent = os.path.dirname(root)
    while parent and parent != os.path.dirname(parent):
        if os.path.isfile(os.path.join(parent, ".hoodie", "hoodie.properties")):
            raise TableFormatError(
                f"{root} is inside the Hudi table at {parent}: open the table's root folder instead"
            )
        parent = os.path.dirname(parent)


def open_reader(
    path: str | os.PathLike[str],
    *,
    partition_schema: pa.Schema | None = None,
    record_key_field: str | None = None,
    check_files: Literal["watch", "stat"] = "watch",
) -> TableReader:
    """The reader for the table at ``path``: Hudi when it has ``.hoodie/hoodie.properties``, else a
    plain parquet directory.

    Raises ``FileNotFoundError`` / ``NotADirectoryError`` for a bad path, ``TableFormatError`` for a
    ``.hoodie`` folder without properties, and ``UnsupportedTableError`` for merge-on-read Hudi
    tables and for Delta Lake / Iceberg tables (whose folders hold files their logs have removed, so
    reading them as plain directories would return wrong results). ``partition_schema`` applies to
    plain directories only; ``record_key_field`` overrides the record-key column of either kind;
    ``check_files`` says how a plain directory's listing is checked (``tables.plain``).
    """
    root = require_directory(path)
    _refuse_inside_hudi(root)
    hoodie = os.path.join(root, ".hoodie")
    # A .hoodie folder holding nothing but this library's index (.hoodie/.index, and indexes a
    # rebuild moved aside: .index.broken-*) is not Hudi's.
    if os.path.isdir(hoodie) and any(not name.startswith(".index") for name in os.listdir(hoodie)):
        names = ("hoodie.properties", "hoodie.properties.backup")
        if not any(os.path.isfile(os.path.join(hoodie, name)) for name in names):
            raise TableFormatError(f"{root} has a .hoodie folder but no .hoodie/hoodie.properties")
        if partition_schema is not None:
            raise ValueError(
                "partition_schema applies to plain parquet directories; a Hudi table's partition "
                "columns come from its hoodie.properties"
            )
        return HudiCowTable(root, record_key_field=record_key_field)
    if os.path.isdir(os.path.join(root, "_delta_log")):
        raise UnsupportedTableError(f"{root} is a Delta Lake table (it has _delta_log): not supported")
    if _is_iceberg(root):
        raise UnsupportedTableError(f"{root} is an Iceberg table (metadata/*.metadata.json): not supported")
    return PlainParquetTable(
        root, partition_schema=partition_schema, record_key_field=record_key_field, check_files=check_files
    )
