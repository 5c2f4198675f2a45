"""``HudiMetadataSource``: Hudi's ``column_stats`` partition as an index source for file pruning.

It answers over whatever files it is asked about (the project's own index's live files when one
is built, else the table's live listing), each file's statistics found by its path. Where another
source already knows a column's bounds, both are bounds of the same values, so the answer is
their intersection (greatest min, least max): each alone keeps every file that may match, so
does the intersection.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import ColumnStats, FileStats
from index_store.hudi_source.secondary import secondary_memberships
from index_store.hudi_source.view import SOURCE_NAME, MetadataState, aligned_stats
from index_store.sources.base import SourceQuery

__all__ = ["HudiMetadataSource", "HudiSecondaryIndexSource", "answered_note", "intersect_bounds"]


@dataclass(frozen=True)
class HudiMetadataSource:
    """Per-file min, max and null counts from Hudi's metadata table (``column_stats``)."""

    name: str = f"{SOURCE_NAME} (column_stats)"

    def available(self, query: SourceQuery) -> bool:
        return query.hudi is not None and bool(query.columns)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        assert query.hudi is not None
        found = aligned_stats(query.hudi, stats.files, query.columns, stats.schema)
        columns = found.columns
        query.notes.extend(found.notes)
        if columns:
            query.notes.append(_answered(query))
        merged = dict(stats.columns)
        for name, theirs in columns.items():
            mine = merged.get(name)
            merged[name] = theirs if mine is None else intersect_bounds(mine, theirs)
        rows = pc.coalesce(stats.row_count, found.row_count)  # the own index's where it has them
        return FileStats(stats.files, rows, merged, stats.schema)


@dataclass(frozen=True)
class HudiSecondaryIndexSource:
    """Hudi's secondary indexes with its record index: = and IN on an indexed string column rule
    out the file groups holding none of the values (``hudi_source.secondary``)."""

    name: str = f"{SOURCE_NAME} (secondary_index)"

    def available(self, query: SourceQuery) -> bool:
        return query.hudi is not None and query.with_blooms and bool(query.columns)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        assert query.hudi is not None
        reader = query.secondary.reader
        found = secondary_memberships(query.hudi, reader, stats.files, query.columns, stats.schema)
        for column, membership in found.items():
            stats = stats.with_membership(column, membership)
        return stats


def _answered(query: SourceQuery) -> str:
    assert query.hudi is not None
    return answered_note(query.hudi)


def answered_note(state: MetadataState) -> str:
    """The note naming the metadata table and the partition that answered, at which instant."""
    assert state.mdt is not None
    instants = state.mdt.layout.timeline.completed
    latest = max((t for t, i in instants.items() if i.action == "deltacommit"), default="none")
    return f"{SOURCE_NAME} answered: its column_stats partition (metadata table delta commit {latest})"


def intersect_bounds(mine: ColumnStats, other: ColumnStats) -> ColumnStats:
    """Bounds two sources hold of the same files' values, intersected (unknown on one side: the
    other's); a null count either knows. Membership structures stay ``mine``'s."""
    lo, hi = _pick(mine.min, other.min, pc.max_element_wise), _pick(mine.max, other.max, pc.min_element_wise)
    nulls = pc.coalesce(mine.null_count, other.null_count.cast(mine.null_count.type))
    return ColumnStats(lo, hi, nulls, mine.nan_count, mine.bloom, mine.membership)


def _pick(a: pa.Array, b: pa.Array, combine: object) -> pa.Array:
    b = b.cast(a.type) if b.type != a.type else b
    if pa.types.is_boolean(a.type):  # no order kernel for booleans: as 0/1 (false < true)
        return _pick(a.cast(pa.int8()), b.cast(pa.int8()), combine).cast(pa.bool_())
    try:
        return combine(a, b, skip_nulls=True)  # type: ignore[operator]
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return pc.coalesce(a, b)  # types without an order kernel (booleans): one side's bound
