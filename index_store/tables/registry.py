"""The table formats ``open_reader`` knows, asked in order which one a folder holds.

Each format is an object that recognises its folders (``detect``) and opens a reader on them
(``open``); the first that recognises a folder opens it, and the fallback (a plain parquet
directory) takes the rest. Adding a format is one module defining it and one line in
``index_store.tables`` (or ``FORMATS.register(...)`` for one defined elsewhere, as the tests do).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

import pyarrow as pa

from index_store.tables.base import TableReader

__all__ = ["FormatRegistry", "OpenOptions", "TableFormat"]


@dataclass(frozen=True)
class OpenOptions:
    """What the caller of ``open_reader`` asked; a format may refuse what does not apply to it."""

    partition_schema: pa.Schema | None = None  # declared hive partition column types (plain)
    record_key_field: str | None = None  # overrides the record-key column the table implies
    check_files: Literal["watch", "stat"] = "watch"  # how a plain listing is checked for changes


class TableFormat(Protocol):
    """One table format: does a folder hold a table of it, and the reader of one that does."""

    @property
    def name(self) -> str:
        """The format's name (unique in a registry)."""
        ...

    def detect(self, root: str) -> bool:
        """Whether the folder ``root`` (absolute, existing) belongs to this format."""
        ...

    def open(self, root: str, options: OpenOptions) -> TableReader:
        """The reader of the table at ``root``; typed errors (``UnsupportedTableError``,
        ``TableFormatError``) for a table of this format that cannot be read."""
        ...


class FormatRegistry:
    """The formats, in the order they are asked, and the one that takes what none recognises."""

    def __init__(self, *formats: TableFormat, fallback: TableFormat) -> None:
        self._formats: dict[str, TableFormat] = {}
        self.fallback = fallback
        for table_format in formats:
            self.register(table_format)

    def register(self, table_format: TableFormat) -> None:
        """Ask ``table_format`` after those registered before it; its name must be new."""
        if table_format.name in self._formats or table_format.name == self.fallback.name:
            raise ValueError(f"a table format named {table_format.name!r} is registered already")
        self._formats[table_format.name] = table_format

    def unregister(self, name: str) -> None:
        """Forget the format ``name``."""
        del self._formats[name]

    def names(self) -> tuple[str, ...]:
        return (*self._formats, self.fallback.name)

    def __iter__(self) -> Iterator[TableFormat]:
        return iter((*self._formats.values(), self.fallback))

    def detect(self, root: str) -> TableFormat:
        """The first format that recognises ``root``, else the fallback."""
        return next((f for f in self._formats.values() if f.detect(root)), self.fallback)

    def open(self, root: str, options: OpenOptions) -> TableReader:
        """The reader of the table at ``root``, by the format that recognises it."""
        return self.detect(root).open(root, options)
