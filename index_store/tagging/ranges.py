"""RFC-37's range stage: which files' [min key, max key] hold each key, by interval stabbing.

Every bound and key is turned into an integer once (its dense rank among all of them, in Java
``String`` order), prefixed by its partition's number when tagging per partition, so the stabbing
is integer ``searchsorted`` over the files sorted by lower bound: a key's candidates are the files
whose lower bound is at most the key (a prefix of that order) and whose upper bound is at least it
(found from the running maximum of upper bounds, then checked pair by pair).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.hudi_bloom import java_sort_keys

__all__ = ["key_ranks", "stab"]

# Lead bytes of UTF-8 characters above U+FFFF: only with them can Java and byte order differ.
_ABOVE_BMP = np.arange(0xF0, 0xF5, dtype=np.uint8)


def key_ranks(keys: pa.Array, lows: pa.Array, highs: pa.Array, java_order: bool) -> tuple[np.ndarray, ...]:
    """Dense ranks (int64) of ``keys``, ``lows`` and ``highs`` among all three, in Java ``String``
    order (``java_order``) or UTF-8 byte order; nulls rank -1."""
    values = pa.concat_arrays(
        [a.cast(pa.large_string()).cast(pa.large_binary()) for a in (keys, lows, highs)]
    )
    if java_order:
        values = java_sort_keys(values)
    ranks = pc.rank(values, tiebreaker="dense").to_numpy().astype(np.int64)
    ranks[~values.is_valid().to_numpy(zero_copy_only=False)] = -1
    k, f = len(keys), len(lows)
    return ranks[:k], ranks[k : k + f], ranks[k + f :]


def needs_both_orders(*arrays: pa.Array) -> bool:
    """Whether any value has a character above U+FFFF, where Java and UTF-8 order can disagree."""
    for a in arrays:
        data = a.cast(pa.large_string()).buffers()[2]
        if data is not None and np.isin(np.frombuffer(data, dtype=np.uint8), _ABOVE_BMP).any():
            return True
    return False


def stab(
    key_rank: np.ndarray, low_rank: np.ndarray, high_rank: np.ndarray, max_pairs: int = 1 << 23
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(key index, file index)`` pairs with ``low <= key <= high``, in chunks of at most about
    ``max_pairs`` pairs (a key whose candidates alone exceed it is one chunk). Files with a null
    bound (rank -1: no keys) are never candidates; null keys (-1) have none."""
    files = np.flatnonzero((low_rank >= 0) & (high_rank >= 0))
    order = files[np.argsort(low_rank[files], kind="stable")]
    lows, highs = low_rank[order], high_rank[order]
    running_high = np.maximum.accumulate(highs) if highs.size else highs
    hi = np.searchsorted(lows, key_rank, side="right")
    lo = np.searchsorted(running_high, key_rank, side="left")
    counts = np.where(key_rank >= 0, np.maximum(hi - lo, 0), 0)
    ends = np.cumsum(counts)
    start = 0
    while start < key_rank.size:
        base = ends[start - 1] if start else 0
        stop = max(int(np.searchsorted(ends, base + max_pairs, side="right")), start + 1)
        c = counts[start:stop]
        key_idx = np.repeat(np.arange(start, stop), c)
        first = np.cumsum(c) - c
        pos = np.repeat(lo[start:stop] - first, c) + np.arange(key_idx.size)
        inside = highs[pos] >= key_rank[key_idx]
        yield key_idx[inside], order[pos[inside]]
        start = stop
