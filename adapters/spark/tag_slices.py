"""Tagging a merge-on-read table on Spark: the candidate ``(key, file)`` pairs become
``(key, file slice)`` pairs, and each candidate slice decides for its keys inside a task, by the
local rule (``index_store.tagging.slices``: its base file's keys, its log files' counted records,
the merge mode's latest record, a delete making the key absent).

Candidate slices are the local ones (``index_store.tagging.merged``): the slices of the files the
index sources name (the candidates are not verified against the base files first: the slices read
them), plus every slice with a file whose keys the index does not hold, for every key of its
partition (of the table, tagging globally). The pairs are grouped by slice (one row per slice: its
keys, and whether its base file may hold each), and an Arrow UDF holding those slices decides,
returning each slice's live keys.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from index_store.tables.base import FileSlice
from index_store.tagging.merged import MergedTagging
from index_store.tagging.slices import SliceTable, locate_in_slices, slice_locations
from index_store.tagging.stored import SliceLogs, decide_from_stored

__all__ = ["SliceAnswers", "in_slices"]

_SLICE = "__hudi_tag_slice"
_BASE = "__hudi_tag_in_base"
_SLICE_PART = "__hudi_tag_slice_partition"
_KEYS = "__hudi_tag_keys"
_BASES = "__hudi_tag_bases"


@dataclass(frozen=True)
class SliceAnswers:
    """The confirmed ``(key[, partition], position)`` rows (``pos`` the column of the slice's
    position among ``paths``), ``locations`` (``pos``, file, file id) to join them with, and per
    position the file reported (for messages)."""

    found: DataFrame
    locations: DataFrame
    paths: list[str]  # table-relative
    slices_read: int


def in_slices(
    spark: SparkSession,
    merged: MergedTagging,
    distinct: DataFrame,
    found: DataFrame,
    join_on: list[str],
    columns: dict[str, str],
    run: Callable[[str, Callable[[], Any]], Any],
    udf: Callable[..., Column],
    exact: bool = False,
) -> SliceAnswers:
    """The slices holding each distinct input's latest live record, from the sources' candidate
    ``(key[, partition], pos)`` rows (``found``). ``columns``: the caller's column names (``key``,
    ``partition``, ``pos``, ``file``, ``file_id``); ``run(what, job)`` runs a Spark job, turning its
    failure into the caller's error; ``udf(fn, type, *columns)`` makes a scalar Arrow UDF.
    ``exact``: the sources' pairs need no verification (the record index): a base file they name
    holds the key."""
    key, part, pos = columns["key"], columns["partition"], columns["pos"]
    on_slices = np.flatnonzero(merged.slice_of >= 0)
    file_map = spark.createDataFrame(
        pa.table(
            {
                pos: pa.array(on_slices, pa.int64()),
                _SLICE: pa.array(merged.slice_of[on_slices], pa.int64()),
                # bit 1: the base file may hold the key; bit 2: it does (max is or of 0, 1, 3)
                _BASE: pa.array(merged.is_base[on_slices].astype(np.int8) * (3 if exact else 1)),
            }
        )
    )
    pairs = found.join(F.broadcast(file_map), pos).select(*join_on, _SLICE, _BASE)
    if merged.unlocated.size:
        fallback = spark.createDataFrame(
            pa.table(
                {
                    _SLICE: pa.array(merged.unlocated, pa.int64()),
                    _SLICE_PART: pa.array([merged.slices[int(i)].partition for i in merged.unlocated]),
                    _BASE: pa.array(merged.unlocated_base.astype(np.int8)),
                }
            )
        )
        if part in join_on:
            by_partition = distinct.join(F.broadcast(fallback), F.col(part) == F.col(_SLICE_PART))
        else:
            by_partition = distinct.crossJoin(F.broadcast(fallback))
        pairs = pairs.unionByName(by_partition.select(*join_on, _SLICE, _BASE))
    pairs = run(
        "candidate file slices",
        lambda: pairs.groupBy(*join_on, _SLICE).agg(F.max(_BASE).alias(_BASE)).localCheckpoint(eager=True),
    )
    chosen = sorted(
        int(r[0]) for r in run("candidate file slices", lambda: pairs.select(_SLICE).distinct().collect())
    )
    slices = {i: merged.slices[i] for i in chosen}
    grouped = pairs.groupBy(_SLICE).agg(F.collect_list(key).alias(_KEYS), F.collect_list(_BASE).alias(_BASES))
    logs = merged.logs.only(np.array(chosen, dtype=np.int64)) if merged.logs is not None else None
    decide = udf(
        _Decide(merged.table, slices, logs), "array<string>", F.col(_SLICE), F.col(_KEYS), F.col(_BASES)
    )
    live = grouped.select(_SLICE, F.explode(decide).alias(key))
    confirmed = run(
        "reading the candidate file slices",
        lambda: (
            pairs.join(live, [key, _SLICE], "left_semi")
            .select(*join_on, F.col(_SLICE).alias(pos))
            .localCheckpoint(eager=True)
        ),
    )
    located = slice_locations([merged.slices[i] for i in chosen])
    paths = [""] * len(merged.slices)
    for i, path in zip(chosen, located.paths.to_pylist(), strict=True):
        paths[i] = path
    prefix = merged.table.root.rstrip(os.sep) + os.sep
    locations = spark.createDataFrame(
        pa.table(
            {
                pos: pa.array(chosen, pa.int64()),
                columns["file"]: pa.array([prefix + p for p in located.paths.to_pylist()], pa.string()),
                columns["file_id"]: located.file_ids if located.file_ids is not None else pa.nulls(0),
            }
        )
    )
    return SliceAnswers(confirmed, locations, paths, len(chosen))


@dataclass(frozen=True)
class _Decide:
    """Arrow UDF: per candidate slice (its position, its keys, whether its base file may hold
    each), the keys whose latest record in it is live: from the log records the index stores when
    it holds every log file's of the slice (``tagging.stored``), else reading them."""

    table: SliceTable
    slices: dict[int, FileSlice]
    logs: SliceLogs | None = None

    def __call__(self, positions: pa.Array, keys: pa.ListArray, bases: pa.ListArray) -> pa.Array:
        names = keys.flatten().cast(pa.string())
        bits = bases.flatten().to_numpy(zero_copy_only=False).astype(np.int8)
        flags, surely = (bits & 1) > 0, (bits & 2) > 0
        offsets = keys.offsets.to_numpy()
        offsets = offsets - offsets[0]  # into the flattened values of a sliced array
        live: list[pa.Array] = []
        for i, pos in enumerate(positions.to_pylist()):  # one slice per row: read once
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            wanted = names.slice(lo, hi - lo)
            n = hi - lo
            if self.logs is not None and self.logs.complete[pos]:
                decided = decide_from_stored(
                    self.table,
                    self.logs,
                    self.slices,
                    wanted,
                    np.arange(n),
                    np.full(n, pos, dtype=np.int64),
                    flags[lo:hi],
                    surely[lo:hi],
                )
                live.append(wanted.filter(pa.array(decided.live)))
                continue
            found = locate_in_slices(
                self.table,
                [self.slices[pos]],
                wanted,
                np.arange(n),
                np.zeros(n, dtype=np.int64),
                in_base=flags[lo:hi],
            )
            live.append(wanted.take(pa.array(found.key_idx, pa.int64())))
        counts = np.array([len(a) for a in live], dtype=np.int32)
        bounds = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        values = pa.concat_arrays(live) if live else pa.array([], pa.string())
        return pa.ListArray.from_arrays(bounds, values)
