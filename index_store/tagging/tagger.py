"""Tagging incoming record keys with the data file holding each (Hudi RFC-37's upsert index).

Two methods, both vectorized per stage:

- ``bloom``: key ranges (``ranges.stab``: the key strings' bounds, and the min/max of an integer
  first key field, which numeric keys need since their text ranges overlap), then each surviving
  (key, file) pair probed against the file's Hudi bloom filter (each key hashed once), then the
  pairs left confirmed by reading the files' key columns (``verify``). Exact: a key is reported
  only in a file that holds it.
- ``record``: the record index maps each key to its file directly. Exact as long as the index is
  current, which the caller checks (a stale index is refused before tagging starts).

A key found in several live files (a Hudi table written with ``insert`` can hold one key in two
files of a partition) is tagged as Hudi's bloom index tags it, with every location (each copy is
updated; apache/hudi#380): one output row per (key, file) with ``on_duplicate="all"``, or a
``DuplicateKeyError`` with ``on_duplicate="error"``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, cast, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import unique_sorted
from index_store.config import IndexConfig
from index_store.errors import DuplicateKeyError, RecordKeyError
from index_store.partitions.base import live_positions
from index_store.partitions.record_keys import KeyFilters
from index_store.record_key import RecordKeySpec
from index_store.tagging.ranges import Numbers, SortedBounds, needs_both_orders, range_pairs
from index_store.tagging.stats import TAG_STATS_KEY, TagMethod, TagStats
from index_store.tagging.verify import Verified, verify_pairs

__all__ = ["ON_DUPLICATE", "OnDuplicate", "TagContext", "check_on_duplicate", "tag_keys", "tag_method"]

OnDuplicate = Literal["all", "error"]
"""A key in several live files: a row per file (as Hudi's bloom index tags every copy), or an error."""
ON_DUPLICATE: tuple[OnDuplicate, ...] = get_args(OnDuplicate)

RESULT_SCHEMA = pa.schema([("key", pa.string()), ("partition", pa.string()), ("file", pa.string())])


@dataclass(frozen=True)
class RecordMatches:
    """What a record index lookup found: entries (key position, file_idx), and its cost."""

    key_pos: np.ndarray
    file_idx: np.ndarray
    bytes_read: int


@dataclass(frozen=True)
class TagContext:
    """What tagging needs of an index version and the table on disk."""

    root: str
    paths: pa.StringArray  # table-relative paths of the index's live files, in file_idx order
    partitions: pa.StringArray
    file_idx: np.ndarray  # ascending
    present: np.ndarray  # per file: still on disk (a file deleted behind the index is never named)
    spec: RecordKeySpec
    key_filters: Callable[[], KeyFilters]
    record_lookup: Callable[[pa.Array], RecordMatches] | None  # None: no record index
    # Per file: min and max of the first key field and whether they are known, when that field
    # is an integer column (None otherwise): ``RecordKeySpec.leading_integers`` keys use it.
    leading_bounds: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray] | None] | None = None
    # Confirms (key, file) pairs another way than reading the files' keys (a value index on the
    # key column); None: read them.
    verify: Callable[[pa.StringArray, np.ndarray, np.ndarray], Verified] | None = None


def tag_method(config: IndexConfig, table: str, using: str) -> tuple[RecordKeySpec, TagMethod]:
    """The record key and the method (``bloom`` or ``record``) a tag of ``table`` with ``using``
    runs, or the error saying why it cannot: no key in the index, an unknown ``using``, or the
    record index asked for and not built. ``auto`` is the record index when there is one."""
    spec = RecordKeySpec.from_config(config)
    if spec is None:
        raise RecordKeyError(
            f"the index of {table} holds no record keys: build it with the key columns, "
            "build(record_key=[...]) (CLI: hudi-index build --record-key a,b)"
        )
    if using not in ("auto", "bloom", "record"):
        raise ValueError(f"using must be 'auto', 'bloom' or 'record', not {using!r}")
    if using == "record" and not config.record_index:
        raise RecordKeyError(
            f"the index of {table} has no record index: build it with record_index=True "
            "(CLI: hudi-index build --record-index), or tag with using='bloom'"
        )
    return spec, "record" if using == "record" or (using == "auto" and config.record_index) else "bloom"


def check_on_duplicate(on_duplicate: str) -> OnDuplicate:
    """``on_duplicate`` when it is one of ``ON_DUPLICATE``; else a ``ValueError`` naming them."""
    if on_duplicate not in ON_DUPLICATE:
        raise ValueError(f"on_duplicate must be 'all' or 'error', not {on_duplicate!r}")
    return cast(OnDuplicate, on_duplicate)


def tag_keys(
    context: TagContext,
    keys: pa.StringArray,
    partitions: pa.StringArray | None,
    method: TagMethod,
    on_duplicate: OnDuplicate = "all",
) -> pa.Table:
    """Rows in input order: ``key``, ``partition``, ``file`` (absolute path, null for an insert),
    with the run's ``TagStats`` in the schema metadata. A key in several live files has one row
    per file (in index order) with ``on_duplicate="all"``, raises ``DuplicateKeyError`` with
    ``"error"``; every other key has one row."""
    check_on_duplicate(on_duplicate)
    seconds: dict[str, float] = {}
    counters: dict[str, int] = {}
    # Keys repeated in the batch are looked up once each time they appear: finding duplicates
    # costs a hash table over the batch, more than the repeated work it would save.
    if method == "record":
        key_idx, file_pos = _by_record_index(context, keys, partitions, seconds, counters)
    else:
        key_idx, file_pos = _by_blooms(context, keys, partitions, seconds, counters)
    row_key, location, per_key = _locations(context, keys, key_idx, file_pos, on_duplicate)
    has_file = location >= 0
    rows = pa.array(row_key, pa.int64())
    prefix = context.root.rstrip(os.sep) + os.sep
    take = pa.array(np.where(has_file, location, 0), pa.int64())
    files = (
        pc.binary_join_element_wise(pa.scalar(prefix), context.paths.take(take), "")
        if len(context.paths)
        else pa.nulls(len(row_key), pa.string())
    )
    files = pc.if_else(pa.array(has_file), files, pa.scalar(None, pa.string()))
    if partitions is not None:
        part = partitions if len(row_key) == len(keys) else partitions.take(rows)
    elif len(context.partitions):
        part = pc.if_else(pa.array(has_file), context.partitions.take(take), pa.scalar(None, pa.string()))
    else:
        part = pa.nulls(len(row_key), pa.string())
    stats = TagStats(
        method=method,
        keys=len(keys),
        files=int(context.present.sum()),
        updates=int((per_key > 0).sum()),
        inserts=int((per_key == 0).sum()),
        several_files=int((per_key > 1).sum()),
        seconds=seconds,
        **counters,
    )
    schema = RESULT_SCHEMA.with_metadata({TAG_STATS_KEY: stats.to_json().encode()})
    out_keys = keys if len(row_key) == len(keys) else keys.take(rows)
    return pa.table([out_keys, part.cast(pa.string()), files.cast(pa.string())], schema=schema)


def _same_partition(
    context: TagContext, parts: pa.StringArray | None, key_idx: np.ndarray, file_pos: np.ndarray
) -> np.ndarray:
    """Per pair: does the file lie in the key's partition (always, when tagging globally)?"""
    if parts is None:
        return np.ones(key_idx.size, dtype=bool)
    # A null partition is the "" of a non-partitioned table, as in ``_partition_codes``.
    equal = pc.equal(parts.fill_null("").take(pa.array(key_idx)), context.partitions.take(pa.array(file_pos)))
    return pc.fill_null(equal, False).to_numpy(zero_copy_only=False)


def _locations(
    context: TagContext, keys: pa.StringArray, key_idx: np.ndarray, file_pos: np.ndarray, on_duplicate: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The output rows from the confirmed (key, file) pairs: per row its key's input position and
    file position (-1: an insert), in input order, a key in several files once per file in file
    order; and per key how many files hold it. With ``on_duplicate="error"`` a key in several
    files raises ``DuplicateKeyError`` instead."""
    n = max(len(context.paths), 1)
    pairs = unique_sorted(key_idx * n + file_pos)  # sorted by key, then file
    key_idx, file_pos = pairs // n, pairs % n
    per_key = np.bincount(key_idx, minlength=len(keys)).astype(np.int64)
    twice = np.flatnonzero(per_key > 1)
    if twice.size and on_duplicate == "error":
        k = int(twice[0])
        where = sorted(context.paths[int(p)].as_py() for p in file_pos[key_idx == k])
        raise DuplicateKeyError(
            f"{twice.size} record keys are in more than one live data file of {context.root}, e.g. "
            f"{keys[k].as_py()!r} in {where}: the table's keys are not unique (run hudi-index check; "
            "on_duplicate='all' tags each copy, as Hudi does)"
        )
    rows_per_key = np.maximum(per_key, 1)
    row_key = np.repeat(np.arange(len(keys), dtype=np.int64), rows_per_key)
    location = np.full(row_key.size, -1, dtype=np.int64)
    if key_idx.size:
        first_row = np.cumsum(rows_per_key) - rows_per_key  # of each key
        first_pair = np.cumsum(per_key) - per_key
        location[first_row[key_idx] + np.arange(key_idx.size) - first_pair[key_idx]] = file_pos
    return row_key, location, per_key


def _by_record_index(
    context: TagContext,
    keys: pa.StringArray,
    parts: pa.StringArray | None,
    seconds: dict[str, float],
    counters: dict[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """The (key, file) pairs the record index holds, of live files on disk in the key's partition."""
    start = time.perf_counter()
    assert context.record_lookup is not None
    matches = context.record_lookup(keys)
    # Entries of files no longer live (replaced, removed) fall away here.
    pos, live = live_positions(context.file_idx, matches.file_idx)
    key_idx, file_pos = matches.key_pos[live], pos[live]
    keep = context.present[file_pos] & _same_partition(context, parts, key_idx, file_pos)
    key_idx, file_pos = key_idx[keep], file_pos[keep]
    seconds["record"] = time.perf_counter() - start
    counters.update(
        after_range=int(matches.key_pos.size), after_bloom=int(key_idx.size), bytes_read=matches.bytes_read
    )
    return key_idx, file_pos


def _by_blooms(
    context: TagContext,
    keys: pa.StringArray,
    parts: pa.StringArray | None,
    seconds: dict[str, float],
    counters: dict[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """The (key, file) pairs confirmed by reading the files the key ranges and blooms admit."""
    start = time.perf_counter()
    filters = context.key_filters()
    seconds["load"] = time.perf_counter() - start

    # Ranges and blooms chunk by chunk: the pairs the ranges admit can be far more than fit in
    # memory (random keys meet every file); only the bloom survivors are kept.
    ranged, kept_keys, kept_files = 0, [], []
    seconds["range"] = seconds["bloom"] = 0.0
    start = time.perf_counter()
    orders = _orders(filters, keys)
    for key_idx, file_pos in _range_pairs(context, filters, keys, parts, orders):
        lap = time.perf_counter()
        seconds["range"] += lap - start
        ranged += key_idx.size
        if key_idx.size:
            # An empty key is one Hudi's filters cannot hash: it stays a candidate (never dropped).
            maybe = filters.filters.might_contain_pairs(keys, key_idx, file_pos)
            kept_keys.append(key_idx[maybe])
            kept_files.append(file_pos[maybe])
        start = time.perf_counter()
        seconds["bloom"] += start - lap
    key_idx = np.concatenate(kept_keys) if kept_keys else np.zeros(0, np.int64)
    file_pos = np.concatenate(kept_files) if kept_files else np.zeros(0, np.int64)
    if key_idx.size and len(orders) > 1:  # a pair both orders admitted, once
        n = max(len(context.paths), 1)
        pairs = unique_sorted(key_idx * n + file_pos)
        key_idx, file_pos = pairs // n, pairs % n
    counters["after_range"] = ranged
    counters["after_bloom"] = int(key_idx.size)

    start = time.perf_counter()
    if context.verify is not None:
        verified = context.verify(keys, key_idx, file_pos)
    else:
        paths = context.paths.to_pylist() if key_idx.size else []
        verified = verify_pairs(context.root, paths, keys, key_idx, file_pos, context.spec)
    seconds["verify"] = time.perf_counter() - start
    counters.update(
        files_opened=verified.files_opened,
        files_read=verified.files_read,
        row_groups_read=verified.row_groups_read,
        bytes_read=verified.bytes_read,
        false_positives=int((~verified.confirmed).sum()),
    )
    return key_idx[verified.confirmed], file_pos[verified.confirmed]


def _orders(filters: KeyFilters, keys: pa.StringArray) -> list[bool]:
    """The string orders to search (``True``: Java's): both when a character above U+FFFF occurs,
    where Java and UTF-8 byte order differ."""
    if "above_bmp" not in filters.cache:
        filters.cache["above_bmp"] = needs_both_orders(filters.min_key, filters.max_key)
    return [True, False] if filters.cache["above_bmp"] or needs_both_orders(keys) else [True]


def _range_pairs(
    context: TagContext,
    filters: KeyFilters,
    keys: pa.StringArray,
    parts: pa.StringArray | None,
    orders: list[bool],
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(key, file) pairs whose file's key bounds admit the key, in its partition, on disk, in
    chunks (``ranges.range_pairs``; a pair may come once per order searched)."""
    part_key, part_file = _partition_codes(context, parts)
    usable = context.present & filters.min_key.is_valid().to_numpy(zero_copy_only=False)
    numbers: Numbers | None = None
    bounds = context.leading_bounds() if context.leading_bounds is not None and len(keys) else None
    if bounds is not None:
        values, decoded = context.spec.leading_integers(keys)
        numbers = (
            values.fill_null(0).to_numpy(zero_copy_only=False),
            decoded.to_numpy(zero_copy_only=False),
            *bounds,
        )

    def sorted_bounds(java_order: bool) -> SortedBounds:
        if java_order not in filters.cache:  # the bounds sorted once per index version
            filters.cache[java_order] = SortedBounds(filters.min_key, filters.max_key, java_order)
        return filters.cache[java_order]

    yield from range_pairs(keys, sorted_bounds, orders, usable, part_key, part_file, numbers)


def _partition_codes(context: TagContext, parts: pa.StringArray | None) -> tuple[np.ndarray, np.ndarray]:
    """Integer partition codes of the keys and of the files (all 0 when tagging globally); a key
    naming a partition no file is in gets a code of its own, so it meets no file."""
    if parts is None:
        return np.zeros((), dtype=np.int64), np.zeros(len(context.paths), dtype=np.int64)
    both = pc.dictionary_encode(pa.concat_arrays([context.partitions.cast(pa.string()), parts.fill_null("")]))
    codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n = len(context.partitions)
    return codes[n:], codes[:n]
