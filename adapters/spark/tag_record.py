"""Record index lookups on Spark, co-partitioned with the index's shards.

The record index stores each key in the shard its hash's top bits name
(``index_store.partitions.record_index``), as Hudi's record index assigns keys to file groups by
hash. Here the distinct incoming keys are shuffled by those same bits into ``P`` partitions (a power
of two, at least the largest shard count of the live index files), so the task of partition ``s``
holds the keys of hash range ``s`` only: it maps one shard of each index file (the pages of it its
keys touch), and looks them up with the local ``lookup_record_keys``. The work follows the batch
(a key costs a page probe), never a scan or a shuffle of the whole index.

Spark's hash partitioning sends a row to ``pmod(murmur3_x86_32(value, 42), P)``; the routing column
holds, for shard range ``s``, an integer Spark sends to partition ``s`` (found once per ``P`` by the
same hash, ``spark_routes``), so partition ``s`` is exactly shard range ``s``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_expr import hash_keys
from index_store.arrays import unique_sorted
from index_store.partitions.base import live_positions
from index_store.partitions.record_index import lookup_record_keys, shard_counts, shard_of

__all__ = ["ROUTE", "lookup_by_shard", "route_count", "spark_routes"]

ROUTE = "__hudi_tag_route"


def route_count(index_root: Path, live: tuple[str, ...], parallelism: int) -> int:
    """Partitions of the routed keys: a power of two, at least the largest shard count of the live
    record index files (so a partition is inside one shard of each) and the session's parallelism."""
    shards = max(shard_counts(index_root, live), default=1)
    cores = 1 << max(0, int(parallelism) - 1).bit_length()
    return max(shards, cores)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def spark_int_hash(values: np.ndarray, seed: int = 42) -> np.ndarray:
    """Spark's ``hash()`` of int values (``Murmur3Hash`` over an ``IntegerType``: MurmurHash3
    x86_32 of the 4 bytes, seed 42), as int32: what its hash partitioning takes ``pmod`` of."""
    with np.errstate(over="ignore"):
        k1 = np.asarray(values, dtype=np.int64).astype(np.uint32)
        k1 = _rotl(k1 * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)
        h1 = _rotl(np.uint32(seed) ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h1 = h1 ^ np.uint32(4)
        h1 = (h1 ^ (h1 >> np.uint32(16))) * np.uint32(0x85EBCA6B)
        h1 = (h1 ^ (h1 >> np.uint32(13))) * np.uint32(0xC2B2AE35)
        h1 = h1 ^ (h1 >> np.uint32(16))
    return h1.view(np.int32)


@cache
def spark_routes(partitions: int) -> np.ndarray:
    """For each partition ``s`` of ``partitions``, the smallest non-negative int that Spark's hash
    partitioning (``repartition(partitions, column)``) sends to partition ``s``."""
    routes = np.full(partitions, -1, dtype=np.int64)
    start = 0
    while (routes < 0).any():
        candidates = np.arange(start, start + 64 * partitions, dtype=np.int64)
        target = np.mod(spark_int_hash(candidates).astype(np.int64), partitions)
        first = np.full(partitions, -1, dtype=np.int64)
        first[target[::-1]] = candidates[::-1]  # the smallest candidate of each target wins
        routes = np.where((routes < 0) & (first >= 0), first, routes)
        start += 64 * partitions
    return routes.astype(np.int32)


@dataclass(frozen=True)
class _Route:
    """Arrow UDF: each key's routing value (its hash's shard range, as a Spark partition)."""

    partitions: int
    routes: np.ndarray

    def __call__(self, keys: pa.Array) -> pa.Array:
        ranges = shard_of(hash_keys(keys.cast(pa.string()))[0], self.partitions)
        return pa.array(self.routes[ranges], pa.int32())


@dataclass(frozen=True)
class _Lookup:
    """Arrow UDF: per distinct key (and partition path), the positions of the live files on disk
    (in that partition) the record index holds it in."""

    index_root: str
    live: tuple[str, ...]  # the live record index files
    file_idx: np.ndarray  # ascending: the live data files
    present: np.ndarray  # per live file: still on disk
    partitions: pa.StringArray | None  # per live file: its partition path (per-partition tagging)

    def __call__(self, keys: pa.Array, parts: pa.Array | None = None) -> pa.Array:
        keys = keys.cast(pa.string())
        found = lookup_record_keys(Path(self.index_root), self.live, keys)
        pos, live = live_positions(self.file_idx, found.file_idx)
        keep = live & self.present[pos] if self.file_idx.size else live
        key_pos, pos = found.key_pos[keep], pos[keep]
        if parts is not None and self.partitions is not None and key_pos.size:
            same = pc.equal(self.partitions.take(pa.array(pos)), parts.cast(pa.string()).take(key_pos))
            where = same.fill_null(False).to_numpy(zero_copy_only=False)
            key_pos, pos = key_pos[where], pos[where]
        n = max(len(self.file_idx), 1)
        pairs = unique_sorted(key_pos * n + pos)  # a key recorded twice for a file (two commits): once
        key_pos, pos = pairs // n, pairs % n
        counts = np.bincount(key_pos, minlength=len(keys)) if key_pos.size else np.zeros(len(keys), np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(pos, pa.int64()))


def lookup_by_shard(
    keyed: DataFrame,
    join_on: list[str],
    pos: str,
    index_root: Path,
    live: tuple[str, ...],
    file_idx: np.ndarray,
    present: np.ndarray,
    partitions: pa.StringArray | None,
    parallelism: int,
    udf: Callable[..., Column],
) -> DataFrame:
    """``(key[, partition], pos)`` of each distinct input of ``keyed`` (``join_on``: its key and
    partition columns) found in a live file on disk (``pos``: its position among the live files):
    the inputs shuffled once by shard range, deduplicated and looked up inside each partition.
    ``partitions``: per live file, its partition path, when each key is looked for in its own;
    ``udf(fn, type, *columns)`` makes a scalar Arrow UDF."""
    count = route_count(index_root, live, parallelism)
    key = join_on[0]
    route = udf(_Route(count, spark_routes(count)), "int", F.col(key))
    # The distinct rows are grouped by (route, key[, partition]): the shuffle by route satisfies it.
    routed = keyed.select(route.alias(ROUTE), *join_on).repartition(count, ROUTE).distinct()
    lookup = _Lookup(os.fspath(index_root), live, file_idx, present, partitions)
    probe = udf(lookup, "array<bigint>", *[F.col(c) for c in join_on])
    return routed.select(*join_on, F.explode(probe).alias(pos))
