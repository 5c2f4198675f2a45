"""``IndexedTable``: a table plus its metadata index, the public API of ``index_store``.

Writers (``build``, ``update``, ``sync``, ``compact``) prepare their index files, then race for
the next timeline version (``index_store.commit``); the loser re-reads the index and retries, or
raises ``CommitConflictError`` when the other commit touched the same data files. Readers (``prune``,
``stats``) use the newest complete version and load only the columns a predicate uses; a data file
the index does not know is always kept, and one deleted behind its back is never returned.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import BindError, Expression, FileStats, Translation, all_match, explain
from hudi_expr.explain import Explanation
from hudi_expr.inclusive import prepare
from hudi_expr.stats import leaf_columns
from index_store import tables as _tables
from index_store.builder import ComputeKeys, ComputeStats, compute_file_keys
from index_store.config import IndexConfig
from index_store.errors import (
    IndexCorruptError,
    IndexNotBuiltError,
    IndexSourceError,
    IndexStaleError,
    RecordKeyError,
)
from index_store.hudi_source import rows as hudi_rows
from index_store.hudi_source.prune import prune_listing, table_schema
from index_store.hudi_source.secondary import usable_indexes
from index_store.hudi_source.tag import tag_from_record_index
from index_store.hudi_source.view import (
    HudiIndexStatus,
    IndexSourceChoice,
    check_choice,
    index_statuses,
    metadata_view,
)
from index_store.keys import slice_keys
from index_store.loaded import Candidates, LoadedVersion, OnDisk
from index_store.loaded import compare_with_disk as _compare_with_disk
from index_store.merged import rows as merged_rows
from index_store.merged.read import QueryType, needs_merge, query_type_of
from index_store.partitions import read_record_index
from index_store.partitions.base import live_positions
from index_store.record_key import RecordKeySpec
from index_store.secondary.api import Asked, IndexStatus, RowSelection, SecondaryIndexes, asked_of
from index_store.secondary.build import ComputeIndexFiles
from index_store.secondary.select import UseRules
from index_store.slices import PrunedSlice, slices_of
from index_store.sources import SourcedStats, SourceQuery, sourced_stats
from index_store.staged import StageBuild
from index_store.tables.base import DataFile, TableReader
from index_store.tables.rows import reads_whole_files, require_file_reads
from index_store.tagging.partitions import PartitionLayout
from index_store.tagging.tagger import OnDuplicate, check_on_duplicate, tag_method
from index_store.tagging.wiring import key_array, partition_array, partition_layout, tag_loaded
from index_store.timeline import IndexTimeline, Snapshot
from index_store.write import IndexWriter

__all__ = ["Candidates", "Freshness", "IndexedTable", "PruneResult", "PrunedSlice", "open_table"]


def open_table(
    path: str | os.PathLike[str],
    index_path: str | os.PathLike[str] | None = None,
    *,
    check_files: Literal["watch", "stat"] = "watch",
    source: IndexSourceChoice = "auto",
) -> IndexedTable:
    """A plain parquet directory or Hudi table, with its index at ``index_path`` (default
    ``<table>/.hoodie/.index``, for tables one may write to). A merge-on-read Hudi table is
    indexed and pruned by file slice, its rows read merged (``read``, ``count``, ``exists``: hudi-rs
    merges each kept slice) and its keys tagged by slice; what would read its rows file by file
    (``select``, ``row_ids``, secondary indexes) raises ``MergedReadError``.

    ``check_files`` (plain directories): how each read knows which files were added, deleted or
    rewritten since it last listed the table: ``"watch"`` by change notification where the file
    system allows, else a ``stat`` of every file; ``"stat"`` always by a ``stat`` of every file
    (``index_store.tables.plain``). A Hudi table is listed anew at every read.

    ``source``: which index answers ``prune`` and ``tag``. ``"auto"``: Hudi's own metadata table
    (``.hoodie/metadata``, ``index_store.hudi_source``) where the table has one, with no build,
    and this project's index where one was built (file pruning intersects both answers; tagging
    uses this project's index when built, since it names every copy of a duplicated key);
    ``"own"``: this project's index only (``IndexNotBuiltError`` before a build); ``"hudi"``: the
    metadata table only (``IndexSourceError`` when the table has none).
    """
    reader = _tables.open_reader(str(path), check_files=check_files)
    root = Path(index_path) if index_path is not None else Path(reader.root) / ".hoodie" / ".index"
    return IndexedTable(reader, root, source=source)


@dataclass(frozen=True)
class PruneResult:
    """Files that may hold matching rows, out of ``total``; ``explain()`` says why.

    ``files`` is every path to open: for a merge-on-read table, every file of each kept file slice
    (a slice is kept whole when its base file or any of its log files may match); ``file_slices``
    groups them by slice."""

    files: list[str]  # absolute paths, index order, then files the index does not know
    total: int
    unknown_files: list[str] = field(default_factory=list)  # on disk, not in the index: kept
    note: str = ""
    changed_files: list[str] = field(default_factory=list)  # size or mtime differ from the index: kept
    not_used: tuple[str, ...] = ()  # parts of a ``Translation`` that could not prune
    index_error: str | None = None  # why the index could not be used (every file was kept)
    source_notes: tuple[str, ...] = ()  # which index sources answered, what they could not cover
    # Explaining re-evaluates each conjunct, so it is done only when someone asks.
    _explain: Callable[[], Explanation] | None = field(default=None, repr=False, compare=False)
    _cache: dict[str, Explanation] = field(default_factory=dict, repr=False, compare=False)
    # Per index source, the files it was the first to rule out (``index_store.sources``).
    _removed_by: Callable[[], dict[str, int]] | None = field(default=None, repr=False, compare=False)
    _removed_cache: dict[str, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)
    whole_slices: bool = False  # a merge-on-read table: files were kept by whole file slices
    # The kept slices and how many there are in all, made only when asked for.
    _slices: Callable[[], tuple[list[PrunedSlice], int]] | None = field(
        default=None, repr=False, compare=False
    )
    _slices_cache: dict[str, tuple[list[PrunedSlice], int]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def kept(self) -> int:
        return len(self.files)

    @property
    def file_slices(self) -> list[PrunedSlice]:
        """The kept file slices, each a file group's base file and log files (absolute paths; a
        copy-on-write slice has no log files, a plain parquet file is a slice of its own). A result
        made by hand (``PruneResult(files, total)``) has one slice per file."""
        return self._slice_info()[0]

    @property
    def total_slices(self) -> int:
        """The table's file slices, kept or not."""
        return self._slice_info()[1]

    def _slice_info(self) -> tuple[list[PrunedSlice], int]:
        if "s" not in self._slices_cache:
            if self._slices is not None:
                self._slices_cache["s"] = self._slices()
            else:
                own = [PrunedSlice(os.path.splitext(os.path.basename(f))[0], "", f) for f in self.files]
                self._slices_cache["s"] = (own, self.total)
        return self._slices_cache["s"]

    @property
    def explanation(self) -> Explanation | None:
        """Per conjunct of the predicate, the files it removed (None if the index was not used)."""
        if self._explain is None:
            return None
        if "x" not in self._cache:
            self._cache["x"] = self._explain()
        return self._cache["x"]

    @property
    def removed_by_source(self) -> dict[str, int]:
        """Per index source (``index_store.sources``), the files it was the first to rule out, in
        the order the sources are asked; empty when the index was not used or removed nothing."""
        if self._removed_by is None:
            return {}
        if "sources" not in self._removed_cache:
            self._removed_cache["sources"] = self._removed_by()
        return self._removed_cache["sources"]

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
        lines += self.source_notes
        return lines

    def explain(self) -> str:
        explanation = self.explanation
        lines = [str(explanation)] if explanation is not None else []
        by_source = self.removed_by_source
        if by_source and set(by_source) != {"column statistics"}:  # said already when only stats did
            named = ", ".join(f"{name} {n}" for name, n in by_source.items())
            lines.append(f"  files ruled out first by each index source: {named}")
        lines += [f"  {line}" for line in self.notes()]
        if self.whole_slices:
            lines.append(
                f"kept {len(self.file_slices)} of {self.total_slices} file slices ({self.kept} of "
                f"{self.total} files): a slice is read whole when its base file or any of its log "
                "files may match"
            )
        elif (
            self.unknown_files or self.changed_files or explanation is None or explanation.total != self.total
        ):
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


def _slice_keys_of(files: Sequence[DataFile]) -> list[int | None]:
    partitions = pa.array([f.partition for f in files], pa.string())
    return slice_keys(partitions, pa.array([f.file_group for f in files], pa.string())).to_pylist()


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


class IndexedTable:
    """A table (``TableReader``) and its metadata index rooted at ``index_root``.

    A thin front over its parts: ``secondary`` (the secondary indexes, RFC-51's API), ``writer``
    (build, update, sync, compact, clean), the index sources that pruning, row selection and
    tagging ask (``index_store.sources``) and tagging (``index_store.tagging``). The methods of
    those parts are kept here as delegates.
    """

    def __init__(self, reader: TableReader, index_root: Path, *, source: IndexSourceChoice = "auto") -> None:
        self.reader = reader
        self.source = check_choice(source)
        # Hudi's metadata table, when it is to be asked (``index_store.hudi_source``).
        self.hudi = metadata_view(reader) if self.source != "own" else None
        if self.source == "hudi" and self.hudi is None:
            raise IndexSourceError(
                f"{reader.root} has no Hudi metadata table (.hoodie/metadata) to answer from: open it "
                "with source='auto' or 'own' and build its own index (hudi-index build)"
            )
        self.index_root = Path(index_root)
        self.timeline = IndexTimeline(self.index_root)
        self._loaded: LoadedVersion | None = None
        self._disk: OnDisk | None = None
        self.secondary = SecondaryIndexes(
            reader, self.index_root, self.timeline, lambda: self._load(), self._candidates
        )
        self.writer = IndexWriter(reader, self.index_root, self.timeline, self.secondary, self._forget)

    def __repr__(self) -> str:
        return f"IndexedTable({self.reader.root!r}, index={str(self.index_root)!r})"

    @property
    def root(self) -> str:
        return self.reader.root

    # ------------------------------------------------------------------------------- reading

    def snapshot(self) -> Snapshot:
        return self.timeline.snapshot()

    def _load(self) -> LoadedVersion:
        snap = self.snapshot()
        loaded = self._loaded
        # The same version number may be another index (one rebuilt elsewhere starts again at 1):
        # what was loaded stands while it is the same index files.
        if loaded is None or (
            loaded.snap is not snap and (loaded.snap.version != snap.version or loaded.snap.live != snap.live)
        ):
            self._loaded = loaded = LoadedVersion(self.index_root, snap)
        return loaded

    def _built(self) -> bool:
        return self.snapshot().version > 0

    def _hudi_only(self, partition: str = "column_stats") -> bool:
        """Whether Hudi's metadata table alone answers a question ``partition`` answers: asked
        for, or (``auto``) no index of our own yet and a metadata table that declares the
        partition (built or being built: a partition being built keeps every file, with a note)."""
        if self.hudi is None:
            return False
        if self.source == "hudi":
            return True
        if self._built():
            return False
        state = self.hudi.state()
        return state.mdt is None or partition in state.available or partition in state.inflight

    def _forget(self) -> None:
        """Drop the loaded version (the index folder was moved aside)."""
        self._loaded = None

    def stats(self, columns: Iterable[str] | None = None, with_blooms: bool = True) -> FileStats:
        """Index statistics of the live files (all columns unless ``columns`` is given): what every
        available index source (``index_store.sources``) knows of them."""
        return self._sourced(columns, with_blooms).stats

    def _sourced(self, columns: Iterable[str] | None, with_blooms: bool) -> SourcedStats:
        loaded = self._load()
        names = list(leaf_columns(loaded.snap.schema)) if columns is None else list(dict.fromkeys(columns))
        hudi = self.hudi.state() if self.hudi is not None else None
        key = (tuple(names), with_blooms)
        made = loaded.stats_made.get(key)
        if made is not None and made.hudi is hudi:
            return made
        made = sourced_stats(
            SourceQuery(loaded, self.index_root, tuple(names), with_blooms, self.secondary, hudi=hudi)
        )
        if len(loaded.stats_made) >= 64:
            loaded.stats_made.pop(next(iter(loaded.stats_made)))
        loaded.stats_made[key] = made
        return made

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
        file instead of raising ``IndexCorruptError`` when the index cannot be read. A merge-on-read
        table's files are pruned each on its own statistics, then every file of a slice is kept
        when one is (``index_store.slices``); ``file_slices`` groups the kept files by slice.

        A Hudi table with a metadata table is pruned with its ``column_stats`` (and secondary
        indexes) too, or with them alone while no index is built here or with ``source="hudi"``
        (``index_store.hudi_source``): over the table's live listing, files it has no statistics
        of kept, ``explain()`` naming "Hudi metadata table" and its partition.
        """
        if isinstance(expr, str):
            raise TypeError(
                "prune takes a hudi_expr expression, not SQL text: parse it first with "
                "adapters.duckdb.translate_sql(text, schema=table.snapshot().schema), which DuckDB "
                "checks against the table's columns (hudi-index prune --where does this)"
            )
        not_used = expr.not_used if isinstance(expr, Translation) else ()
        predicate = expr.expr if isinstance(expr, Translation) else expr
        if self._hudi_only():
            return self._prune_from_metadata(predicate, not_used)
        try:
            loaded = self._load().require_built(self.root)
            if not len(loaded.snap.schema):
                return self._prune_without_columns(not_used)
            bound = prepare(predicate, loaded.schema_only)
            sourced = self._sourced(bound.references(), True)
            stats = sourced.stats
            mask = loaded.might_match(bound, stats, hand_on=True)  # for a row selection next
        except IndexCorruptError as exc:
            if on_corrupt != "keep_all":
                raise
            return self._every_file(
                note="the index is unreadable: every file is kept", not_used=not_used, index_error=str(exc)
            )

        def explanation() -> Explanation:
            return explain(bound, stats)

        def removed_by() -> dict[str, int]:
            return sourced.removed_by(bound)

        whole = not reads_whole_files(self.reader)
        kept = mask.copy()
        if not verify_files:
            if whole:
                kept = loaded.slice_groups().keep_whole(kept, None)
            return PruneResult(
                self._abs_all(loaded.paths.filter(pa.array(kept)).to_pylist()),
                len(loaded.paths),
                not_used=not_used,
                _explain=explanation,
                _removed_by=removed_by,
                whole_slices=whole,
                _slices=self._slices_made(loaded, kept, None, ()),
                source_notes=sourced.notes,
            )
        disk = self._on_disk(loaded, stat=verify_files == "stat")
        kept = disk.present & (kept | disk.changed)
        unknown_files = disk.unknown_files() if whole else ()
        if whole:
            kept = loaded.slice_groups().keep_whole(kept, disk.present, unknown_files)
        unknown = self._abs_all(disk.unknown)
        changed = loaded.paths.filter(pa.array(disk.changed)).to_pylist() if disk.changed.any() else []
        return PruneResult(
            self._abs_all(loaded.paths.filter(pa.array(kept)).to_pylist()) + unknown,
            disk.total,
            unknown,
            changed_files=self._abs_all(changed),
            not_used=not_used,
            _explain=explanation,
            _removed_by=removed_by,
            whole_slices=whole,
            _slices=self._slices_made(loaded, kept, disk, unknown_files),
            source_notes=sourced.notes,
        )

    def _prune_from_metadata(self, predicate: Expression, not_used: tuple[str, ...]) -> PruneResult:
        """``prune`` from Hudi's metadata table alone, over the table's live listing."""
        assert self.hudi is not None
        state = self.hudi.require() if self.source == "hudi" else self.hudi.state()
        if state.mdt is None:  # "auto" with no index of its own: nothing can prune
            note = f"Hudi metadata table not used ({state.reason}) and no index built: every file is kept"
            return self._every_file(note=note, not_used=not_used, index_error=state.reason)
        listing = _tables.listing(self.reader)
        pruning = prune_listing(self.reader, listing, state, table_schema(self.reader, listing), predicate)
        return PruneResult(
            self._abs_all(listing.paths.filter(pa.array(pruning.kept)).to_pylist()),
            pruning.total,
            not_used=not_used,
            _explain=pruning.explanation,
            _removed_by=pruning.removed_by,
            whole_slices=pruning.whole_slices,
            _slices=pruning.slices,
            source_notes=pruning.notes,
        )

    def _slices_made(
        self, loaded: LoadedVersion, kept: np.ndarray, disk: OnDisk | None, unknown: Sequence[DataFile]
    ) -> Callable[[], tuple[list[PrunedSlice], int]]:
        """What makes ``PruneResult.file_slices`` on demand: the kept index entries (``kept``) and
        the unindexed files on disk (all kept), grouped by slice, and the slices of the table."""
        prefix = self.root.rstrip(os.sep) + os.sep
        whole = not reads_whole_files(self.reader)

        def made() -> tuple[list[PrunedSlice], int]:
            others = list(unknown) if whole or disk is None else disk.unknown_files()
            take = pa.array(np.flatnonzero(kept))
            slices = slices_of(
                prefix,
                loaded.paths.take(take).to_pylist() + [f.path for f in others],
                loaded.partitions(self.index_root).take(take).to_pylist() + [f.partition for f in others],
                loaded.slice_keys().take(take).to_pylist() + _slice_keys_of(others),
            )
            live = None if disk is None else disk.present
            if whole:
                return slices, loaded.slice_groups().count(live, others)
            return slices, (len(loaded.paths) if disk is None else disk.total)  # a slice per file

        return made

    def _every_file(
        self,
        *,
        note: str,
        not_used: tuple[str, ...],
        index_error: str | None = None,
        unknown: bool = False,
    ) -> PruneResult:
        """Every live file kept (the index unusable, or built before there were files), by slice."""
        listed = self.reader.list_files()
        every_file = self._abs_all(f.path for f in listed)
        prefix = self.root.rstrip(os.sep) + os.sep

        def made() -> tuple[list[PrunedSlice], int]:
            paths, partitions = [f.path for f in listed], [f.partition for f in listed]
            slices = slices_of(prefix, paths, partitions, _slice_keys_of(listed))
            return slices, len(slices)

        return PruneResult(
            every_file,
            len(every_file),
            every_file if unknown else [],
            note=note,
            not_used=not_used,
            index_error=index_error,
            whole_slices=not reads_whole_files(self.reader),
            _slices=made,
        )

    def _on_disk(self, loaded: LoadedVersion, stat: bool = False) -> OnDisk:
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
        self._disk = OnDisk(listing, loaded, present, changed, unknown)
        return self._disk

    def _candidates(self, expr: Expression, by_stats: bool = True) -> Candidates:
        """``prune`` for row selection: positions into the loaded version rather than paths.
        ``by_stats=False``: every live file on disk, no statistics read (for an exact lookup that
        costs less than pruning, such as the secondary index's dictionary)."""
        loaded = self._load().require_built(self.root)
        bound = prepare(expr, loaded.schema_only)
        disk = self._on_disk(loaded)
        if by_stats:
            stats = self.stats(bound.references())
            mask = loaded.might_match(bound, stats)  # the mask ``prune`` just made, if it did
            kept = disk.present & (mask | disk.changed)
            whole = all_match(bound, stats).to_numpy(zero_copy_only=False) & ~disk.changed
        else:
            kept = disk.present.copy()
            whole = np.zeros(len(kept), dtype=bool)
        if not reads_whole_files(self.reader):
            groups = loaded.slice_groups()
            kept = groups.keep_whole(kept, disk.present, disk.unknown_files())
            # Every row of a base file matching proves nothing of its slice once a log file may
            # have updated or deleted some of them: no exact answer from statistics there.
            whole &= ~groups.with_logs()
        return Candidates(
            loaded,
            bound,
            kept,
            disk.changed,
            list(disk.unknown),
            disk.total,
            disk.partition_values(),
            whole,
        )

    def tag(
        self,
        keys: pa.Array | pa.ChunkedArray | pa.Table | Sequence[str],
        partitions: pa.Array | pa.ChunkedArray | Sequence[str | None] | None = None,
        using: Literal["auto", "bloom", "record"] = "auto",
        *,
        sync: bool = False,
        on_duplicate: OnDuplicate = "all",
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
        ``auto`` (the record index when built); any other index source that locates keys
        (``index_store.sources``) is asked too, and the pairs all answers hold are kept. Returns
        rows in input order: ``key``,
        ``partition`` (the mapped path given, else the file's), ``file`` (absolute path; null for
        an insert), ``file_id`` (its file group: Hudi's file id, a plain file's name stem);
        ``index_store.tagging.tag_stats(result)`` gives per-stage counts. On a merge-on-read
        table a key is in the file slice whose latest record of it (base file, then log files) is
        not a delete (``index_store.tagging.slices``); ``file`` is that slice's base file, or its
        latest log file when it has none.

        A key held by several live files (a Hudi table written with ``insert`` can hold one twice
        in a partition) gets one row per file with ``on_duplicate="all"``, as Hudi's bloom index
        tags it (each copy is updated); ``"error"`` raises ``DuplicateKeyError`` instead.

        On a Hudi table with a metadata table and no index built here (or ``source="hudi"``), keys
        are located from Hudi's ``record_index`` by point lookups (``index_store.hudi_source.tag``):
        the one location the record index holds per key, as Hudi's record-index tagging uses it
        (``tag_stats(result).locations == "one"``); a metadata table behind the data table, or a
        ``record_index`` partition still being built, raises rather than report a key as new.

        The index must be current: files added or rewritten since the last sync raise
        ``IndexStaleError`` (``sync=True`` syncs first), since a key in an unindexed file would
        otherwise be reported as an insert. Null and empty keys raise ``RecordKeyError``: Hudi's
        key generators refuse both (``HoodieKeyException``), so no table holds one.
        """
        if self._hudi_only("record_index"):
            return self._tag_from_metadata(keys, partitions, on_duplicate)
        loaded = self._load().require_built(self.root)
        spec, method = tag_method(loaded.snap.config, self.root, using)
        check_on_duplicate(on_duplicate)
        keys_given = key_array(keys, spec)
        parts = partition_array(partitions, len(keys_given))
        fresh = self._freshness(loaded)
        if not fresh.current:
            if not sync:
                raise IndexStaleError(self.root, fresh.reason())
            self.sync()
            return self.tag(keys, partitions, using, on_duplicate=on_duplicate)
        if parts is not None:
            parts = partition_layout(self, loaded).normalize(parts)
        return tag_loaded(self, loaded, fresh.present, spec, method, keys_given, parts, on_duplicate)

    def _tag_from_metadata(
        self,
        keys: pa.Array | pa.ChunkedArray | pa.Table | Sequence[str],
        partitions: pa.Array | pa.ChunkedArray | Sequence[str | None] | None,
        on_duplicate: OnDuplicate,
    ) -> pa.Table:
        """``tag`` from Hudi's record index (``index_store.hudi_source.tag``)."""
        assert self.hudi is not None
        check_on_duplicate(on_duplicate)
        spec = self.reader.record_key_spec()
        if spec is None:
            raise RecordKeyError(f"{self.root}: hoodie.properties does not say how record keys are made")
        keys_given = key_array(keys, spec)
        parts = partition_array(partitions, len(keys_given))
        if parts is not None:
            listed = pa.array([f.partition for f in self.reader.list_files()], pa.string())
            layout = PartitionLayout.of(self.root, listed, self.reader.partitioning().fields)
            parts = layout.normalize(parts)
        return tag_from_record_index(self.reader, self.hudi.require(), keys_given, parts, on_duplicate)

    def freshness(self) -> Freshness:
        """The newest index version against the table as listed now: files added, rewritten in
        place (size or modification time moved) or deleted since they were indexed (every file's
        size and modification time read now)."""
        return self._freshness(self._load().require_built(self.root), stat=True)

    def _freshness(self, loaded: LoadedVersion, stat: bool = False) -> Freshness:
        disk = self._on_disk(loaded, stat=stat)
        return Freshness(loaded.snap.version, loaded.paths, disk.present, disk.changed, list(disk.unknown))

    def duplicate_keys(self) -> pa.Table:
        """Record keys held by more than one live data file (a key, partition and file per row),
        from the record index (or, without one, by reading every file's keys): a table breaking
        key uniqueness (``tag`` names every copy, or refuses with ``on_duplicate="error"``).
        Empty when keys are unique. A merge-on-read table raises ``MergedReadError`` (a key in a base
        file and in a log file of its slice is one record, not two)."""
        require_file_reads(self.reader, "finding duplicate record keys (duplicate_keys, hudi-index check)")
        loaded = self._load().require_built(self.root)
        spec = RecordKeySpec.from_config(loaded.snap.config)
        if spec is None:
            raise RecordKeyError(
                f"the index of {self.root} holds no record keys: build it with record_key=[...]"
            )
        if loaded.snap.config.record_index:
            rows = read_record_index(self.index_root, loaded.snap.live.get("record_index", ()))
            pos, live = live_positions(loaded.file_idx, rows["file_idx"].to_numpy())
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
        if not self.reader.list_files():
            return self._every_file(note="the table has no data files", not_used=not_used, unknown=True)
        note = "the table had no data files when the index was built: run sync"
        return self._every_file(note=note, not_used=not_used, unknown=True)

    def _abs_all(self, rels: Iterable[str]) -> list[str]:
        # Plain concatenation: os.path.join per file costs more than pruning a million of them.
        prefix = self.root.rstrip(os.sep) + os.sep
        return [prefix + rel for rel in rels]

    # ----------------------------------------------------------------- writing (IndexWriter)

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
        stage: StageBuild | None = None,
    ) -> int:
        """Index every live data file from scratch; returns the index version (``IndexWriter.build``)."""
        return self.writer.build(
            bloom_columns,
            fpp,
            progress,
            compute,
            rebuild,
            record_key,
            record_index,
            key_fpp,
            compute_keys,
            record_index_shards,
            compute_index_files,
            stage,
        )

    def stored_config(self) -> IndexConfig | None:
        """The configuration the index was last built or changed with (``IndexWriter.stored_config``)."""
        return self.writer.stored_config(stacklevel=4)

    def update(
        self,
        added: Iterable[str | DataFile] = (),
        removed: Iterable[str] = (),
        progress: bool | None = None,
    ) -> int:
        """One index commit for one data commit (``IndexWriter.update``)."""
        return self.writer.update(added, removed, progress)

    def sync(self, progress: bool | None = None) -> int | None:
        """Catch up with files added, removed or rewritten on disk; None if nothing changed."""
        return self.writer.sync(progress)

    def compact(self) -> int:
        """Rewrite the live index into one file per partition (a checkpoint); returns its version."""
        return self.writer.compact()

    def clean(self, retention_seconds: float = 3600.0) -> list[str]:
        """Delete index files and timeline entries no version needs (``IndexWriter.clean``)."""
        return self.writer.clean(retention_seconds)

    # ---------------------------------------------------- secondary indexes (SecondaryIndexes)

    def create_index(
        self, columns: str | Sequence[str], index_type: str = "value", name: str | None = None
    ) -> int:
        """Record a secondary index definition (``SecondaryIndexes.create_index``)."""
        return self.secondary.create_index(columns, index_type, name)

    def drop_index(self, name: str) -> int:
        """Forget a secondary index (``SecondaryIndexes.drop_index``)."""
        return self.secondary.drop_index(name)

    def indexes(self) -> list[IndexStatus]:
        """Every secondary index definition and how far it is built; with Hudi's metadata table
        alone answering (no index built here, or ``source="hudi"``), Hudi's secondary indexes
        (``hudi_indexes`` says what each answers)."""
        if self._hudi_only("record_index"):
            return hudi_rows.index_list(self.hudi_indexes(), len(_tables.listing(self.reader).files))
        return self.secondary.indexes()

    def hudi_indexes(self) -> list[HudiIndexStatus]:
        """The indexes Hudi keeps in the table's metadata table (its partitions and declared
        indexes), each with whether it is built and what it answers here; empty without one or
        with ``source="own"``."""
        if self.hudi is None:
            return []
        state = self.hudi.state()
        schema = table_schema(self.reader, _tables.listing(self.reader))
        usable, _ = usable_indexes(state, schema)
        return index_statuses(state, schema, {u.partition for u in usable.values()})

    def build_index(
        self,
        name: str | None = None,
        strategy: Literal["incremental", "all"] = "incremental",
        progress: bool | None = None,
        workers: int | None = None,
        compute: ComputeIndexFiles | None = None,
    ) -> int | None:
        """Build secondary index files (``SecondaryIndexes.build_index``)."""
        return self.secondary.build_index(name, strategy, progress, workers, compute)

    def select(
        self,
        expr: Expression,
        rules: UseRules | None = None,
        on_corrupt: Literal["raise", "scan", "keep_all"] = "raise",
    ) -> RowSelection:
        """The candidate rows of each file for ``expr`` (``SecondaryIndexes.select``; with Hudi's
        metadata table alone answering, its secondary indexes: ``hudi_source.rows``)."""
        if self._hudi_only():
            require_file_reads(self.reader, "selecting rows with the secondary index (select)")
            return hudi_rows.selection(self.reader, self._from_hudi_secondary(expr), expr, self.prune)
        return self.secondary.select(expr, rules, on_corrupt)

    def row_ids(self, expr: Expression) -> dict[str, pa.Array]:
        """``{file: uint64 row positions}`` that may match ``expr`` (``SecondaryIndexes.row_ids``)."""
        if self._hudi_only():
            return self.select(expr).row_ids()
        return self.secondary.row_ids(expr)

    def _hudi_rows(self, expr: Expression, query_type: QueryType) -> hudi_rows.SecondaryRows | None:
        """What Hudi's secondary indexes select for ``expr`` when they answer the row-level calls:
        Hudi's metadata table alone answers, or (``auto``, an index of our own built) no secondary
        index of our own is defined on a column ``expr`` uses, so ours could only prune files."""
        if self.hudi is None:
            return None
        if not self._hudi_only() and set(expr.references()) & self.secondary.indexed_columns():
            return None
        return self._from_hudi_secondary(expr, query_type)

    def _from_hudi_secondary(
        self, expr: Expression, query_type: QueryType = "snapshot"
    ) -> hudi_rows.SecondaryRows | None:
        """What Hudi's secondary indexes select for ``expr`` (None: none answers; then pruning
        and reading the kept slices answer). A read-optimized read of merged slices is not
        answered: the index holds the merged rows' values, not the base files'."""
        assert self.hudi is not None
        if query_type != "snapshot" and needs_merge(self.reader):
            return None
        state = self.hudi.require() if self.source == "hudi" else self.hudi.state()
        if state.mdt is None:
            return None
        try:
            schema = table_schema(self.reader, _tables.listing(self.reader))
            return hudi_rows.secondary_rows(state, self.reader, expr, schema)
        except BindError:
            return None  # the read path binds again and says what is wrong

    def read(
        self,
        expr: Expression,
        columns: Sequence[str] | None = None,
        rules: UseRules | None = None,
        query_type: QueryType = "snapshot",
    ) -> pa.Table:
        """The rows where ``expr`` is TRUE (``SecondaryIndexes.read``). A merge-on-read table's
        rows are its kept file slices merged by hudi-rs (``index_store.merged``); ``query_type=
        "read_optimized"`` reads its base files only (the same rows for other tables)."""
        query_type_of(query_type)
        if (found := self._hudi_rows(expr, query_type)) is not None:
            return hudi_rows.read_rows(self.reader, found, expr, columns, query_type)
        if needs_merge(self.reader) or self._hudi_only():  # merged slices (issue 23), or no own index
            return merged_rows.read_rows(self, expr, columns, query_type)
        return self.secondary.read(expr, columns, rules)

    def count(self, expr: Expression, query_type: QueryType = "snapshot") -> int:
        """Rows where ``expr`` is TRUE (``SecondaryIndexes.count``; merge-on-read: see ``read``)."""
        query_type_of(query_type)
        if (found := self._hudi_rows(expr, query_type)) is not None:
            return hudi_rows.count_rows(self.reader, found, expr, query_type)
        if needs_merge(self.reader) or self._hudi_only():  # merge-on-read (issue 23), or no own index
            return merged_rows.count_rows(self, expr, query_type)
        return self.secondary.count(expr)

    def exists(self, expr: Expression, query_type: QueryType = "snapshot") -> bool:
        """Is there a row where ``expr`` is TRUE? (``SecondaryIndexes.exists``; merge-on-read: see
        ``read``)."""
        query_type_of(query_type)
        if (found := self._hudi_rows(expr, query_type)) is not None:
            return hudi_rows.exists_row(self.reader, found, expr, query_type)
        if needs_merge(self.reader) or self._hudi_only():  # merge-on-read (issue 23), or no own index
            return merged_rows.exists_row(self, expr, query_type)
        return self.secondary.exists(expr)

    def explain(
        self,
        expr: Expression,
        what: Asked = "read",
        columns: Sequence[str] | None = None,
        query_type: QueryType = "snapshot",
    ) -> str:
        """How ``read`` (of ``columns``), ``count`` or ``exists`` of ``expr`` would be answered, no
        row read: Hudi's secondary indexes, the kept slices merged, or ours
        (``SecondaryIndexes.explain``: the dictionary alone, or the cost model's choice)."""
        what = asked_of(what)
        query_type_of(query_type)
        if (found := self._hudi_rows(expr, query_type)) is not None:
            return found.explain()
        if needs_merge(self.reader) or self._hudi_only():
            how = "the kept file slices read (merged where they have log files), then filtered"
            try:  # as the read prunes (merged.kept.pruned_slices)
                pruning = self.prune(expr, on_corrupt="keep_all").explain()
            except IndexNotBuiltError:
                pruning = "no index built: every file slice is kept"
            return f"{what}: {how}\n{pruning}"
        return self.secondary.explain(expr, what, columns)
