"""The built-in index sources: column statistics, bloom filters, the secondary indexes, the files'
record keys and the record index, each answering the questions it can (``sources.base``)."""

from __future__ import annotations

from dataclasses import dataclass

from hudi_expr import FileStats
from index_store.partitions import read_blooms, read_column_stats
from index_store.sources.base import KeyAnswer, KeyQuery, RowAnswer, RowQuery, SourceQuery
from index_store.tagging.lookups import by_key_ranges, by_record_index

__all__ = ["BloomFilters", "FileStatistics", "RecordIndex", "RecordKeys", "SecondaryIndexSource"]


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
class SecondaryIndexSource:
    """The secondary indexes (RFC-51): a value index knows each file's distinct values, so its
    blooms answer = and IN for files; its index files hold the rows of each value."""

    name: str = "secondary indexes"

    def available(self, query: SourceQuery) -> bool:
        return query.with_blooms and bool(query.loaded.snap.config.secondary_indexes)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        for column, filters in query.secondary.bloom_filters(query.loaded, query.columns).items():
            if column in stats.columns:
                stats = stats.with_membership(column, filters)
        return stats

    def row_positions(self, query: RowQuery) -> RowAnswer:
        # Always an answer, used or not: its rules decide and ``explain`` says why.
        return query.secondary.row_positions(query)


@dataclass(frozen=True)
class RecordKeys:
    """The files' record key bounds and Hudi bloom filters (footer filters): = and IN on the key
    column for files; candidate files of each key for ``tag`` with ``using="bloom"``."""

    name: str = "record keys"

    def available(self, query: SourceQuery) -> bool:
        key_column = query.loaded.snap.config.key_column
        return query.with_blooms and key_column is not None and key_column in query.columns

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        key_column = query.loaded.snap.config.key_column
        if key_column is None or key_column not in stats.columns:
            return stats
        return stats.with_membership(key_column, query.loaded.record_key_filters().filters)

    def key_locations(self, query: KeyQuery) -> KeyAnswer | None:
        # With the record index chosen, its exact answer makes ranges and blooms cost for nothing.
        return by_key_ranges(query) if query.method == "bloom" else None


@dataclass(frozen=True)
class RecordIndex:
    """The record index (key -> file): exact key locations for ``tag`` with ``using="record"``.
    It holds no values of other columns, so it rules out no file for a predicate."""

    name: str = "record index"

    def key_locations(self, query: KeyQuery) -> KeyAnswer | None:
        if query.method != "record" or query.context.record_lookup is None:
            return None
        return by_record_index(query)
