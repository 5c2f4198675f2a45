"""File pruning of a Hudi table with no index of its own: the table's live listing, each file's
statistics from Hudi's ``column_stats`` (unknown where it has none), the predicate evaluated once
over them; a merge-on-read slice is kept whole when any of its files is kept."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import Expression, FileStats, explain, might_match
from hudi_expr.explain import Explanation
from hudi_expr.inclusive import prepare
from index_store.hudi_source.blooms import HudiBloomFilterSource, bloom_memberships
from index_store.hudi_source.partition_stats import HudiPartitionStatsSource, partition_aligned_stats
from index_store.hudi_source.secondary import secondary_memberships, usable_indexes
from index_store.hudi_source.source import (
    HudiMetadataSource,
    HudiSecondaryIndexSource,
    answered_note,
    intersect_bounds,
)
from index_store.hudi_source.view import SOURCE_NAME, AlignedStats, MetadataState, aligned_stats
from index_store.keys import slice_keys
from index_store.slices import PrunedSlice, SliceGroups, slices_of
from index_store.sources.files import SourcedStats
from index_store.tables.base import DataFile, Listing, TableReader
from index_store.tables.rows import reads_whole_files

__all__ = ["MetadataPruning", "prune_listing", "table_schema"]


@dataclass(frozen=True)
class MetadataPruning:
    """What pruning a listing with the metadata table found: per listed file kept or not, and what
    ``PruneResult`` makes its explanation, sources and slices from."""

    kept: np.ndarray
    total: int
    explanation: Callable[[], Explanation]
    removed_by: Callable[[], dict[str, int]]
    slices: Callable[[], tuple[list[PrunedSlice], int]]
    notes: tuple[str, ...]
    whole_slices: bool


def table_schema(reader: TableReader, listing: Listing) -> pa.Schema:
    """The table's columns with no index built: the newest live base file's footer schema (Hudi
    writes every base file of a commit with the table's schema then), and the columns that exist
    only as folder names."""
    bases = [f for f in listing.files if f.path.endswith(".parquet")]
    if not bases:
        return reader.partition_schema()
    newest = max(bases, key=lambda f: (f.instant or "", f.path))
    schema = pq.read_schema(os.path.join(reader.root, newest.path))
    extra = [f.with_nullable(True) for f in reader.partition_schema() if f.name not in schema.names]
    return pa.schema([*schema, *extra]) if extra else schema


def _slice_keys(files: tuple[DataFile, ...]) -> pa.Int64Array:
    partitions = pa.array([f.partition for f in files], pa.string())
    groups = pa.array([f.file_group for f in files], pa.string())
    return slice_keys(partitions, groups).cast(pa.int64())


def prune_listing(
    reader: TableReader, listing: Listing, state: MetadataState, schema: pa.Schema, predicate: Expression
) -> MetadataPruning:
    """``predicate`` over the live files of ``listing`` with Hudi's statistics of them."""
    paths = listing.paths
    n = len(paths)
    bound = prepare(predicate, FileStats([], [], {}, schema))
    columns = tuple(bound.references())
    # Before any source answers nothing is known, not even row counts (they come with the stats).
    base = FileStats(paths, pa.nulls(n, pa.int64()), {}, schema)
    # Partition bounds first (a partition they rule out drops all its files), then each file's.
    by_partition = partition_aligned_stats(state, paths, columns, schema)
    stats = FileStats(paths, base.row_count, by_partition.columns, schema)
    steps = [(HudiPartitionStatsSource().name, stats)] if by_partition.columns else []
    if by_partition.columns and not pc.any(might_match(bound, stats)).as_py():
        # Every partition ruled out: no file's own statistics need reading.
        found = AlignedStats({}, pa.nulls(n, pa.int64()), [])
    else:
        found = aligned_stats(state, paths, columns, schema)
    merged = dict(by_partition.columns)
    for name, theirs in found.columns.items():
        mine = merged.get(name)
        merged[name] = theirs if mine is None else intersect_bounds(mine, theirs)
    stats = FileStats(paths, found.row_count, merged, schema)
    notes = [*by_partition.notes, *found.notes, *([answered_note(state)] if found.columns else [])]
    if found.columns:
        steps.append((HudiMetadataSource().name, stats))
    blooms, bloom_notes = bloom_memberships(state, paths, columns, schema)
    for column, filters in blooms.items():
        stats = stats.with_membership(column, filters)
    if blooms:
        steps.append((HudiBloomFilterSource().name, stats))
    notes.extend(bloom_notes)
    members = secondary_memberships(state, reader, paths, columns, schema)
    for column, membership in members.items():
        stats = stats.with_membership(column, membership)
    if members:
        steps.append((HudiSecondaryIndexSource().name, stats))
        named = ", ".join(f"{SOURCE_NAME} ({m.index.partition})" for m in members.values())
        notes.append(f"{SOURCE_NAME} answered: secondary indexes of {', '.join(members)} (= and IN): {named}")
    notes += [n for c, n in usable_indexes(state, schema)[1].items() if c in bound.references()]
    sourced = SourcedStats(stats, base, tuple(steps), tuple(notes))
    kept = np.asarray(might_match(bound, stats).to_numpy(zero_copy_only=False), dtype=bool)
    whole = not reads_whole_files(reader)
    groups: SliceGroups | None = None
    if whole:
        groups = SliceGroups(paths, _slice_keys(listing.files))
        kept = groups.keep_whole(kept, None)
    prefix = reader.root.rstrip(os.sep) + os.sep

    def made() -> tuple[list[PrunedSlice], int]:
        take = pa.array(np.flatnonzero(kept))
        files = [listing.files[i] for i in np.flatnonzero(kept)]
        found = slices_of(
            prefix,
            paths.take(take).to_pylist(),
            [f.partition for f in files],
            _slice_keys(tuple(files)).to_pylist(),
        )
        return found, (groups.count(None) if groups is not None else n)

    return MetadataPruning(
        kept,
        n,
        lambda: explain(bound, stats),
        lambda: sourced.removed_by(bound),
        made,
        sourced.notes,
        whole,
    )
