"""The built-in answers to a ``KeyQuery``: the record index (exact pairs) and the key ranges and
Hudi bloom filters of the files (candidate pairs, which ``tag`` then verifies).

Both run over all keys at once; each fills the ``TagStats`` counters of its stages.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import unique_sorted
from index_store.partitions.base import live_positions
from index_store.partitions.record_keys import KeyFilters
from index_store.tagging.locations import KeyAnswer, KeyQuery
from index_store.tagging.ranges import Numbers, SortedBounds, needs_both_orders, range_pairs

__all__ = ["by_key_ranges", "by_record_index"]


def by_record_index(query: KeyQuery) -> KeyAnswer:
    """The (key, file) pairs the record index holds, of live files in scope: exact."""
    context = query.context
    start = time.perf_counter()
    assert context.record_lookup is not None
    matches = context.record_lookup(query.keys)
    # Entries of files no longer live (replaced, removed) fall away here.
    pos, live = live_positions(context.file_idx, matches.file_idx)
    key_idx, file_pos = matches.key_pos[live], pos[live]
    keep = query.in_scope(key_idx, file_pos)
    key_idx, file_pos = key_idx[keep], file_pos[keep]
    return KeyAnswer(
        key_idx,
        file_pos,
        exact=True,
        counters={
            "after_range": int(matches.key_pos.size),
            "after_bloom": int(key_idx.size),
            "bytes_read": matches.bytes_read,
        },
        seconds={"record": time.perf_counter() - start},
    )


def by_key_ranges(query: KeyQuery) -> KeyAnswer:
    """The (key, file) pairs the files' key ranges and then their bloom filters admit: candidates."""
    context, keys = query.context, query.keys
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    filters = context.key_filters()
    seconds["load"] = time.perf_counter() - start

    # Ranges and blooms chunk by chunk: the pairs the ranges admit can be far more than fit in
    # memory (random keys meet every file); only the bloom survivors are kept.
    ranged, kept_keys, kept_files = 0, [], []
    seconds["range"] = seconds["bloom"] = 0.0
    start = time.perf_counter()
    orders = _orders(filters, keys)
    for key_idx, file_pos in _range_pairs(query, filters, orders):
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
    counters = {"after_range": ranged, "after_bloom": int(key_idx.size)}
    return KeyAnswer(key_idx, file_pos, exact=False, counters=counters, seconds=seconds)


def _orders(filters: KeyFilters, keys: pa.StringArray) -> list[bool]:
    """The string orders to search (``True``: Java's): both when a character above U+FFFF occurs,
    where Java and UTF-8 byte order differ."""
    if "above_bmp" not in filters.cache:
        filters.cache["above_bmp"] = needs_both_orders(filters.min_key, filters.max_key)
    return [True, False] if filters.cache["above_bmp"] or needs_both_orders(keys) else [True]


def _range_pairs(
    query: KeyQuery, filters: KeyFilters, orders: list[bool]
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(key, file) pairs whose file's key bounds admit the key, in its partition, on disk, in
    chunks (``ranges.range_pairs``; a pair may come once per order searched)."""
    context, keys = query.context, query.keys
    part_key, part_file = _partition_codes(query)
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


def _partition_codes(query: KeyQuery) -> tuple[np.ndarray, np.ndarray]:
    """Integer partition codes of the keys and of the files (all 0 when tagging globally); a key
    naming a partition no file is in gets a code of its own, so it meets no file."""
    context, parts = query.context, query.partitions
    if parts is None:
        return np.zeros((), dtype=np.int64), np.zeros(len(context.paths), dtype=np.int64)
    both = pc.dictionary_encode(pa.concat_arrays([context.partitions.cast(pa.string()), parts.fill_null("")]))
    codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n = len(context.partitions)
    return codes[n:], codes[:n]
