"""What the index needs from a table: its live data files, their partitions, and its schema."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

__all__ = ["DataFile", "Listing", "TableReader"]


@dataclass(frozen=True)
class DataFile:
    """One live data file of a table."""

    path: str  # relative to the table root, '/'-separated
    size: int  # bytes
    partition: str = ""  # partition path relative to the root ('' when not partitioned)
    partition_values: dict[str, Any] = field(default_factory=dict)  # typed, per partition column
    instant: str | None = None  # commit instant that wrote it (Hudi), or None
    file_group: str | None = None  # Hudi file id, or None
    mtime_ns: int | None = None  # modification time when listed: a rewrite in place changes it


class Listing:
    """A table's live files as listed once. A reader that can tell nothing changed on disk
    (``PlainParquetTable.listing``) returns the same object again, so what was worked out from
    it (which indexed files are still there, unchanged) can be kept with it."""

    __slots__ = ("_paths", "files")

    def __init__(self, files: Sequence[DataFile]) -> None:
        self.files: tuple[DataFile, ...] = tuple(files)
        self._paths: pa.StringArray | None = None

    @property
    def paths(self) -> pa.StringArray:
        """The files' table-relative paths, in order."""
        if self._paths is None:
            self._paths = pa.array([f.path for f in self.files], pa.string())
        return self._paths


class TableReader(Protocol):
    """A table format: lists what a reader of the table would read right now."""

    root: str  # absolute path of the table
    kind: str  # "parquet" or "hudi_cow"

    def list_files(self) -> list[DataFile]:
        """The live data files (for Hudi: latest file slice of each file group, as of the latest
        completed instant, minus replaced file groups)."""
        ...

    def partition_schema(self) -> pa.Schema:
        """Partition columns (typed) that are not stored in the data files; empty if none."""
        ...

    def latest_instant(self) -> str | None:
        """The latest completed data-table instant (Hudi), or None for plain directories."""
        ...

    def record_key_field(self) -> str | None:
        """The column holding record keys (Hudi: ``_hoodie_record_key`` unless configured)."""
        ...
