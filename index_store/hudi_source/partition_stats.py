"""Hudi's ``partition_stats`` as bounds of every file of a partition (Hudi's
``PartitionStatsIndexSupport``): a partition whose per-column bounds rule the predicate out drops
all its files, before their own statistics are asked.

A partition's bounds hold every live file's values (its records merge each file's statistics into
the partition's), so they are bounds of each of its files too, and the predicate evaluator over
them is the same sound one as over ``column_stats``. What is not carried over, to stay sound:

- counts: a partition's counts may still include files a clustering replaced, so no row count
  (unknown) and a null count only where it is zero (no file of the partition has a null);
  otherwise unknown. A column whose every value is null therefore prunes only through
  ``column_stats``;
- a metadata table behind its data table: its partition statistics miss the newest files, so it
  answers nothing (``column_stats`` still answers for the base files it lists);
- bounds this project could order differently from Hudi, or that do not convert to the column's
  type: unknown (``view.typed_column_stats``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import ColumnStats, FileStats
from hudi_expr.stats import leaf_columns
from index_store.errors import HFileError, MetadataTableError
from index_store.hudi_source.source import intersect_bounds
from index_store.hudi_source.view import SOURCE_NAME, AlignedStats, MetadataState, typed_column_stats
from index_store.sources.base import SourceQuery

__all__ = ["HudiPartitionStatsSource", "partition_aligned_stats", "partition_stats_tables"]

PARTITION = "partition_stats"


def partition_stats_tables(
    state: MetadataState, schema: pa.Schema, columns: Sequence[str]
) -> dict[str, pa.Table] | None:
    """Per column of ``columns`` that ``partition_stats`` holds, each partition's row of it
    (``partition``, the column's struct); None when the partition does not read. Read once per
    column and metadata table state, by the columns' key prefixes."""
    key = ("partition_stats", schema.to_string(show_schema_metadata=False))
    cache: dict[str, pa.Table | None] = state.cache.setdefault(key, {})
    missing = [c for c in dict.fromkeys(columns) if c not in cache]
    if missing:
        assert state.mdt is not None
        try:
            table = state.mdt.partition_stats(missing, schema=schema)
        except (MetadataTableError, HFileError, ValueError, TypeError, pa.ArrowException):
            return None  # unreadable, or bounds that do not convert: not used (never cached)
        for column in missing:
            if column not in table.column_names:
                cache[column] = None
                continue
            rows = pa.table({"partition": table["partition"], column: table[column]})
            cache[column] = rows.filter(pc.is_valid(rows[column]))
    return {c: t for c in dict.fromkeys(columns) if (t := cache[c]) is not None}


def partition_aligned_stats(
    state: MetadataState, paths: pa.StringArray, columns: Sequence[str], schema: pa.Schema
) -> AlignedStats:
    """Per column of ``columns``, the bounds ``partition_stats`` holds of the partition of each of
    ``paths`` (table-relative), as that file's bounds; unknown where it has none."""
    unknown_rows = pa.nulls(len(paths), pa.int64())
    if state.mdt is None or not (state.has(PARTITION) or PARTITION in state.inflight):
        return AlignedStats({}, unknown_rows, [])  # the table keeps no partition statistics
    note = state.unusable_note(PARTITION)
    if note is not None:
        return AlignedStats({}, unknown_rows, [note])
    if not state.in_step:
        note = f"{SOURCE_NAME}: its {PARTITION} partition is not used (behind the data table)"
        return AlignedStats({}, unknown_rows, [note])
    tables = partition_stats_tables(state, schema, columns)
    if tables is None:
        return AlignedStats(
            {}, unknown_rows, [f"{SOURCE_NAME} not used: its {PARTITION} partition does not read"]
        )
    folders = pc.replace_substring_regex(paths, r"/?[^/]*$", "")
    types = leaf_columns(schema)
    out: dict[str, ColumnStats] = {}
    for name, table in tables.items():
        struct = table[name].combine_chunks().take(pc.index_in(folders, value_set=table["partition"]))
        found = {f.name: arr for f, arr in zip(struct.type, struct.flatten(), strict=True)}
        nulls = found["null_count"]
        found["null_count"] = pc.if_else(
            pc.equal(nulls, 0), pa.scalar(0, nulls.type), pa.scalar(None, nulls.type)
        )
        converted = typed_column_stats(found, types.get(name))
        if converted is not None:
            out[name] = converted
    notes = [f"{SOURCE_NAME} answered: its {PARTITION} partition (per partition bounds)"] if out else []
    return AlignedStats(out, unknown_rows, notes)


@dataclass(frozen=True)
class HudiPartitionStatsSource:
    """Per-partition bounds from Hudi's metadata table (``partition_stats``), as bounds of every
    file of the partition; asked before ``column_stats``, so ``explain`` credits it with the
    files of the partitions it rules out."""

    name: str = f"{SOURCE_NAME} ({PARTITION})"

    def available(self, query: SourceQuery) -> bool:
        return query.hudi is not None and bool(query.columns)

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        assert query.hudi is not None
        found = partition_aligned_stats(query.hudi, stats.files, query.columns, stats.schema)
        query.notes.extend(found.notes)
        merged = dict(stats.columns)
        for name, theirs in found.columns.items():
            mine = merged.get(name)
            merged[name] = theirs if mine is None else intersect_bounds(mine, theirs)
        return FileStats(stats.files, stats.row_count, merged, stats.schema)
