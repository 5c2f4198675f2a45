"""``HudiBloomFilterSet``: many base files' filters probed together, every key hashed once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from index_store.hudi_bloom.filter import HudiBloomFilter
from index_store.hudi_bloom.format import Keys
from index_store.hudi_bloom.hashing import _as_binary
from index_store.hudi_bloom.units import _probe_entries, _Units


class HudiBloomFilterSet:
    """Optional Hudi bloom filters of N base files, probed together: every key is hashed once
    (the chained hashes do not depend on a filter's size) and tested against all the filters it
    is paired with in one vectorized pass. A file without a filter may hold any key: True.

    Sparse storage keeps memory to the set bits for lightly filled filters (see ``_Units``).
    """

    __slots__ = ("_has_filter", "_unit_counts", "_unit_start", "_units")

    def __init__(self, filters: Sequence[HudiBloomFilter | None]) -> None:
        rows: list[np.ndarray] = []
        num_bits: list[int] = []
        num_hashes: list[int] = []
        n = len(filters)
        self._has_filter = np.zeros(n, dtype=bool)
        self._unit_start = np.zeros(n, dtype=np.int64)
        self._unit_counts = np.zeros(n, dtype=np.int64)
        for i, f in enumerate(filters):
            if f is None:
                continue
            self._has_filter[i] = True
            self._unit_start[i] = len(rows)
            self._unit_counts[i] = f.num_rows
            rows.extend(f._rows)
            num_bits += [f.num_bits] * f.num_rows
            num_hashes += [f.num_hashes] * f.num_rows
        self._units = _Units(rows, np.array(num_bits, np.int64), np.array(num_hashes, np.int64))

    @classmethod
    def from_footers(cls, footers: Iterable[Any]) -> HudiBloomFilterSet:
        """One entry per base file footer (see :meth:`HudiBloomFilter.from_footer`)."""
        return cls([HudiBloomFilter.from_footer(f) for f in footers])

    def __len__(self) -> int:
        return int(self._has_filter.size)

    def take(self, indices: np.ndarray) -> HudiBloomFilterSet:
        """The filters of the given files (integer indices or a boolean mask), sharing the bits
        (``Membership``)."""
        indices = np.asarray(indices)
        out = HudiBloomFilterSet.__new__(HudiBloomFilterSet)
        out._units = self._units
        out._has_filter = self._has_filter[indices]
        out._unit_start = self._unit_start[indices]
        out._unit_counts = self._unit_counts[indices]
        return out

    @property
    def has_filter(self) -> np.ndarray:
        """Per file: whether it has a filter."""
        return self._has_filter.copy()

    def might_contain_pairs(self, keys: Keys, key_idx: np.ndarray, file_idx: np.ndarray) -> np.ndarray:
        """Per pair ``j``: may file ``file_idx[j]`` hold key ``keys[key_idx[j]]``? Each distinct key
        is hashed once however many files it is paired with (RFC-37's bloom probing stage). Null
        keys raise ValueError; an empty key (Hudi cannot hash one) answers True."""
        key_idx = np.asarray(key_idx, dtype=np.int64)
        file_idx = np.asarray(file_idx, dtype=np.int64)
        if key_idx.shape != file_idx.shape:
            raise ValueError(f"key_idx and file_idx differ in length: {key_idx.size} and {file_idx.size}")
        counts = self._unit_counts[file_idx]
        entry_pair = np.repeat(np.arange(file_idx.size), counts)
        # the units of pair j are unit_start[file] .. unit_start[file] + counts[j] - 1
        first_entry = np.cumsum(counts) - counts
        entry_unit = np.repeat(self._unit_start[file_idx] - first_entry, counts) + np.arange(entry_pair.size)
        hit = _probe_entries(self._units, _as_binary(keys), key_idx[entry_pair], entry_unit)
        result = ~self._has_filter[file_idx]
        result[entry_pair[hit]] = True
        return result

    def might_contain(self, key: str) -> np.ndarray:
        """Per file: may it hold ``key``? (True for files without a filter.)"""
        n = len(self)
        return self.might_contain_pairs([key], np.zeros(n, dtype=np.int64), np.arange(n))

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        """``Membership``: per file, False where no filter admits any of ``values`` (null values
        never match); True where one may be there, or the file has no filter. With no non-null
        values, False everywhere."""
        binary = _as_binary(values)
        if binary.null_count:
            binary = binary.filter(binary.is_valid())
        n, v = len(self), len(binary)
        out = np.zeros(n, dtype=bool)
        if v == 0:
            return pa.array(out)
        out |= ~self._has_filter
        files = np.flatnonzero(self._has_filter)
        chunk = max(1, (1 << 22) // max(1, files.size))
        for lo in range(0, v, chunk):
            count = min(chunk, v - lo)
            key_idx = np.repeat(np.arange(lo, lo + count), files.size)
            file_idx = np.tile(files, count)
            hit = self.might_contain_pairs(binary, key_idx, file_idx)
            out[file_idx[hit]] = True
        return pa.array(out)

    def __repr__(self) -> str:
        return f"HudiBloomFilterSet(files={len(self)}, with_filter={int(self._has_filter.sum())})"
