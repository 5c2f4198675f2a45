"""RFC-37's range stage: which files' [min key, max key] hold each key, by interval stabbing.

Every bound and key is turned into an integer that compares as the strings do in Java
(``SortedBounds``: the bounds sorted once, each key placed among them by binary search over
fixed-width byte strings), prefixed by its partition's number when tagging per partition, so the
stabbing is integer ``searchsorted`` over the files sorted by lower bound: a key's candidates are
the files whose lower bound is at most the key (a prefix of that order) and whose upper bound is
at least it (found from the running maximum of upper bounds, then checked pair by pair).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import unique_sorted
from index_store.hudi_bloom import java_sort_keys
from index_store.hudi_bloom.hashing import _buffers

__all__ = ["Numbers", "SortedBounds", "key_ranks", "needs_both_orders", "range_pairs", "stab"]


class SortedBounds:
    """The files' key bounds sorted once, in Java ``String`` order (``java_order``) or UTF-8 byte
    order, so that batch after batch of keys is placed among them by binary search.

    Bound ``i`` of the sorted distinct bounds ranks ``2i + 1``; a key equal to it ranks ``2i + 1``
    too, and a key between bounds ``i - 1`` and ``i`` ranks ``2i``: integers that order every key
    against every bound exactly as the strings compare (keys are not ordered among themselves:
    stabbing never compares two). Nulls rank -1."""

    def __init__(self, lows: pa.Array, highs: pa.Array, java_order: bool) -> None:
        self.java_order = java_order
        self.files = len(lows)
        self.bounds = pa.concat_arrays([_sortable(lows, java_order), _sortable(highs, java_order)])
        fixed = _fixed(self.bounds)
        self.distinct: np.ndarray | None = None  # None: bounds with NUL bytes, or very long
        if fixed is not None:
            valid = self.bounds.is_valid().to_numpy(zero_copy_only=False)
            self.distinct = unique_sorted(fixed[valid])
            rank = np.full(len(self.bounds), -1, dtype=np.int64)
            rank[valid] = 2 * np.searchsorted(self.distinct, fixed[valid]) + 1
            self.low_rank, self.high_rank = rank[: self.files], rank[self.files :]

    def ranks(self, keys: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(key ranks, low bound ranks, high bound ranks)``, int64."""
        key_bytes = _sortable(keys, self.java_order)
        key_fixed = _fixed(key_bytes) if self.distinct is not None else None
        if key_fixed is None or self.distinct is None:
            return _ranks_by_sorting(key_bytes, self.bounds, self.files)
        width = max(key_fixed.dtype.itemsize, self.distinct.dtype.itemsize)
        distinct, key_fixed = self.distinct.astype(f"S{width}"), key_fixed.astype(f"S{width}")
        low_pos = np.searchsorted(distinct, key_fixed, side="left")
        if distinct.size:
            equal = distinct[np.minimum(low_pos, distinct.size - 1)] == key_fixed
        else:
            equal = np.zeros(low_pos.size, dtype=bool)
        key_rank = np.where(equal, 2 * low_pos + 1, 2 * low_pos).astype(np.int64)
        key_rank[~key_bytes.is_valid().to_numpy(zero_copy_only=False)] = -1
        return key_rank, self.low_rank, self.high_rank


def key_ranks(
    keys: pa.Array, lows: pa.Array, highs: pa.Array, java_order: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``SortedBounds(lows, highs, java_order).ranks(keys)``: for one batch of keys."""
    return SortedBounds(lows, highs, java_order).ranks(keys)


# Fixed-width byte strings longer than this make the padded copy too big: sort instead.
_MAX_FIXED_WIDTH = 128


def _sortable(strings: pa.Array, java_order: bool) -> pa.Array:
    """Binary values whose byte order is the wanted string order."""
    values = strings.cast(pa.large_string()).cast(pa.large_binary())
    return java_sort_keys(values) if java_order else values


def _fixed(values: pa.Array) -> np.ndarray | None:
    """``values`` (binary) as a numpy ``S<w>`` array (zero-padded: numpy compares them as bytes),
    or None when a NUL byte (which zero padding would make equal to the end) or the width rule it
    out. Nulls come out empty."""
    data, starts, lengths = _buffers(values)
    width = max(1, int(lengths.max()) if lengths.size else 1)
    if width > _MAX_FIXED_WIDTH:
        return None
    used = data[starts[0] : starts[-1] + lengths[-1]] if lengths.size else data[:0]
    if used.size and not used.all():
        return None
    if lengths.size and bool((lengths == width).all()) and bool((np.diff(starts) == width).all()):
        matrix = used.reshape(-1, width)  # all of one width, back to back: no copy
    else:
        # Each value's window of ``width`` bytes, with the bytes past its end zeroed.
        padded = np.concatenate([data, np.zeros(width, dtype=np.uint8)])
        windows = np.lib.stride_tricks.sliding_window_view(padded, width)[starts]
        matrix = np.where(np.arange(width) < lengths[:, None], windows, 0).astype(np.uint8)
    return np.ascontiguousarray(matrix).view(f"S{width}").ravel()


def _ranks_by_sorting(
    keys: pa.Array, bounds: pa.Array, files: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    values = pa.concat_arrays([keys, bounds])
    ranks = pc.rank(values, tiebreaker="dense").to_numpy().astype(np.int64)
    ranks[~values.is_valid().to_numpy(zero_copy_only=False)] = -1
    k = len(keys)
    return ranks[:k], ranks[k : k + files], ranks[k + files :]


def needs_both_orders(*arrays: pa.Array) -> bool:
    """Whether any value has a character above U+FFFF, where Java and UTF-8 order can disagree."""
    for a in arrays:
        data = a.cast(pa.large_string()).buffers()[2]
        # In UTF-8, bytes from 0xF0 up only lead characters above U+FFFF.
        if data is not None and bool((np.frombuffer(data, dtype=np.uint8) >= 0xF0).any()):
            return True
    return False


def stab(
    key_rank: np.ndarray, low_rank: np.ndarray, high_rank: np.ndarray, max_pairs: int = 1 << 21
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


# Per key: its value as a number and whether it has one; per file: min, max, whether they are known.
Numbers = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def range_pairs(
    keys: pa.Array,
    sorted_bounds: Callable[[bool], SortedBounds],
    orders: list[bool],
    usable: np.ndarray,
    part_key: np.ndarray,
    part_file: np.ndarray,
    numbers: Numbers | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """RFC-37's range stage: (key, file) pairs whose file's key bounds admit the key, in chunks.

    ``sorted_bounds(java_order)``: the files' bounds in that string order; ``orders``: the orders
    to search (bounds come in the order of whoever wrote them, Java ``String`` or UTF-8 bytes; the
    two differ only above U+FFFF, so then a pair is kept when either admits it, and may come once
    per order). ``usable``: files that may be candidates at all (on disk, with keys).
    ``part_key``/``part_file``: partition numbers (a key only meets files of its partition; all 0
    to search globally). ``numbers``: keys that start with an integer key field are also held to
    that field's min/max (as text their ranges overlap, ``"10" < "9"``): stabbed by number first,
    then checked against the strings' bounds."""
    ranked = []
    for java_order in orders:
        k, lo, hi = sorted_bounds(java_order).ranks(keys)
        span = max(int(k.max(initial=0)), int(lo.max(initial=0)), int(hi.max(initial=0))) + 1
        # The partition is the major part of each rank, so a key only meets its partition's files.
        ranked.append(
            (
                np.where(k >= 0, part_key * span + k, -1),
                np.where((lo >= 0) & usable, part_file * span + lo, -1),
                np.where((hi >= 0) & usable, part_file * span + hi, -1),
            )
        )
    by_number = np.zeros(len(keys), dtype=bool)
    if numbers is not None:
        values, decoded, low, high, known = numbers
        by_number = decoded
        chosen = np.flatnonzero(by_number)
        k, lo, hi = _number_ranks(values[chosen], low, high, known, usable)
        span = int(max(k.max(initial=0), hi.max(initial=0))) + 1
        k = np.where(k >= 0, np.broadcast_to(part_key, len(keys))[chosen] * span + k, -1)
        lo = np.where(lo >= 0, part_file * span + lo, -1)
        hi = np.where(hi >= 0, part_file * span + hi, -1)
        for key_idx, file_pos in stab(k, lo, hi):
            key_idx = chosen[key_idx]
            keep = np.zeros(key_idx.size, dtype=bool)
            for kr, lr, hr in ranked:  # and inside the key strings' bounds
                keep |= (lr[file_pos] >= 0) & (lr[file_pos] <= kr[key_idx]) & (kr[key_idx] <= hr[file_pos])
            yield key_idx[keep].astype(np.int64), file_pos[keep].astype(np.int64)
    others = np.flatnonzero(~by_number)
    if others.size:
        for kr, lr, hr in ranked:
            for key_idx, file_pos in stab(kr[others], lr, hr):
                yield others[key_idx].astype(np.int64), file_pos.astype(np.int64)


def _number_ranks(
    values: np.ndarray, low: np.ndarray, high: np.ndarray, known: np.ndarray, usable: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ranks (int64, order-preserving) of key values and of the files' integer bounds; a file whose
    bounds are unknown admits every value; files not ``usable`` rank -1 (never candidates)."""
    every = unique_sorted(np.concatenate([values, low[known], high[known]]))
    k = np.searchsorted(every, values) + 1
    lo = np.where(known, np.searchsorted(every, low) + 1, 0)
    hi = np.where(known, np.searchsorted(every, high) + 1, every.size + 1)
    return k.astype(np.int64), np.where(usable, lo, -1), np.where(usable, hi, -1)
