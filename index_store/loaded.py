"""``LoadedVersion``: what a reader keeps of one index version, each cache a typed field.

Everything here belongs to one version and is dropped with it: the live files, the column stats
and bloom filters read so far, the record key filters, the partition layout, the secondary index
manifest and opened index files. ``OnDisk`` is one listing of the table against one version, and
``Candidates`` the file pruning row selection starts from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import BloomFilterSet, ColumnStats, Expression, FileStats, might_match
from index_store.errors import IndexCorruptError, require_built
from index_store.partitions import (
    LOAD_COLUMNS,
    StoredLogRecords,
    read_live_files,
    read_log_records,
    read_record_keys,
)
from index_store.partitions.record_keys import KeyFilters
from index_store.secondary.definitions import IndexDefinition
from index_store.secondary.format import IndexFile
from index_store.slices import SliceGroups
from index_store.tables.base import DataFile, Listing
from index_store.tagging.partitions import PartitionLayout
from index_store.timeline import Snapshot

if TYPE_CHECKING:
    from index_store.sources import SourcedStats

__all__ = ["Candidates", "LoadedVersion", "OnDisk", "SecondaryCache", "compare_with_disk"]

# What pruning reads of the ``files`` partition when an index version is opened; the rest of
# ``LOAD_COLUMNS`` (sizes and times, to compare with the disk) is read on first use.
OPEN_COLUMNS = ("file_idx", "path", "row_count")

# ``stats()`` answers by (columns, with_blooms): everything in them belongs to one version.
StatsKey = tuple[tuple[str, ...], bool]


@dataclass
class SecondaryCache:
    """The secondary index's state of one version, read on first use."""

    manifest: pa.Table | None = None  # usable manifest rows (live, unchanged base files)
    manifest_error: IndexCorruptError | None = None  # the manifest was read past (on_corrupt="scan")
    opened: dict[str, IndexFile] = field(default_factory=dict)  # index files opened, by path
    # Per index type, per column: the bloom filters of each live file's keys (None: not indexed).
    blooms: dict[str, dict[str, BloomFilterSet | None]] = field(default_factory=dict)
    # Per (index type, column): the usable manifest's rows of that column (the cost's counts).
    by_column: dict[tuple[str, str], pa.Table] = field(default_factory=dict)
    # The global term dictionaries (``index_store.secondary.dictionary``), by (index type, column);
    # None: not read yet.
    dictionaries: dict[tuple[str, str], Any] | None = None
    # Per (index type, column): the manifest's facts aligned with the live files (``ColumnFacts``
    # in ``index_store.secondary.api``): a query takes its candidates' rows of them.
    facts: dict[tuple[str, str], Any] = field(default_factory=dict)
    # Per (index type, column): the dictionary read and, per live file, whether it covers the file.
    covered: dict[tuple[str, str], tuple[Any, np.ndarray]] = field(default_factory=dict)
    # The index definitions narrowed to the columns with an index file (what row selection plans).
    definitions: list[IndexDefinition] | None = None
    # Per (index type, column): the one-column schema its keys bind to.
    key_schemas: dict[tuple[str, str], pa.Schema] = field(default_factory=dict)


class LoadedVersion:
    """What a reader keeps of one index version: its files and the column stats loaded so far."""

    def __init__(self, root: Path, snap: Snapshot, columns: Sequence[str] = LOAD_COLUMNS) -> None:
        self.root = root
        self.snap = snap
        self._wanted = list(dict.fromkeys([*LOAD_COLUMNS, *columns]))
        first = OPEN_COLUMNS if tuple(columns) == LOAD_COLUMNS else self._wanted
        self._files, self._rows = read_live_files(root, snap.live["files"], first)
        self.file_idx: np.ndarray = self._files["file_idx"].to_numpy()
        self.paths: pa.StringArray = self._files["path"].combine_chunks()
        self.row_count: pa.Array = self._files["row_count"].combine_chunks()
        self.file_rows: np.ndarray = self.row_count.to_numpy(zero_copy_only=False)  # row_count as numpy
        self.schema_only = FileStats([], [], {}, snap.schema)  # what binding a predicate needs
        self.stats_made: dict[StatsKey, SourcedStats] = {}  # per query: every source's answer
        # The last ``might_match`` mask handed on (``might_match``), with what it was computed of.
        self._handed: tuple[Expression, FileStats, np.ndarray] | None = None
        self.columns: dict[str, ColumnStats] = {}
        self.blooms: dict[str, BloomFilterSet] = {}
        self.key_filters: KeyFilters | None = None
        self._log_records: StoredLogRecords | None = None
        self.layout: PartitionLayout | None = None  # of the partition paths, once tagging asked
        self.secondary = SecondaryCache()
        self._partitions: pa.StringArray | None = None
        self._slice_keys: pa.Int64Array | None = None
        self._slices: SliceGroups | None = None

    @property
    def version(self) -> int:
        return self.snap.version

    def might_match(self, bound: Expression, stats: FileStats, hand_on: bool = False) -> np.ndarray:
        """``hudi_expr.might_match`` of ``bound`` over ``stats`` as a read-only numpy mask.
        ``hand_on``: evaluate it and keep it for the next call without ``hand_on``, which takes it
        if it asks the same of the same stats object: ``prune`` hands its mask on to the row
        selection the SQL adapter makes next (one pruning per query; a mask is used at most twice,
        and never by a later query's ``prune``)."""
        handed, self._handed = self._handed, None
        if not hand_on and handed is not None and handed[1] is stats and handed[0] == bound:
            return handed[2]
        mask = might_match(bound, stats).to_numpy(zero_copy_only=False)
        mask.flags.writeable = False
        if hand_on:
            self._handed = (bound, stats, mask)
        return mask

    def require_built(self, table: str) -> LoadedVersion:
        """This version, or ``IndexNotBuiltError`` when the index has none yet."""
        require_built(self.snap.version, table)
        return self

    @property
    def files(self) -> pa.Table:
        """The ``files`` partition's rows of the live files (``LOAD_COLUMNS`` and the columns asked
        for), the columns not read when the version was opened read now, of the same rows."""
        missing = [c for c in self._wanted if c not in self._files.column_names]
        if missing:
            more, _ = read_live_files(self.root, self.snap.live["files"], missing, self._rows)
            for name in missing:
                self._files = self._files.append_column(more.schema.field(name), more[name])
        return self._files

    def partitions(self, root: Path | None = None) -> pa.StringArray:
        """Each live file's partition path (read on first use: pruning does not need it)."""
        if self._partitions is None:
            if "partition" in self._files.column_names:
                column = self._files["partition"]
            else:
                where = self.root if root is None else root
                read, _ = read_live_files(where, self.snap.live["files"], ["partition"], self._rows)
                column = read["partition"]
            self._partitions = column.combine_chunks().cast(pa.string())
        return self._partitions

    def slice_keys(self) -> pa.Int64Array:
        """Each live file's slice key (``keys.slice_keys``; null: a slice of its own), read on
        first use."""
        if self._slice_keys is None:
            read, _ = read_live_files(self.root, self.snap.live["files"], ["slice_key"], self._rows)
            self._slice_keys = read["slice_key"].combine_chunks().cast(pa.int64())
        return self._slice_keys

    def slice_groups(self) -> SliceGroups:
        """Which live files share a file slice (read and grouped on first use)."""
        if self._slices is None:
            self._slices = SliceGroups(self.paths, self.slice_keys())
        return self._slices

    def record_key_filters(self) -> KeyFilters:
        """The key bounds and filters of the live files (read on first use)."""
        if self.key_filters is None:
            self.key_filters = read_record_keys(
                self.root, self.snap.live.get("record_keys", ()), self.file_idx
            )
        return self.key_filters

    def log_records(self) -> StoredLogRecords:
        """The log records the index stores of the live files (read on first use)."""
        if self._log_records is None:
            live = self.snap.live.get("log_records", ())
            self._log_records = read_log_records(self.root, live, self.file_idx)
        return self._log_records


@dataclass(frozen=True, eq=False)
class OnDisk:
    """One listing of the table against one loaded index version (kept while both stay the same
    objects: nothing changed on disk, nor in the index). The arrays are read-only."""

    listing: Listing
    loaded: LoadedVersion
    present: np.ndarray  # per indexed file: still on disk
    changed: np.ndarray  # per indexed file: size or modification time not what was indexed
    unknown: list[str]  # files on disk the index does not hold (table-relative)
    _partition_values: list[dict[str, dict[str, Any]]] = field(default_factory=list)  # once made

    @property
    def total(self) -> int:
        return len(self.listing.files)

    def unknown_files(self) -> list[DataFile]:
        """The listed files of ``unknown``, as listed (with their partition and file group)."""
        if not self.unknown:
            return []
        where = pc.index_in(pa.array(self.unknown, pa.string()), value_set=self.listing.paths)
        return [self.listing.files[i] for i in where.to_numpy(zero_copy_only=False).astype(np.int64)]

    def partition_values(self) -> dict[str, dict[str, Any]]:
        """Table-relative path -> partition values, of the files that have any."""
        if not self._partition_values:  # made once: an unpartitioned table's is empty
            self._partition_values.append(
                {f.path: f.partition_values for f in self.listing.files if f.partition_values}
            )
        return self._partition_values[0]

    @classmethod
    def compare(cls, listing: Listing, loaded: LoadedVersion) -> OnDisk:
        """``listing`` against ``loaded``: present, changed and unknown files."""
        present, changed = compare_with_disk(loaded, listing.files, listing.paths)
        on_disk = listing.paths
        unknown = on_disk.filter(pc.invert(pc.is_in(on_disk, value_set=loaded.paths))).to_pylist()
        present.flags.writeable = False
        changed.flags.writeable = False
        return cls(listing, loaded, present, changed, unknown)


@dataclass(frozen=True)
class Candidates:
    """File pruning for row selection: per live file of ``loaded``, kept or not, and changed on
    disk since indexed (kept, with no usable secondary index); files the index does not know."""

    loaded: LoadedVersion
    bound: Expression
    kept: np.ndarray
    changed: np.ndarray
    unknown: list[str]  # table-relative
    total: int  # data files on disk
    partition_values: dict[str, dict[str, Any]]  # table-relative path -> its partition values
    whole: np.ndarray  # per live file: statistics prove every row matches (strict evaluation)


def compare_with_disk(
    loaded: LoadedVersion, listing: Sequence[DataFile], on_disk: pa.Array
) -> tuple[np.ndarray, np.ndarray]:
    """Per indexed file: is it still on disk, and has it changed since it was indexed?

    Vectorized set logic. An indexed file gone from disk is not present (never read); one whose
    size or modification time is not what the index recorded was rewritten in place (or another
    file renamed over it): its statistics describe other rows. An unknown time on either side
    (an index from before times were recorded) counts as changed.
    """
    where = pc.index_in(loaded.paths, value_set=on_disk)
    present = pc.is_valid(where).to_numpy(zero_copy_only=False)
    if not len(listing):
        return present, np.zeros(len(present), dtype=bool)
    rows = pa.array(where.fill_null(0).to_numpy(zero_copy_only=False))
    disk_size = pa.array([f.size for f in listing], pa.int64()).take(rows)
    disk_mtime = pa.array([f.mtime_ns for f in listing], pa.int64()).take(rows)
    same = pc.and_(
        pc.equal(disk_size, loaded.files["size"].combine_chunks()),
        pc.equal(disk_mtime, loaded.files["mtime"].combine_chunks()),
    )
    return present, present & ~pc.fill_null(same, False).to_numpy(zero_copy_only=False)
