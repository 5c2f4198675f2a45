"""What the index and the engines ask a table format: its live data files (as file slices), how its
folders are partitions, its record key, and how an engine reads it. Callers ask these capabilities;
they never test which format a reader is (``TableReaderBase`` gives each a default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pyarrow as pa

from index_store.tables.file_ids import stem_file_ids

if TYPE_CHECKING:
    from index_store.record_key import RecordKeySpec
    from index_store.tables.hudi import HudiTable
    from index_store.tables.hudi_timeline import HudiTimeline

__all__ = [
    "DataFile",
    "FileSlice",
    "Listing",
    "LogMerging",
    "Partitioning",
    "ReadMethod",
    "TableReader",
    "TableReaderBase",
]

ReadMethod = Literal["glob", "files", "slices"]
"""How an engine reads a table's live data:

- ``"glob"``: every visible ``*.parquet`` file under the root is live and holds its rows whole (no
  log says otherwise), so an engine may read the folder; ``folder_columns()`` come from ``k=v``
  folder names;
- ``"files"``: only the listed files are live (a log says which), each holding its rows whole: an
  engine reads the listing (or globs the folder and keeps the listed files);
- ``"slices"``: a file slice's rows are its base file merged with its log files (merge-on-read): an
  engine needs a reader of file slices.
"""


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


@dataclass(frozen=True)
class FileSlice:
    """One file group's live version: its base file and the log files to merge onto it, in the order
    they are merged. Copy-on-write tables and plain directories have no log files; a merge-on-read
    file group may have log files only (no base file yet)."""

    file_id: str  # the file group (Hudi's file id; a format without file groups: the file's path)
    partition: str  # partition path relative to the root ('' when not partitioned)
    base: DataFile | None
    logs: tuple[DataFile, ...] = ()

    def __post_init__(self) -> None:
        if self.base is None and not self.logs:
            raise ValueError(f"file slice {self.file_id!r} has no base file and no log files")

    @property
    def files(self) -> tuple[DataFile, ...]:
        """The base file (if any), then the log files."""
        return (self.base, *self.logs) if self.base is not None else self.logs


@dataclass(frozen=True)
class LogMerging:
    """What merging a file slice's log files onto its base file needs of the table: the properties
    saying how records of a key merge (Hudi's merge mode, ordering field, payload) and the
    timeline, whose instants decide which log blocks count."""

    properties: Mapping[str, str]
    timeline: HudiTimeline


@dataclass(frozen=True)
class Partitioning:
    """How a table's folders hold its partitions."""

    folders: bool = True  # sub-folders are partitions (their files share the partition's values)
    hive_style: bool = False  # partition folders are named ``field=value`` (else the value alone)
    fields: tuple[str, ...] | None = None  # declared partition fields; None: read from folder names


class TableReader(Protocol):
    """A table format: lists what a reader of the table would read right now, and says what callers
    need to know to read, index and tag it."""

    root: str  # absolute path of the table
    kind: str  # its format's name, printed and stored in an index's config ("parquet", "hudi_cow", ...)
    read_as: ReadMethod  # how an engine reads it (see ``ReadMethod``)
    record_key_declared: bool  # the table declares its record key (an explicit key does not apply)
    # A merged row is a base row or a log record as written (no field-by-field merge), so a log
    # file's statistics bound the rows it brings; always True for tables without log files.
    log_records_whole: bool

    def list_files(self) -> list[DataFile]:
        """The live data files: every file of ``file_slices()`` (for Hudi: the latest file slice of
        each file group, as of the latest completed commit, minus replaced file groups; base files
        and log files)."""
        ...

    def listing(self, *, stat: bool = False) -> Listing:
        """``list_files`` as a ``Listing`` (the same object while the reader knows nothing changed);
        ``stat``: every file's size and modification time read now."""
        ...

    def file_slices(self) -> list[FileSlice]:
        """The live file slices: each a base file (or none) and the log files to merge onto it."""
        ...

    def file_ids(self, paths: pa.StringArray) -> pa.StringArray:
        """The file id of each data file (table-relative ``paths``): its file group's name, what
        ``tag`` reports beside the file and the secondary index files its index files under."""
        ...

    def log_merging(self) -> LogMerging | None:
        """What merging its file slices' log files needs (``read_as == "slices"``), or None when
        its files hold their rows whole."""
        ...

    def partition_schema(self) -> pa.Schema:
        """Partition columns (typed) that are not stored in the data files; empty if none."""
        ...

    def partitioning(self) -> Partitioning:
        """How the folders hold partitions (hive-style or not, the fields the table declares)."""
        ...

    def folder_columns(self) -> list[str]:
        """The partition columns an engine reads from ``k=v`` folder names (DuckDB's
        ``hive_partitioning``, Spark's partition discovery); empty when it reads none."""
        ...

    def latest_instant(self) -> str | None:
        """The latest completed data-table instant (Hudi), or None for plain directories."""
        ...

    def record_key_field(self) -> str | None:
        """The column holding record keys (Hudi: ``_hoodie_record_key`` unless configured)."""
        ...

    def record_key_spec(self) -> RecordKeySpec | None:
        """How the table declares its record keys are made, or None when it declares none."""
        ...

    def stray_files(self, limit: int = 4) -> list[str]:
        """Up to ``limit`` files that make an apparently empty folder no table (``NotATableError``);
        empty when it is a table, with or without data."""
        ...

    @property
    def timeline_dir(self) -> str | None:
        """The folder whose modification time moves at every change of the live files (a commit
        log), or None when there is none to watch."""
        ...

    def hudi_table(self) -> HudiTable | None:
        """The Hudi table this reader reads, for what only Hudi keeps (its metadata table); None
        for other formats."""
        ...


class TableReaderBase:
    """Defaults for a ``TableReader``: read by file list, no declared record key, partitions from
    folder names, no timeline. A format defines ``root``, ``kind`` and ``list_files`` and overrides
    what differs."""

    root: str
    kind: str = ""
    read_as: ReadMethod = "files"
    record_key_declared: bool = False
    log_records_whole: bool = True

    def list_files(self) -> list[DataFile]:
        raise NotImplementedError

    def listing(self, *, stat: bool = False) -> Listing:
        """Every file listed (and stat'ed) anew."""
        return Listing(self.list_files())

    def file_slices(self) -> list[FileSlice]:
        """Each live file as a slice of its own, with no log files."""
        return [FileSlice(f.file_group or f.path, f.partition, f) for f in self.list_files()]

    def file_ids(self, paths: pa.StringArray) -> pa.StringArray:
        """Each file a group of its own, named by its file name's stem (``tables.file_ids``)."""
        return stem_file_ids(paths)

    def log_merging(self) -> LogMerging | None:
        return None

    def partition_schema(self) -> pa.Schema:
        return pa.schema([])

    def partitioning(self) -> Partitioning:
        return Partitioning()

    def folder_columns(self) -> list[str]:
        return []

    def latest_instant(self) -> str | None:
        return None

    def record_key_field(self) -> str | None:
        return None

    def record_key_spec(self) -> RecordKeySpec | None:
        return None

    def stray_files(self, limit: int = 4) -> list[str]:
        return []

    @property
    def timeline_dir(self) -> str | None:
        return None

    def hudi_table(self) -> HudiTable | None:
        return None
