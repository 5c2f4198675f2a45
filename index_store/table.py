"""``IndexedTable``: a table plus its metadata index, the public API of ``index_store``.

Writers (``build``, ``update``, ``sync``, ``compact``) prepare their index files, then race for
the next timeline version (``index_store.commit``); the loser re-reads the index and retries, or
raises ``CommitConflictError`` when the other commit touched the same data files. Readers (``prune``,
``stats``) use the newest complete version and load only the columns a predicate uses; a data file
the index does not know is always kept, and one deleted behind its back is never returned.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import Expression, FileStats, Translation, all_match, explain, might_match
from hudi_expr.explain import Explanation
from hudi_expr.footer import nullable_where_absent
from hudi_expr.inclusive import prepare
from hudi_expr.stats import leaf_columns
from index_store import tables as _tables
from index_store.builder import BuiltFiles, ComputeKeys, ComputeStats, compute_file_keys, compute_stats
from index_store.commit import commit, writable
from index_store.config import IndexConfig
from index_store.errors import (
    CommitConflictError,
    IndexCorruptError,
    IndexDefinitionError,
    IndexNotBuiltError,
    IndexStaleError,
    RecordKeyError,
)
from index_store.partitions import (
    FILES_SCHEMA,
    LOAD_COLUMNS,
    REGISTRY,
    Batch,
    LiveIndex,
    read_blooms,
    read_column_stats,
    read_files,
    read_live_files,
    read_record_index,
    read_record_keys,
)
from index_store.partitions.base import FileKeys
from index_store.partitions.record_index import lookup_record_keys
from index_store.partitions.record_keys import KeyFilters
from index_store.record_key import RecordKeySpec
from index_store.secondary.api import STAGING, SecondaryIndexes
from index_store.secondary.build import ComputeIndexFiles
from index_store.secondary.definitions import IndexDefinition
from index_store.secondary.kinds import UnsupportedColumnError, index_kind
from index_store.secondary.kinds import kinds as index_kinds
from index_store.secondary.tagging import verify_with_index
from index_store.tables.base import DataFile, Listing, TableReader
from index_store.tagging.partitions import PartitionLayout
from index_store.tagging.tagger import RecordMatches, TagContext, check_on_duplicate, tag_keys, tag_method
from index_store.tagging.verify import Verified, verify_pairs
from index_store.timeline import Commit, IndexTimeline, Snapshot

__all__ = ["Candidates", "Freshness", "IndexedTable", "PruneResult", "open_table"]

MAX_RETRIES = 50


def open_table(
    path: str | os.PathLike[str],
    index_path: str | os.PathLike[str] | None = None,
    *,
    check_files: Literal["watch", "stat"] = "watch",
) -> IndexedTable:
    """A plain parquet directory or Hudi copy-on-write table, with its index at ``index_path``
    (default ``<table>/.hoodie/.index``, for tables one may write to).

    ``check_files`` (plain directories): how each read knows which files were added, deleted or
    rewritten since it last listed the table: ``"watch"`` by change notification where the file
    system allows, else a ``stat`` of every file; ``"stat"`` always by a ``stat`` of every file
    (``index_store.tables.plain``). A Hudi table is listed anew at every read.
    """
    reader = _tables.open_reader(str(path), check_files=check_files)
    root = Path(index_path) if index_path is not None else Path(reader.root) / ".hoodie" / ".index"
    return IndexedTable(reader, root)


@dataclass(frozen=True)
class PruneResult:
    """Files that may hold matching rows, out of ``total``; ``explain()`` says why."""

    files: list[str]  # absolute paths, index order, then files the index does not know
    total: int
    unknown_files: list[str] = field(default_factory=list)  # on disk, not in the index: kept
    note: str = ""
    changed_files: list[str] = field(default_factory=list)  # size or mtime differ from the index: kept
    not_used: tuple[str, ...] = ()  # parts of a ``Translation`` that could not prune
    index_error: str | None = None  # why the index could not be used (every file was kept)
    # Explaining re-evaluates each conjunct, so it is done only when someone asks.
    _explain: Callable[[], Explanation] | None = field(default=None, repr=False, compare=False)
    _cache: dict[str, Explanation] = field(default_factory=dict, repr=False, compare=False)

    @property
    def kept(self) -> int:
        return len(self.files)

    @property
    def explanation(self) -> Explanation | None:
        """Per conjunct of the predicate, the files it removed (None if the index was not used)."""
        if self._explain is None:
            return None
        if "x" not in self._cache:
            self._cache["x"] = self._explain()
        return self._cache["x"]

    @property
    def index_used(self) -> bool:
        """False when the index could not be read and every file was kept."""
        return self.index_error is None

    def notes(self) -> list[str]:
        """What, beside the predicate, decided which files are kept (one line each)."""
        lines = [f"not used for pruning (kept as TRUE): {part}" for part in self.not_used]
        if self.unknown_files:
            lines.append(f"{_files(len(self.unknown_files))} not in the index kept: run sync to index them")
        if self.changed_files:
            lines.append(
                f"{_files(len(self.changed_files))} changed since the index was built, kept: run sync"
            )
        if self.note:
            lines.append(self.note)
        return lines

    def explain(self) -> str:
        explanation = self.explanation
        lines = [str(explanation)] if explanation is not None else []
        lines += [f"  {line}" for line in self.notes()]
        if self.unknown_files or self.changed_files or explanation is None or explanation.total != self.total:
            lines.append(f"kept {self.kept} of {self.total} files")  # the index's count is not all
        return "\n".join(lines)


@dataclass(frozen=True)
class Freshness:
    """How the index's newest version compares with the table on disk now."""

    version: int  # of the index
    paths: pa.StringArray  # the index's live files (table-relative), in file_idx order
    present: np.ndarray  # per indexed file: still on disk
    changed: np.ndarray  # per indexed file: its size or modification time is not what was indexed
    unknown: list[str]  # files on disk the index does not hold (table-relative)

    @property
    def deleted(self) -> int:
        """Indexed files no longer on disk (harmless: never read, never named)."""
        return int((~self.present).sum())

    @property
    def current(self) -> bool:
        """True when every file on disk is indexed as it is now (deleted files aside)."""
        return not self.unknown and not self.changed.any()

    def reason(self) -> str:
        """What differs, for people: '2 files not in the index, 1 file changed since indexed'."""
        parts = [
            f"{_files(len(self.unknown))} not in the index" if self.unknown else "",
            f"{_files(int(self.changed.sum()))} changed since indexed" if self.changed.any() else "",
            f"{_files(self.deleted)} deleted" if self.deleted else "",
        ]
        return ", ".join(p for p in parts if p) or "up to date"


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


@dataclass(frozen=True, eq=False)
class _OnDisk:
    """One listing of the table against one loaded index version (kept while both stay the same
    objects: nothing changed on disk, nor in the index). The arrays are read-only."""

    listing: Listing
    loaded: _Loaded
    present: np.ndarray  # per indexed file: still on disk
    changed: np.ndarray  # per indexed file: size or modification time not what was indexed
    unknown: list[str]  # files on disk the index does not hold (table-relative)
    _partition_values: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.listing.files)

    def partition_values(self) -> dict[str, dict[str, Any]]:
        """Table-relative path -> partition values, of the files that have any."""
        if not self._partition_values:
            self._partition_values.update(
                {f.path: f.partition_values for f in self.listing.files if f.partition_values}
            )
        return self._partition_values


# What pruning reads of the ``files`` partition when an index version is opened; the rest of
# ``LOAD_COLUMNS`` (sizes and times, to compare with the disk) is read on first use.
_OPEN_COLUMNS = ("file_idx", "path", "row_count")


class _Loaded:
    """What a reader keeps of one index version: its files and the column stats loaded so far."""

    def __init__(self, root: Path, snap: Snapshot, columns: Sequence[str] = LOAD_COLUMNS) -> None:
        self.root = root
        self.snap = snap
        self._wanted = list(dict.fromkeys([*LOAD_COLUMNS, *columns]))
        first = _OPEN_COLUMNS if tuple(columns) == LOAD_COLUMNS else self._wanted
        self._files, self._rows = read_live_files(root, snap.live["files"], first)
        self.file_idx = self._files["file_idx"].to_numpy()
        self.paths = self._files["path"].combine_chunks()
        self.row_count = self._files["row_count"].combine_chunks()
        self.schema_only = FileStats([], [], {}, snap.schema)  # what binding a predicate needs
        # ``stats()`` answers by (columns, with_blooms): everything in them belongs to this version.
        self.stats_made: dict[tuple[tuple[str, ...], bool], FileStats] = {}
        self.columns: dict[str, Any] = {}
        self.blooms: dict[str, Any] = {}
        self.key_filters: KeyFilters | None = None
        self._partitions: pa.StringArray | None = None
        self.secondary: dict[str, Any] = {}  # the secondary index's manifest and opened files

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

    def partitions(self, root: Path) -> pa.StringArray:
        """Each live file's partition path (read on first use: pruning does not need it)."""
        if self._partitions is None:
            if "partition" in self._files.column_names:
                column = self._files["partition"]
            else:
                read, _ = read_live_files(root, self.snap.live["files"], ["partition"], self._rows)
                column = read["partition"]
            self._partitions = column.combine_chunks().cast(pa.string())
        return self._partitions


# The partition layout of each loaded index version that tagged with partitions (dropped with it).
_LAYOUTS: weakref.WeakKeyDictionary[_Loaded, PartitionLayout] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Candidates:
    """File pruning for row selection: per live file of ``loaded``, kept or not, and changed on
    disk since indexed (kept, with no usable secondary index); files the index does not know."""

    loaded: _Loaded
    bound: Expression
    kept: np.ndarray
    changed: np.ndarray
    unknown: list[str]  # table-relative
    total: int  # data files on disk
    partition_values: dict[str, dict[str, Any]]  # table-relative path -> its partition values
    whole: np.ndarray  # per live file: statistics prove every row matches (strict evaluation)


class IndexedTable(SecondaryIndexes):
    """A table (``TableReader``) and its metadata index rooted at ``index_root``."""

    def __init__(self, reader: TableReader, index_root: Path) -> None:
        self.reader = reader
        self.index_root = Path(index_root)
        self.timeline = IndexTimeline(self.index_root)
        self._loaded: _Loaded | None = None
        self._disk: _OnDisk | None = None

    def __repr__(self) -> str:
        return f"IndexedTable({self.reader.root!r}, index={str(self.index_root)!r})"

    @property
    def root(self) -> str:
        return self.reader.root

    # ------------------------------------------------------------------------------- reading

    def snapshot(self) -> Snapshot:
        return self.timeline.snapshot()

    def _load(self) -> _Loaded:
        snap = self.snapshot()
        loaded = self._loaded
        # The same version number may be another index (one rebuilt elsewhere starts again at 1):
        # what was loaded stands while it is the same index files.
        if loaded is None or (
            loaded.snap is not snap and (loaded.snap.version != snap.version or loaded.snap.live != snap.live)
        ):
            self._loaded = loaded = _Loaded(self.index_root, snap)
        return loaded

    def stats(self, columns: Iterable[str] | None = None, with_blooms: bool = True) -> FileStats:
        """Index statistics of the live files (all columns unless ``columns`` is given)."""
        loaded = self._load()
        schema = loaded.snap.schema
        names = list(leaf_columns(schema)) if columns is None else list(dict.fromkeys(columns))
        made = loaded.stats_made.get((tuple(names), with_blooms))
        if made is not None:
            return made
        missing = [c for c in names if c not in loaded.columns]
        if missing:
            loaded.columns.update(
                read_column_stats(
                    self.index_root, loaded.snap.live["column_stats"], schema, missing, loaded.file_idx
                )
            )
        bloom_columns = [c for c in names if c in loaded.snap.config.bloom_columns] if with_blooms else []
        missing_blooms = [c for c in bloom_columns if c not in loaded.blooms]
        if missing_blooms:
            loaded.blooms.update(
                read_blooms(
                    self.index_root, loaded.snap.live["bloom_filters"], missing_blooms, loaded.file_idx
                )
            )
        stats = FileStats(
            loaded.paths,
            loaded.row_count,
            {c: loaded.columns[c] for c in names if c in loaded.columns},
            schema,
        )
        for c in bloom_columns:
            if c in loaded.blooms:
                stats = stats.with_bloom(c, loaded.blooms[c])
        if with_blooms:
            # A value index knows each file's distinct values: its blooms answer = and IN too.
            for column, filters in self._secondary_blooms(loaded, names).items():
                if column in stats.columns:
                    stats = stats.with_membership(column, filters)
        key_column = loaded.snap.config.key_column
        if with_blooms and key_column in names and key_column in stats.columns:
            # The files' record key filters (Hudi's footer filters) answer = and IN on the key.
            stats = stats.with_membership(key_column, self._key_filters(loaded).filters)
        if len(loaded.stats_made) >= 64:
            loaded.stats_made.pop(next(iter(loaded.stats_made)))
        loaded.stats_made[(tuple(names), with_blooms)] = stats
        return stats

    def layout(self, columns: Sequence[str] | None = None) -> pa.Table:
        """How well the files are clustered for each column, from the index alone (one row per
        column; ``index_store.layout.layout_report``): overlap depth, the share of files a point
        predicate and a 1% range keep, exact and missing bounds."""
        from index_store.layout import layout_report

        names = None if columns is None else list(columns)
        return layout_report(self.stats(names, with_blooms=False), names)

    def plot_layout(self, columns: str | Sequence[str], path: str | os.PathLike[str]) -> None:
        """Draw each file's [min, max] of ``columns`` and the overlap depth into the PNG ``path``
        (``index_store.plot``; needs matplotlib)."""
        from index_store.plot import plot_layout

        names = [columns] if isinstance(columns, str) else list(columns)
        plot_layout(self.stats(names, with_blooms=False), names, path)

    def _key_filters(self, loaded: _Loaded) -> KeyFilters:
        """The key bounds and filters of the loaded version's files (read on first use)."""
        if loaded.key_filters is None:
            loaded.key_filters = read_record_keys(
                self.index_root, loaded.snap.live.get("record_keys", ()), loaded.file_idx
            )
        return loaded.key_filters

    def prune(
        self,
        expr: Expression | Translation,
        *,
        verify_files: bool | Literal["stat"] = True,
        on_corrupt: Literal["raise", "keep_all"] = "raise",
    ) -> PruneResult:
        """Files that may hold a row where ``expr`` is TRUE.

        ``expr`` may be an adapter's ``Translation``: its untranslated parts are listed by
        ``explain()``. ``verify_files`` lists the table too: files deleted behind the index's back
        are dropped; files it does not know, and files whose size or modification time differ from
        what the index recorded (rewritten in place), are kept. The listing is checked as the
        reader's ``check_files`` says (``open_table``); ``verify_files="stat"`` reads every file's
        size and modification time now whatever it says. ``on_corrupt="keep_all"`` keeps every
        file instead of raising ``IndexCorruptError`` when the index cannot be read.
        """
        if isinstance(expr, str):
            raise TypeError(
                "prune takes a hudi_expr expression, not SQL text: parse it first with "
                "adapters.duckdb.translate_sql(text, schema=table.snapshot().schema), which DuckDB "
                "checks against the table's columns (hudi-index prune --where does this)"
            )
        not_used = expr.not_used if isinstance(expr, Translation) else ()
        predicate = expr.expr if isinstance(expr, Translation) else expr
        try:
            loaded = self._load()
            if not loaded.snap.version:
                raise IndexNotBuiltError(self.root)
            if not len(loaded.snap.schema):
                return self._prune_without_columns(not_used)
            bound = prepare(predicate, loaded.schema_only)
            stats = self.stats(bound.references())
            mask = might_match(bound, stats)
        except IndexCorruptError as exc:
            if on_corrupt != "keep_all":
                raise
            every_file = self._abs_all(f.path for f in self.reader.list_files())
            return PruneResult(
                every_file,
                len(every_file),
                note="the index is unreadable: every file is kept",
                not_used=not_used,
                index_error=str(exc),
            )

        def explanation() -> Explanation:
            return explain(bound, stats)

        if not verify_files:
            kept = stats.files.filter(mask).to_pylist()
            return PruneResult(
                self._abs_all(kept), len(loaded.paths), not_used=not_used, _explain=explanation
            )
        disk = self._on_disk(loaded, stat=verify_files == "stat")
        kept = disk.present & (mask.to_numpy(zero_copy_only=False) | disk.changed)
        unknown = self._abs_all(disk.unknown)
        changed = loaded.paths.filter(pa.array(disk.changed)).to_pylist() if disk.changed.any() else []
        return PruneResult(
            self._abs_all(loaded.paths.filter(pa.array(kept)).to_pylist()) + unknown,
            disk.total,
            unknown,
            changed_files=self._abs_all(changed),
            not_used=not_used,
            _explain=explanation,
        )

    def _on_disk(self, loaded: _Loaded, stat: bool = False) -> _OnDisk:
        """The table as listed now against ``loaded``: worked out again only when the listing or
        the index version is another object than last time."""
        listing = _tables.listing(self.reader, stat=stat)
        cached = self._disk
        if cached is not None and cached.listing is listing and cached.loaded is loaded:
            return cached
        present, changed = _compare_with_disk(loaded, listing.files, listing.paths)
        on_disk = listing.paths
        unknown = on_disk.filter(pc.invert(pc.is_in(on_disk, value_set=loaded.paths))).to_pylist()
        present.flags.writeable = False
        changed.flags.writeable = False
        self._disk = _OnDisk(listing, loaded, present, changed, unknown)
        return self._disk

    def _candidates(self, expr: Expression) -> Candidates:
        """``prune`` for row selection: positions into the loaded version rather than paths."""
        loaded = self._load()
        if not loaded.snap.version:
            raise IndexNotBuiltError(self.root)
        bound = prepare(expr, loaded.schema_only)
        stats = self.stats(bound.references())
        mask = might_match(bound, stats).to_numpy(zero_copy_only=False)
        disk = self._on_disk(loaded)
        return Candidates(
            loaded,
            bound,
            disk.present & (mask | disk.changed),
            disk.changed,
            list(disk.unknown),
            disk.total,
            disk.partition_values(),
            all_match(bound, stats).to_numpy(zero_copy_only=False) & ~disk.changed,
        )

    def tag(
        self,
        keys: pa.Array | pa.ChunkedArray | pa.Table | Sequence[str],
        partitions: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None,
        using: Literal["auto", "bloom", "record"] = "auto",
        *,
        sync: bool = False,
        on_duplicate: Literal["all", "error"] = "all",
    ) -> pa.Table:
        """Which data file holds each record key (an update), and which keys are new (inserts).

        ``keys``: record key strings exactly as Hudi writes ``_hoodie_record_key``, or a table of
        the key columns, encoded with the table's key generator. ``partitions`` (aligned with
        ``keys``): tag each key within its partition only (Hudi's non-global index); without it the
        whole table is searched. Partition values are mapped to the table's partition paths
        (``index_store.tagging.partitions``): null or ``""`` is a non-partitioned table's one
        partition, ``apac`` is ``region=apac`` on a table partitioned by ``region=``, a trailing
        ``/`` is dropped; a well-formed partition the table lacks is new (its keys are inserts);
        one that cannot be mapped raises ``PartitionPathError``. ``using``: ``bloom`` (key ranges,
        bloom filters, then reading the candidates' key columns), ``record`` (the record index) or
        ``auto`` (the record index when built). Returns rows in input order: ``key``,
        ``partition`` (the mapped path given, else the file's), ``file`` (absolute path; null for
        an insert); ``index_store.tagging.tag_stats(result)`` gives per-stage counts.

        A key held by several live files (a Hudi table written with ``insert`` can hold one twice
        in a partition) gets one row per file with ``on_duplicate="all"``, as Hudi's bloom index
        tags it (each copy is updated); ``"error"`` raises ``DuplicateKeyError`` instead.

        The index must be current: files added or rewritten since the last sync raise
        ``IndexStaleError`` (``sync=True`` syncs first), since a key in an unindexed file would
        otherwise be reported as an insert. Null and empty keys raise ``RecordKeyError``: Hudi's
        key generators refuse both (``HoodieKeyException``), so no table holds one.
        """
        loaded = self._load()
        if not loaded.snap.version:
            raise IndexNotBuiltError(self.root)
        config = loaded.snap.config
        spec, method = tag_method(config, self.root, using)
        check_on_duplicate(on_duplicate)
        key_array = _key_array(keys, spec)
        part_array = _partition_array(partitions, len(key_array))

        fresh = self._freshness(loaded)
        if not fresh.current:
            if not sync:
                raise IndexStaleError(self.root, fresh.reason())
            self.sync()
            return self.tag(keys, partitions, using, on_duplicate=on_duplicate)
        if part_array is not None:
            part_array = self._partition_layout(loaded).normalize(part_array)

        def record_lookup(wanted: pa.Array) -> RecordMatches:
            found = lookup_record_keys(self.index_root, loaded.snap.live.get("record_index", ()), wanted)
            return RecordMatches(found.key_pos, found.file_idx, found.bytes_read)

        def leading_bounds() -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
            field = spec.fields[0] if spec.fields else None
            schema = loaded.snap.schema
            if field is None or field not in schema.names:
                return None
            kind = schema.field(field).type
            if not pa.types.is_integer(kind) or kind == pa.uint64():
                return None
            column = self.stats([field], with_blooms=False).columns.get(field)
            if column is None:
                return None
            low, high = column.min.cast(pa.int64()), column.max.cast(pa.int64())
            known = pc.and_(low.is_valid(), high.is_valid()).to_numpy(zero_copy_only=False)
            return (
                low.fill_null(0).to_numpy(zero_copy_only=False),
                high.fill_null(0).to_numpy(zero_copy_only=False),
                known,
            )

        context = TagContext(
            verify=self._index_verifier(loaded, spec),
            root=self.root,
            paths=loaded.paths,
            partitions=loaded.partitions(self.index_root),
            file_idx=loaded.file_idx,
            present=fresh.present,
            spec=spec,
            key_filters=lambda: self._key_filters(loaded),
            record_lookup=record_lookup if config.record_index else None,
            leading_bounds=leading_bounds,
        )
        return tag_keys(context, key_array, part_array, method, on_duplicate)

    def _partition_layout(self, loaded: _Loaded) -> PartitionLayout:
        """The form of the partition paths of ``loaded``'s live files (kept with the version)."""
        layout = _LAYOUTS.get(loaded)
        if layout is None:
            fields = self.reader.partitioning().fields  # Hudi declares its fields
            layout = PartitionLayout.of(self.root, loaded.partitions(self.index_root), fields)
            _LAYOUTS[loaded] = layout
        return layout

    def _index_verifier(
        self, loaded: _Loaded, spec: RecordKeySpec
    ) -> Callable[[pa.StringArray, np.ndarray, np.ndarray], Verified] | None:
        """Confirming tag candidates from a value index on the key column, when there is one (a
        one-column key as Hudi's simple key generator writes it); None: read the data files."""
        if spec.generator != "simple" or len(spec.fields) != 1 or spec.column is not None:
            return None
        column = spec.fields[0]
        usable = self._usable_manifest(loaded)
        mine = usable.filter(
            pc.and_(pc.equal(usable["index_type"], "value"), pc.equal(usable["column"], column))
        )
        if not len(mine) or column not in loaded.snap.schema.names:
            return None
        column_type = loaded.snap.schema.field(column).type

        def index_file_of(file_pos: np.ndarray) -> list[str | None]:
            where = pc.index_in(pa.array(loaded.file_idx[file_pos], pa.int64()), value_set=mine["file_idx"])
            return mine["index_file"].take(where).to_pylist()

        def verify(keys: pa.StringArray, key_idx: np.ndarray, file_pos: np.ndarray) -> Verified:
            paths = loaded.paths.to_pylist()

            def by_reading(which: np.ndarray) -> Verified:
                return verify_pairs(self.root, paths, keys, key_idx[which], file_pos[which], spec)

            return verify_with_index(
                keys,
                key_idx,
                file_pos,
                column,
                column_type,
                index_file_of,
                self.index_root,
                loaded.secondary.setdefault("opened", {}),
                by_reading,
            )

        return verify

    def freshness(self) -> Freshness:
        """The newest index version against the table as listed now: files added, rewritten in
        place (size or modification time moved) or deleted since they were indexed (every file's
        size and modification time read now)."""
        loaded = self._load()
        if not loaded.snap.version:
            raise IndexNotBuiltError(self.root)
        return self._freshness(loaded, stat=True)

    def _freshness(self, loaded: _Loaded, stat: bool = False) -> Freshness:
        disk = self._on_disk(loaded, stat=stat)
        return Freshness(loaded.snap.version, loaded.paths, disk.present, disk.changed, list(disk.unknown))

    def duplicate_keys(self) -> pa.Table:
        """Record keys held by more than one live data file (a key, partition and file per row),
        from the record index (or, without one, by reading every file's keys): a table breaking
        key uniqueness (``tag`` names every copy, or refuses with ``on_duplicate="error"``).
        Empty when keys are unique."""
        loaded = self._load()
        if not loaded.snap.version:
            raise IndexNotBuiltError(self.root)
        spec = RecordKeySpec.from_config(loaded.snap.config)
        if spec is None:
            raise RecordKeyError(
                f"the index of {self.root} holds no record keys: build it with record_key=[...]"
            )
        if loaded.snap.config.record_index:
            rows = read_record_index(self.index_root, loaded.snap.live.get("record_index", ()))
            pos = np.searchsorted(loaded.file_idx, rows["file_idx"].to_numpy())
            pos = np.minimum(pos, max(loaded.file_idx.size - 1, 0))
            live = loaded.file_idx[pos] == rows["file_idx"].to_numpy() if loaded.file_idx.size else pos < 0
            keys, file_pos = rows["key"].filter(pa.array(live)), pos[live]
        else:
            indexed = set(loaded.paths.to_pylist())
            listing = [f for f in _tables.list_files(self.reader, stat=True) if f.path in indexed]
            found = compute_file_keys(self.root, listing, spec, 0.5, with_keys=True, progress=False)
            assert found.keys is not None
            index_of = dict(zip(loaded.paths.to_pylist(), range(len(loaded.paths)), strict=True))
            where = np.array([index_of[f.path] for f in listing], dtype=np.int64)
            keys = found.keys["key"]
            file_pos = where[found.keys["file"].to_numpy()] if where.size else np.zeros(0, np.int64)
        table = pa.table({"key": keys, "file_pos": pa.array(file_pos, pa.int64())})
        holders = table.group_by("key").aggregate([("file_pos", "count_distinct")])
        dup = holders.filter(pc.greater(holders["file_pos_count_distinct"], 1))["key"]
        rows = table.filter(pc.is_in(table["key"], value_set=dup)).sort_by([("key", "ascending")])
        take = pa.array(rows["file_pos"].to_numpy(), pa.int64())
        prefix = self.root.rstrip(os.sep) + os.sep
        return pa.table(
            {
                "key": rows["key"],
                "partition": loaded.partitions(self.index_root).take(take),
                "file": pc.binary_join_element_wise(pa.scalar(prefix), loaded.paths.take(take), ""),
            }
        )

    def _prune_without_columns(self, not_used: tuple[str, ...]) -> PruneResult:
        """The index was built when the table had no data files: whatever is there now is unknown."""
        on_disk = self._abs_all(f.path for f in self.reader.list_files())
        note = (
            "the table had no data files when the index was built: run sync"
            if on_disk
            else "the table has no data files"
        )
        return PruneResult(on_disk, len(on_disk), on_disk, note=note, not_used=not_used)

    def _abs_all(self, rels: Iterable[str]) -> list[str]:
        # Plain concatenation: os.path.join per file costs more than pruning a million of them.
        prefix = self.root.rstrip(os.sep) + os.sep
        return [prefix + rel for rel in rels]

    # ------------------------------------------------------------------------------- writing

    def build(
        self,
        bloom_columns: Sequence[str] | None = None,
        fpp: float | None = None,
        progress: bool | None = None,
        compute: ComputeStats | None = None,
        rebuild: bool = False,
        record_key: str | Sequence[str] | Literal[False] | None = None,
        record_index: bool | None = None,
        key_fpp: float | None = None,
        compute_keys: ComputeKeys | None = None,
        record_index_shards: int | None = None,
        compute_index_files: ComputeIndexFiles | None = None,
    ) -> int:
        """Index every live data file from scratch (a checkpoint commit); returns the index version.

        The index keeps its configuration: an argument left as None keeps what the index was last
        built with (its newest readable timeline entry), so ``build()`` and ``build(rebuild=True)``
        rebuild exactly the index there was; a value given changes that setting. Without an index,
        None means the default. ``bloom_columns``: the columns with bloom filters (replacing the
        list; ``[]``: none; default: the table's record key column, if any). ``fpp``: their
        false-positive rate (default 0.01). ``record_key``: the record key of a plain table, one
        column or several, encoded as Hudi's key generators do (False: none; a Hudi table's own is
        used by default); with one, each file's key bounds and a Hudi bloom filter of its keys
        (from Hudi footers when there, else built at ``key_fpp``, default 1e-6) are kept for
        ``tag``. ``record_index`` (default False) adds the record-level index (key -> file), in
        ``record_index_shards`` hash shards per index file (a power of two; default: one per 4M
        keys). Secondary index definitions are always kept, and their files built anew (a second
        commit, whose version is returned); ``drop_index`` removes one.

        A build never reads the index it replaces, so it also repairs a corrupt one (readers replay
        from the newest checkpoint). ``rebuild`` first moves the whole index folder aside (to
        ``<index>.broken-<time>``), for an index too damaged to append to. ``compute`` replaces
        ``compute_stats`` (same arguments and result), e.g. to compute the stats on a cluster;
        ``compute_keys`` replaces ``compute_file_keys`` and ``compute_index_files`` computes the
        secondary index files (``build_index(compute=...)``) the same way; listing and committing
        stay here, so the index is the same. A folder holding no parquet file and no Hudi table,
        yet other files, raises ``NotATableError`` and nothing is written.
        """
        files = _tables.list_files(self.reader, stat=True)
        _tables.require_table(self.reader, files)
        stored = self.stored_config()
        config, spec = self._build_config(stored, bloom_columns, fpp, record_key, record_index, key_fpp)
        if record_index_shards is not None:
            if record_index_shards < 1 or record_index_shards & (record_index_shards - 1):
                raise ValueError(f"record_index_shards must be a power of two, not {record_index_shards}")
            config = dataclasses.replace(config, record_index_shards=record_index_shards)
        built = (compute or compute_stats)(
            self.root,
            files,
            self.reader.partition_schema(),
            bloom_columns=list(config.bloom_columns),
            fpp=config.fpp,
            progress=progress,
        )
        if compute is not None and [f.path for f in built.files] != [f.path for f in files]:
            raise ValueError("compute returned stats of other files than it was given (or out of order)")
        if files:
            _check_definitions(config.secondary_indexes, built.stats.schema, self.root)
        file_keys = (
            (compute_keys or compute_file_keys)(
                self.root, files, spec, config.key_fpp, config.record_index, progress
            )
            if spec is not None
            else None
        )
        if file_keys is not None and len(file_keys.min_key) != len(files):
            raise ValueError("compute_keys returned keys of other files than it was given")
        if rebuild:
            self._move_aside()

        def prepare_commit(snap: Snapshot) -> Commit:
            added = self._write_batch(
                built,
                np.arange(len(files), dtype=np.int64),
                snap.version + 1,
                record_keys=file_keys,
                config=config,
            )
            return Commit(
                version=snap.version + 1,
                operation="build",
                added=added,
                schema=built.stats.schema,
                checkpoint=True,
                next_file_idx=len(files),
                table_instant=self.reader.latest_instant(),
                config=config,
            )

        version = commit(self.timeline, prepare_commit, state=self._next_version_only)
        if config.secondary_indexes and files:
            indexed = self.build_index(None, "all", progress, compute=compute_index_files)
            version = indexed if indexed is not None else version
        return version

    def stored_config(self) -> IndexConfig | None:
        """The configuration the index was last built or changed with: that of its newest readable
        timeline entry (a build must work on an index too damaged to read, and keep what it can);
        None when there is no index. A warning says when the newest entries could not be read."""
        versions = self.timeline.versions()
        for v in reversed(versions):
            try:
                config = self.timeline.read(v).config
            except (IndexCorruptError, OSError, ValueError):
                continue
            if v != versions[-1]:
                warnings.warn(
                    f"index version {versions[-1]} of {self.root} is unreadable: the configuration of "
                    f"version {v} is kept",
                    stacklevel=3,
                )
            return config
        if versions:
            warnings.warn(
                f"no index version of {self.root} is readable: its configuration (bloom columns, record "
                "key, record index, secondary indexes) is lost; give it again to build",
                stacklevel=3,
            )
        return None

    def _build_config(
        self,
        stored: IndexConfig | None,
        bloom_columns: Sequence[str] | None,
        fpp: float | None,
        record_key: str | Sequence[str] | Literal[False] | None,
        record_index: bool | None,
        key_fpp: float | None,
    ) -> tuple[IndexConfig, RecordKeySpec | None]:
        """What a build makes, and its record key: each setting given, else the ``stored`` one,
        else the default. The table's kind, record key field and partition columns always come
        from the table."""
        base = stored if stored is not None else IndexConfig()
        if record_key is False:
            spec = None
        elif record_key is not None:
            spec = self._key_spec(record_key)
        else:
            spec = RecordKeySpec.from_config(stored) if stored is not None else None
            if spec is None:
                spec = self._key_spec(None)  # what a Hudi table declares
        keyed = spec is not None
        if record_index is None:
            record_index = keyed and base.record_index
        if record_index and not keyed:
            raise RecordKeyError(
                f"a record index needs a record key: {self.root} has none; name its key columns with "
                "build(record_key=[...]) (CLI: --record-key a,b)"
            )
        if bloom_columns is None and stored is not None:
            bloom_columns = stored.bloom_columns
        elif bloom_columns is None:
            # A key column the files store (Hudi's _hoodie_record_key) is served by the key
            # filters (Hudi's own footer filters): no need to read it for another bloom filter.
            key = self.reader.record_key_field()
            bloom_columns = [key] if key and (spec is None or spec.column != key) else []
        elif isinstance(bloom_columns, str):
            bloom_columns = [bloom_columns]
        config = self._config(
            list(dict.fromkeys(bloom_columns)),
            base.fpp if fpp is None else fpp,
            spec,
            base.key_fpp if key_fpp is None else key_fpp,
            record_index,
        )
        shards = base.record_index_shards if record_index else None
        made = dataclasses.replace(config, record_index_shards=shards)
        return dataclasses.replace(made, secondary_indexes=base.secondary_indexes), spec

    def _next_version_only(self) -> Snapshot:
        """An empty snapshot at the latest version: what a build needs, read without replaying."""
        return dataclasses.replace(Snapshot.empty(), version=max(self.timeline.versions(), default=0))

    def _move_aside(self) -> Path | None:
        """Rename the index folder to ``<name>.broken-<UTC time>``; returns the new path."""
        if not self.index_root.exists():
            return None
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        aside = self.index_root.with_name(f"{self.index_root.name}.broken-{stamp}")
        with writable(self.index_root):
            self.index_root.rename(aside)
        self._loaded = None
        return aside

    def update(
        self,
        added: Iterable[str | DataFile] = (),
        removed: Iterable[str] = (),
        progress: bool | None = None,
    ) -> int:
        """One index commit for one data commit: ``added`` files indexed, ``removed`` forgotten.

        Paths are relative to the table root (or absolute under it). Raises
        ``CommitConflictError`` if a concurrent commit added or removed the same files.
        """
        snap = self.snapshot()
        if not snap.version:
            raise IndexNotBuiltError(self.root)
        add_files = self._describe(added)
        remove_paths = [self._rel(p) for p in removed]
        bloom_columns = snap.config.bloom_columns
        # The new files' own schema; columns they lack stay unknown for them (never pruned on).
        built = compute_stats(
            self.root,
            add_files,
            self.reader.partition_schema(),
            bloom_columns=[c for c in bloom_columns if c not in self.reader.partition_schema().names],
            fpp=snap.config.fpp,
            progress=progress,
        )
        spec = RecordKeySpec.from_config(snap.config)
        file_keys = (
            compute_file_keys(
                self.root, add_files, spec, snap.config.key_fpp, snap.config.record_index, progress
            )
            if spec is not None
            else None
        )
        touched = set(remove_paths) | {f.path for f in add_files}
        first_seen: dict[str, int] | None = None  # our paths' index entries at the first attempt

        def prepare_commit(s: Snapshot) -> Commit:
            nonlocal first_seen
            live = read_files(self.index_root, s.live["files"])
            live_paths = dict(zip(live["path"].to_pylist(), live["file_idx"].to_pylist(), strict=True))
            mine = {p: live_paths[p] for p in touched if p in live_paths}
            if first_seen is None:
                unknown = [p for p in remove_paths if p not in live_paths]
                if unknown:
                    raise CommitConflictError(f"cannot remove files the index does not hold: {unknown[:3]}")
                first_seen = mine
            elif mine != first_seen:
                # Lost a race to a commit that changed the entry of one of our files.
                clash = sorted(p for p in touched if mine.get(p) != first_seen.get(p))
                raise CommitConflictError(
                    f"a concurrent index commit changed the same data files ({clash[:3]}): re-run sync"
                )
            version = s.version + 1
            idx = np.arange(s.next_file_idx, s.next_file_idx + len(add_files), dtype=np.int64)
            # Re-added paths replace their old entry: tombstone it like a removed one.
            gone = remove_paths + [
                f.path for f in add_files if f.path in live_paths and f.path not in remove_paths
            ]
            written = self._write_batch(
                built,
                idx,
                version,
                tombstones=[(p, live_paths[p]) for p in gone],
                record_keys=file_keys,
                config=s.config,
            )
            return Commit(
                version=version,
                operation="update",
                added=written,
                schema=_merge_schemas(s.schema, built.stats.schema),
                next_file_idx=s.next_file_idx + len(add_files),
                table_instant=self.reader.latest_instant(),
                config=s.config,
            )

        return commit(self.timeline, prepare_commit)

    def sync(self, progress: bool | None = None) -> int | None:
        """Catch up with files added, removed or rewritten on disk; None if nothing changed."""
        if not self.snapshot().version:
            return self.build(progress=progress)
        loaded = _Loaded(self.index_root, self.snapshot())
        recorded = zip(loaded.files["size"].to_pylist(), loaded.files["mtime"].to_pylist(), strict=True)
        indexed = dict(zip(loaded.paths.to_pylist(), recorded, strict=True))
        listing = _tables.list_files(self.reader, stat=True)
        on_disk = {f.path: f for f in listing}
        # A file whose size or modification time moved was rewritten: index it again. So is one
        # indexed before times were recorded (None never equals a listed time), and one whose
        # listing has no time (nothing could tell it was not rewritten).
        added = [f for f in listing if indexed.get(f.path) != (f.size, f.mtime_ns) or f.mtime_ns is None]
        removed = [p for p in indexed if p not in on_disk]
        if not added and not removed:
            return None
        return self.update(added=added, removed=removed, progress=progress)

    def compact(self) -> int:
        """Rewrite the live index into one file per partition (a checkpoint); returns its version."""
        if not self.snapshot().version:
            raise IndexNotBuiltError(self.root)

        def prepare_commit(snap: Snapshot) -> Commit:
            loaded = _Loaded(self.index_root, snap, FILES_SCHEMA.names)
            live = LiveIndex(loaded.files, snap.live, snap.schema, snap.config, snap.version + 1)
            added = {}
            for partition in REGISTRY:
                rel = partition.compact(self.index_root, live)
                if isinstance(rel, str):
                    added[partition.name] = [rel]
                elif rel is not None:  # a partition that also names files of other folders
                    added.update({name: list(files) for name, files in rel.items()})
            return Commit(
                version=snap.version + 1,
                operation="compact",
                added=added,
                removed={p: list(files) for p, files in snap.live.items()},
                schema=snap.schema,
                checkpoint=True,
                next_file_idx=snap.next_file_idx,
                table_instant=snap.table_instant,
                config=snap.config,
            )

        return commit(self.timeline, prepare_commit)

    def clean(self, retention_seconds: float = 3600.0) -> list[str]:
        """Delete index files no version since the latest checkpoint uses, and timeline entries
        before it, once older than ``retention_seconds``; returns what was deleted."""
        snap = self.snapshot()
        keep: set[str] = set()
        for v in self.timeline.versions():
            if v >= snap.checkpoint_version:
                for files in self.timeline.read(v).added.values():
                    keep.update(files)
        cutoff = time.time() - retention_seconds
        with writable(self.index_root):
            return self._delete_unused(keep, snap, cutoff)

    def _delete_unused(self, keep: set[str], snap: Snapshot, cutoff: float) -> list[str]:
        deleted = self._delete_unused_nested(keep, cutoff)
        for partition in REGISTRY.names():
            folder = self.index_root / partition
            if not folder.is_dir():
                continue
            for name in os.listdir(folder):
                rel = f"{partition}/{name}"
                path = folder / name
                if rel not in keep and path.stat().st_mtime <= cutoff:
                    path.unlink(missing_ok=True)
                    deleted.append(rel)
        for v in self.timeline.versions():
            path = self.timeline.path(v)
            if v < snap.checkpoint_version and path.stat().st_mtime <= cutoff:
                path.unlink(missing_ok=True)
                deleted.append(f"timeline/{path.name}")
        if self.timeline.dir.is_dir():
            for name in os.listdir(self.timeline.dir):
                path = self.timeline.dir / name
                if name.startswith(".tmp-") and path.stat().st_mtime <= cutoff:
                    path.unlink(missing_ok=True)
                    deleted.append(f"timeline/{name}")
        return deleted

    def _delete_unused_nested(self, keep: set[str], cutoff: float) -> list[str]:
        """Secondary index files (``<type>/<instant>/<file id>/``) no version uses, then the
        folders left empty (an instant goes with its last file), and abandoned build staging."""
        deleted = []
        for name in [k.name for k in index_kinds()] + [STAGING]:
            top = self.index_root / name
            if not top.is_dir():
                continue
            for folder, _, names in os.walk(top, topdown=False):
                for file in names:
                    path = Path(folder) / file
                    rel = path.relative_to(self.index_root).as_posix()
                    if rel not in keep and path.stat().st_mtime <= cutoff:
                        path.unlink(missing_ok=True)
                        deleted.append(rel)
                if folder != str(top) and not os.listdir(folder):
                    os.rmdir(folder)
        return deleted

    # ----------------------------------------------------------------------------- internals

    def _write_batch(
        self,
        built: BuiltFiles,
        file_idx: np.ndarray,
        version: int,
        tombstones: Sequence[tuple[str, int]] = (),
        record_keys: FileKeys | None = None,
        config: IndexConfig | None = None,
    ) -> dict[str, list[str]]:
        """Offer the batch to every partition; what each wrote, by partition name."""
        batch = Batch(
            built.files,
            file_idx,
            version,
            built.stats,
            built.blooms,
            built.exact_columns,
            tombstones,
            record_keys,
            config,
        )
        added = {}
        for partition in REGISTRY:
            rel = partition.write(self.index_root, batch)
            if rel is not None:
                added[partition.name] = [rel]
        return added

    def _config(
        self,
        bloom_columns: Sequence[str],
        fpp: float,
        spec: RecordKeySpec | None = None,
        key_fpp: float = 1e-6,
        record_index: bool = False,
    ) -> IndexConfig:
        return IndexConfig(
            table_kind=self.reader.kind,
            record_key=self.reader.record_key_field(),
            bloom_columns=tuple(bloom_columns),
            fpp=fpp,
            exact_columns=tuple(self.reader.partition_schema().names),
            key_fields=spec.fields if spec is not None else (),
            key_column=spec.column if spec is not None else None,
            key_generator=spec.generator if spec is not None else "",
            key_fpp=key_fpp,
            record_index=record_index,
        )

    def _key_spec(self, record_key: str | Sequence[str] | None) -> RecordKeySpec | None:
        """The table's record key: the columns given, else what a Hudi table declares, else none."""
        if record_key is not None:
            fields = (record_key,) if isinstance(record_key, str) else tuple(record_key)
            if not fields or not all(isinstance(f, str) and f for f in fields):
                raise RecordKeyError(f"record_key must name one or more columns, got {record_key!r}")
            return RecordKeySpec(fields, None, "simple" if len(fields) == 1 else "complex")
        return self.reader.record_key_spec()

    def _rel(self, path: str) -> str:
        if os.path.isabs(path):
            rel = os.path.relpath(path, self.root)
            if rel.startswith(".."):
                raise ValueError(f"{path} is not under the table root {self.root}")
            return rel.replace(os.sep, "/")
        return path.replace(os.sep, "/")

    def _describe(self, added: Iterable[str | DataFile]) -> list[DataFile]:
        items = list(added)
        wanted = {self._rel(a) for a in items if not isinstance(a, DataFile)}
        described = [a for a in items if isinstance(a, DataFile)]
        if wanted:
            listing = {f.path: f for f in _tables.list_files(self.reader, stat=True)}
            missing = sorted(wanted - listing.keys())
            if missing:
                raise FileNotFoundError(f"not live data files of {self.root}: {missing[:3]}")
            described += [listing[p] for p in sorted(wanted)]
        return described


def _check_definitions(definitions: Sequence[IndexDefinition], schema: pa.Schema, root: str) -> None:
    """``IndexDefinitionError`` when a secondary index covers a column the table no longer has, or
    no longer of a type its index type takes: a build keeps every definition and builds it."""
    leaves = leaf_columns(schema)
    for d in definitions:
        kind = index_kind(d.index_type)
        for c in d.columns:
            if c not in schema.names or c not in leaves:
                why = "the table has no such column any more"
            else:
                try:
                    kind.check(c, leaves[c])
                    continue
                except UnsupportedColumnError as exc:
                    why = str(exc)
            raise IndexDefinitionError(
                f"secondary index {d.name!r} covers column {c!r}, which it cannot index now ({why}): "
                f"drop it first (hudi-index index drop {root} --name {d.name}; Python: drop_index)"
            )


def _key_array(keys: Any, spec: RecordKeySpec) -> pa.StringArray:
    """Record key strings from what ``tag`` was given (a table of key columns is encoded)."""
    if isinstance(keys, pa.Table | pa.RecordBatch):
        array = spec.encode(keys)
    elif isinstance(keys, pa.ChunkedArray):
        array = keys.combine_chunks()
    elif isinstance(keys, pa.Array):
        array = keys
    else:
        items = list(keys)
        if any(not isinstance(k, str) and k is not None for k in items):
            raise RecordKeyError("keys must be record key strings (or a pyarrow Table of the key columns)")
        array = pa.array(items, pa.string())
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise RecordKeyError(
            f"keys must be strings as Hudi writes _hoodie_record_key, got {array.type}; pass a pyarrow "
            f"Table of the key columns {list(spec.fields)} to have them encoded"
        )
    if array.null_count:
        raise RecordKeyError(
            f"{array.null_count} of {len(array)} record keys are null: a record key is never null"
        )
    empty = pc.sum(pc.equal(pc.binary_length(array), 0)).as_py() or 0
    if empty:
        # Hudi's key generators refuse an empty key (KeyGenUtils: "cannot be null or empty"), so a
        # table never holds one: calling it an insert would write a row no Hudi writer could.
        raise RecordKeyError(
            f"{empty} of {len(array)} record keys are empty: a Hudi record key is never empty "
            "(its key generators refuse one); drop those rows or fix their key"
        )
    return array.cast(pa.string())


def _partition_array(partitions: Any, n: int) -> pa.StringArray | None:
    if partitions is None:
        return None
    array = partitions.combine_chunks() if isinstance(partitions, pa.ChunkedArray) else partitions
    if not isinstance(array, pa.Array):
        array = pa.array(list(array), pa.string())
    if len(array) != n:
        raise RecordKeyError(f"partitions has {len(array)} entries for {n} keys: give one per key")
    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise RecordKeyError(f"partitions must be partition path strings, got {array.type}")
    return array.cast(pa.string())


def _compare_with_disk(
    loaded: _Loaded, listing: Sequence[DataFile], on_disk: pa.Array
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


def _merge_schemas(old: pa.Schema, new: pa.Schema) -> pa.Schema:
    if not len(old):
        return new
    # A column only the indexed (only the new) files have is NULL in the others: nullable.
    return nullable_where_absent(pa.unify_schemas([old, new], promote_options="permissive"), [old, new])
