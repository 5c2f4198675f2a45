"""Index sources: one list of objects, each answering for the files of one index version.

As Hudi's ``SparkBaseIndexSupport`` keeps its index supports in one list, file pruning asks each
source here whether it is available for the query (the columns a predicate uses) and, if so, adds
what it knows of the candidate files to the ``FileStats`` (bounds, bloom filters, membership).
The predicate is then evaluated once over everything known, so the sources' answers are
intersected leaf by leaf (Hudi stops at the first index that answers; every one is used here).
``explain`` names the first source after which each removed file is ruled out.

Row positions (secondary indexes' ``select``) and key locations (the record index, in ``tag``)
are answered by those parts themselves; the sources here are the ones pruning files.
A source defined elsewhere (a test's, or Hudi's metadata table) joins with ``register_source``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from hudi_expr import Expression, FileStats, might_match
from index_store.partitions import read_blooms, read_column_stats

if TYPE_CHECKING:
    from index_store.loaded import LoadedVersion
    from index_store.secondary.api import SecondaryIndexes

__all__ = [
    "BloomFilters",
    "FileStatistics",
    "IndexSource",
    "RecordKeys",
    "SecondaryIndexBlooms",
    "SourceQuery",
    "SourcedStats",
    "index_sources",
    "register_source",
    "sourced_stats",
    "unregister_source",
]


@dataclass(frozen=True)
class SourceQuery:
    """What a source is asked about: the columns a predicate uses, of one loaded index version."""

    loaded: LoadedVersion
    index_root: Path
    columns: tuple[str, ...]
    with_blooms: bool  # False: bounds only (layout reports, tagging's integer key bounds)
    secondary: SecondaryIndexes


@runtime_checkable
class IndexSource(Protocol):
    """One index able to rule files out: a name for ``explain``, availability, its answer."""

    @property
    def name(self) -> str:
        """What ``explain`` calls it ("bloom filters")."""
        ...

    def available(self, query: SourceQuery) -> bool:
        """Can this source say anything about the files for ``query``?"""
        ...

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        """``stats`` with what this source knows of the candidate files added."""
        ...


@dataclass(frozen=True)
class FileStatistics:
    """Per-file min/max, null and NaN counts (the ``column_stats`` partition)."""

    name: str = "column statistics"

    def available(self, query: SourceQuery) -> bool:
        return bool(query.columns)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        loaded = query.loaded
        missing = [c for c in query.columns if c not in loaded.columns]
        if missing:
            loaded.columns.update(
                read_column_stats(
                    query.index_root,
                    loaded.snap.live["column_stats"],
                    loaded.snap.schema,
                    missing,
                    loaded.file_idx,
                )
            )
        known = {c: loaded.columns[c] for c in query.columns if c in loaded.columns}
        return FileStats(stats.files, stats.row_count, {**stats.columns, **known}, stats.schema)


@dataclass(frozen=True)
class BloomFilters:
    """Bloom filters of the configured columns (the ``bloom_filters`` partition): = and IN."""

    name: str = "bloom filters"

    def _columns(self, query: SourceQuery) -> list[str]:
        wanted = query.loaded.snap.config.bloom_columns
        return [c for c in query.columns if c in wanted] if query.with_blooms else []

    def available(self, query: SourceQuery) -> bool:
        return bool(self._columns(query))

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        loaded = query.loaded
        columns = self._columns(query)
        missing = [c for c in columns if c not in loaded.blooms]
        if missing:
            loaded.blooms.update(
                read_blooms(query.index_root, loaded.snap.live["bloom_filters"], missing, loaded.file_idx)
            )
        for c in columns:
            if c in loaded.blooms:
                stats = stats.with_bloom(c, loaded.blooms[c])
        return stats


@dataclass(frozen=True)
class SecondaryIndexBlooms:
    """A value index knows each file's distinct values: its blooms answer = and IN too."""

    name: str = "secondary indexes"

    def available(self, query: SourceQuery) -> bool:
        return query.with_blooms and bool(query.loaded.snap.config.secondary_indexes)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        for column, filters in query.secondary.bloom_filters(query.loaded, query.columns).items():
            if column in stats.columns:
                stats = stats.with_membership(column, filters)
        return stats


@dataclass(frozen=True)
class RecordKeys:
    """The files' record key filters (Hudi's footer filters) answer = and IN on the key column."""

    name: str = "record keys"

    def available(self, query: SourceQuery) -> bool:
        key_column = query.loaded.snap.config.key_column
        return query.with_blooms and key_column is not None and key_column in query.columns

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        key_column = query.loaded.snap.config.key_column
        if key_column is None or key_column not in stats.columns:
            return stats
        return stats.with_membership(key_column, query.loaded.record_key_filters().filters)


# In the order they are applied (the order ``explain`` credits them in). The record index maps
# keys to files for ``tag`` and answers no pruning question (it holds no values of other columns).
_SOURCES: list[IndexSource] = [FileStatistics(), BloomFilters(), SecondaryIndexBlooms(), RecordKeys()]


def index_sources() -> tuple[IndexSource, ...]:
    """The index sources file pruning asks, in order."""
    return tuple(_SOURCES)


def register_source(source: IndexSource) -> IndexSource:
    """Add ``source`` to the list file pruning asks (after the built-in ones); returns it."""
    if not isinstance(source, IndexSource):
        raise TypeError(f"{source!r} is not an IndexSource (name, available, answer)")
    if any(s.name == source.name for s in _SOURCES):
        raise ValueError(f"an index source named {source.name!r} is registered already")
    _SOURCES.append(source)
    return source


def unregister_source(name: str) -> None:
    """Remove the source named ``name`` (a test's, once it is done)."""
    _SOURCES[:] = [s for s in _SOURCES if s.name != name]


@dataclass(frozen=True)
class SourcedStats:
    """The statistics of one query, and after which source each part of them was known."""

    stats: FileStats
    base: FileStats  # paths and row counts only: what is known before any source answers
    steps: tuple[tuple[str, FileStats], ...]  # (source name, stats once it had answered)

    def removed_by(self, bound: Expression) -> dict[str, int]:
        """Per source, the files it is the first to rule out for ``bound`` (re-evaluated per
        source: done only when someone asks for an explanation)."""
        out: dict[str, int] = {}
        # Empty files are ruled out by their row count, before any source answers.
        ruled_out = ~might_match(bound, self.base).to_numpy(zero_copy_only=False)
        for name, stats in self.steps:
            now = ~might_match(bound, stats).to_numpy(zero_copy_only=False)
            newly = int(np.count_nonzero(now & ~ruled_out))
            if newly:
                out[name] = out.get(name, 0) + newly
            ruled_out |= now
        return out


def sourced_stats(query: SourceQuery, sources: Sequence[IndexSource] | None = None) -> SourcedStats:
    """Every available source's answer for ``query``, applied in order."""
    loaded = query.loaded
    base = stats = FileStats(loaded.paths, loaded.row_count, {}, loaded.snap.schema)
    steps = []
    for source in _SOURCES if sources is None else sources:
        if source.available(query):
            stats = source.answer(query, stats)
            steps.append((source.name, stats))
    return SourcedStats(stats, base, tuple(steps))
