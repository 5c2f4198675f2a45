"""Probing many (key, bit array) pairs at once: the rows of many filters as one set of units."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from index_store.hudi_bloom.hashing import _bits_at, _buffers, _MurmurChain, _positions


class _Units:
    """Bit arrays ("units": a SIMPLE filter, or one row of a DYNAMIC_V0 one) probed together.

    A unit is stored dense (its bytes in one shared buffer) or, when few of its bits are set,
    sparse: its set bit positions in one sorted int64 array of ``unit << 32 | position``, probed
    by binary search. Hudi's default filters are 316 KiB each whatever the file's key count, so a
    small file's filter shrinks from 316 KiB to 8 bytes per set bit.
    """

    def __init__(
        self, rows: Sequence[np.ndarray], num_bits: np.ndarray, num_hashes: np.ndarray, sparse: bool = True
    ) -> None:
        """``rows``: each unit's bit bytes; ``sparse=False`` keeps every unit dense."""
        self.num_bits = np.asarray(num_bits, dtype=np.int64)
        self.num_hashes = np.asarray(num_hashes, dtype=np.int64)
        n = len(rows)
        self.dense = np.zeros(n, dtype=bool)
        self.start = np.zeros(n, dtype=np.int64)
        dense_rows, sparse_bits = [], []
        offset = 0
        for u, row in enumerate(rows):
            nonzero = np.flatnonzero(row) if sparse else None
            # sparse (8 bytes per set bit, probed by binary search) when at most half the dense size
            if nonzero is None or int(np.bitwise_count(row[nonzero]).sum(dtype=np.int64)) * 16 > row.size:
                self.dense[u] = True
                self.start[u] = offset
                dense_rows.append(row)
                offset += row.size
            elif nonzero.size:
                bits = np.unpackbits(row[nonzero, None], axis=1, bitorder="little")
                byte_of, bit_of = np.nonzero(bits)
                sparse_bits.append((np.int64(u) << 32) | (nonzero[byte_of].astype(np.int64) * 8 + bit_of))
        self.buffer = np.concatenate(dense_rows) if dense_rows else np.zeros(0, np.uint8)
        self.sparse = np.concatenate(sparse_bits) if sparse_bits else np.zeros(0, np.int64)
        self.all_dense = bool(self.dense.all())

    def __len__(self) -> int:
        return int(self.num_bits.size)

    def test(self, unit: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Whether bit ``positions[j]`` is set in unit ``unit[j]``."""
        if self.all_dense:
            return _bits_at(self.buffer, self.start[unit], positions)
        out = np.zeros(unit.size, dtype=bool)
        dense = self.dense[unit]
        at = np.flatnonzero(dense)
        if at.size:
            out[at] = _bits_at(self.buffer, self.start[unit[at]], positions[at])
        at = np.flatnonzero(~dense)
        if at.size and self.sparse.size:
            wanted = (unit[at].astype(np.int64) << 32) | positions[at]
            order = np.argsort(wanted)  # sorted needles: binary searches walk memory in order (~15x)
            wanted = wanted[order]
            found = np.searchsorted(self.sparse, wanted)
            found[found == self.sparse.size] = 0
            out[at[order]] = self.sparse[found] == wanted
        return out

    def probe(self, chain: _MurmurChain, entry_key: np.ndarray, entry_unit: np.ndarray) -> np.ndarray:
        """Per entry ``(key, unit)``: may the unit contain the key (all its ``k`` bits set)?
        ``entry_key`` indexes the chain's live keys; the chain is advanced (and shrunk) here."""
        alive = np.arange(entry_key.size)
        key, unit = entry_key, entry_unit
        m, k = self.num_bits, self.num_hashes
        uniform_m = int(m[0]) if len(self) and bool((m == m[0]).all()) else None
        uniform_k = int(k[0]) if len(self) and bool((k == k[0]).all()) else None
        max_k = uniform_k if uniform_k is not None else int(k[unit].max()) if unit.size else 0
        unpacked = None
        if len(self) == 1 and self.all_dense and entry_key.size * 64 >= self.num_bits[0]:
            # Many keys against one filter: one bool per bit makes each probe a single gather.
            unpacked = np.unpackbits(self.buffer, bitorder="little").view(bool)
        identity = key.size == chain.size and _is_identity(key)
        for step in range(max_k):
            h = chain.step()
            if not identity:
                h = h[key]
            positions = _positions(h, uniform_m if uniform_m is not None else m[unit])
            ok = unpacked[positions] if unpacked is not None else self.test(unit, positions)
            if uniform_k is None:
                ok |= step >= k[unit]  # a filter with fewer hashes than others is done
            if ok.all():
                continue
            kept = np.flatnonzero(ok)  # (indexing with a random boolean mask is ~10x slower)
            alive, key, unit = alive[kept], key[kept], unit[kept]
            identity = False
            if not alive.size or step + 1 >= (uniform_k if uniform_k is not None else int(k[unit].max())):
                break
            used = np.zeros(chain.size, dtype=bool)
            used[key] = True
            live = np.flatnonzero(used)
            if live.size * 2 <= chain.size:  # hash only the keys some entry still needs
                renumber = np.cumsum(used) - 1
                chain.keep(live)
                key = renumber[key]
                identity = key.size == chain.size and _is_identity(key)
        out = np.zeros(entry_key.size, dtype=bool)
        out[alive] = True
        return out


def _is_identity(index: np.ndarray) -> bool:
    return bool(index.size == 0 or (index[0] == 0 and (np.diff(index) == 1).all()))


def _probe_entries(
    units: _Units, binary: pa.Array, entry_key: np.ndarray | None = None, entry_unit: np.ndarray | None = None
) -> np.ndarray:
    """Per entry ``(key, unit)`` (``entry_key`` indexes ``binary``): may the unit contain the key?
    Each key is hashed once, however many entries name it. Without entries: each key against unit 0."""
    if binary.null_count:
        raise ValueError(f"cannot probe {binary.null_count} null record key(s): Hudi keys are never null")
    data, starts, lengths = _buffers(binary)
    if entry_key is None or entry_unit is None:
        empty = lengths == 0
        if not empty.any():  # the common case: every key once, in order
            chain = _MurmurChain(data, starts, lengths)
            return units.probe(chain, np.arange(lengths.size), np.zeros(lengths.size, dtype=np.int64))
        entry_key, entry_unit = np.arange(lengths.size), np.zeros(lengths.size, dtype=np.int64)
    result = np.zeros(entry_key.size, dtype=bool)
    # An empty key cannot be hashed (Java throws): answer "maybe", the caller's verification decides.
    empty = lengths[entry_key] == 0
    result[empty] = True
    todo = np.flatnonzero(~empty) if empty.any() else np.arange(entry_key.size)
    if not todo.size:
        return result
    used = np.zeros(lengths.size, dtype=bool)
    used[entry_key[todo]] = True
    wanted = np.flatnonzero(used)
    if wanted.size == lengths.size:
        chain, chain_key = _MurmurChain(data, starts, lengths), entry_key[todo]
    else:
        chain = _MurmurChain(data, starts[wanted], lengths[wanted])
        chain_key = (np.cumsum(used) - 1)[entry_key[todo]]
    hit = units.probe(chain, chain_key, entry_unit[todo])
    result[todo[hit]] = True
    return result
