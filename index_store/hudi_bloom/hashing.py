"""Keys as UTF-8 bytes and Hadoop's MurmurHash2 chained over many keys at once (Java int32 rules)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from index_store.hudi_bloom.format import _M, Keys


def _as_binary(keys: Keys) -> pa.Array:
    """``keys`` as one large_binary array holding each key's UTF-8 bytes (binary keys: as they are)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], keys.type)
    elif not isinstance(keys, pa.Array):
        if isinstance(keys, str | bytes | bytearray | memoryview) or not isinstance(keys, Iterable):
            raise TypeError(f"expected an array or sequence of keys, got {keys!r}; wrap one key in a list")
        keys = pa.array(keys if isinstance(keys, np.ndarray | Sequence) else list(keys))
        if pa.types.is_null(keys.type):
            keys = keys.cast(pa.large_string())
    t = keys.type
    if pa.types.is_dictionary(t):
        keys, t = keys.dictionary_decode(), t.value_type
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return keys.cast(pa.large_binary())
    raise TypeError(f"record keys must be strings, got an array of {t}")


def _buffers(binary: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(data, starts, lengths)`` of a large_binary array, without copying the bytes."""
    n = len(binary)
    _, offsets_buf, data_buf = binary.buffers()
    if offsets_buf is None:  # an empty array may come without buffers
        return np.zeros(0, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[binary.offset : binary.offset + n + 1]
    data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    return data, offsets[:-1], np.diff(offsets)


class _MurmurChain:
    """The chained Hadoop MurmurHash2 values of many keys: ``step()`` advances every live key from
    ``h(i)`` to ``h(i+1) = murmur(key, seed=h(i))`` (``h(0)`` is the seed 0) and returns them.

    The seed-independent part of MurmurHash2 (each 4-byte block mixed on its own) is computed once;
    each step only folds the mixed blocks into the running hash: whole-array operations for the
    blocks every key has, and operations on the keys that have it for the others. All arithmetic
    is on uint32 arrays, whose wrap-around is Java's int overflow. Keys keep their order.
    """

    def __init__(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        n = lengths.size
        blocks = lengths >> 2
        self.length = lengths.astype(np.uint32)
        # A block is the 4 bytes at its offset read little-endian (Java assembles it from data[i4+3]
        # down to data[i4]): an unaligned uint32 view of the key bytes reads it in one gather.
        stride = int(starts[1] - starts[0]) if n > 1 else 0
        uniform = n == 0 or bool(blocks.min() == blocks.max())
        packed = uniform and n > 1 and stride > 0 and bool((np.diff(starts) == stride).all())
        common = int(blocks.min()) if n else 0
        # mixed[b] = (keys having block b, or None for all keys; their mixed block b)
        self.mixed: list[tuple[np.ndarray | None, np.ndarray]] = []
        max_blocks = int(blocks.max()) if n else 0
        words = np.ndarray((max(data.size - 3, 0),), np.dtype("<u4"), data, 0, (1,)) if max_blocks else None
        for b in range(max_blocks):
            who = None if b < common else np.flatnonzero(blocks > b)
            if packed:  # equal-length keys back to back: block b is a strided view, no gather
                k = np.ndarray((n,), np.dtype("<u4"), data, int(starts[0]) + 4 * b, (stride,)).astype(
                    np.uint32
                )
            else:
                assert words is not None
                k = words[(starts if who is None else starts[who]) + 4 * b].astype(np.uint32)
            k *= _M
            k ^= k >> np.uint32(24)
            k *= _M
            self.mixed.append((who, k))
        # The 1 to 3 bytes after the last block, xor-ed in as *signed* bytes: Java's `(int) data[i]`
        # sign-extends a byte >= 0x80, so its high bits flip too (unlike the C MurmurHash2).
        left = lengths & 3
        tail = np.zeros(n, dtype=np.int32)
        if data.size:
            ends = starts + lengths
            for back, shift in ((3, 16), (2, 8), (1, 0)):
                signed = data[np.maximum(ends - back, 0)].view(np.int8).astype(np.int32) << np.int32(shift)
                tail ^= np.where(left >= back, signed, np.int32(0))
        self.tail = tail.view(np.uint32)
        self.has_tail = left != 0
        self.seed = np.zeros(n, dtype=np.uint32)

    @property
    def size(self) -> int:
        return int(self.seed.size)

    def step(self) -> np.ndarray:
        """The next hash of every live key (uint32 holding Java's int), which becomes its seed."""
        h = self.seed ^ self.length
        for who, k in self.mixed:
            if who is None:
                h *= _M
                h ^= k
            else:
                h[who] = (h[who] * _M) ^ k
        h ^= self.tail
        np.multiply(h, _M, out=h, where=self.has_tail)
        h ^= h >> np.uint32(13)
        h *= _M
        h ^= h >> np.uint32(15)
        self.seed = h
        return h

    def keep(self, live: np.ndarray) -> None:
        """Keep only the live keys at the ascending positions ``live``."""
        renumber = np.full(self.size, -1, dtype=np.int64)
        renumber[live] = np.arange(live.size)
        mixed: list[tuple[np.ndarray | None, np.ndarray]] = []
        for who, k in self.mixed:
            if who is None:
                mixed.append((None, k[live]))
                continue
            new = renumber[who]
            kept = np.flatnonzero(new >= 0)
            if kept.size:
                mixed.append((new[kept], k[kept]))
        self.mixed = mixed
        self.length = self.length[live]
        self.tail = self.tail[live]
        self.has_tail = self.has_tail[live]
        self.seed = self.seed[live]


def murmur_chain(keys: Keys, num_hashes: int) -> np.ndarray:
    """The ``num_hashes`` chained Hadoop MurmurHash2 values of each key's UTF-8 bytes, as Java ints
    (int32 array of shape ``(len(keys), num_hashes)``): column 0 is ``murmur(key, seed=0)``, column
    ``i`` is ``murmur(key, seed=column i-1)``. Null and empty keys raise ValueError (Hudi's hash
    function rejects them)."""
    data, starts, lengths = _valid_buffers(keys, "hash")
    chain = _MurmurChain(data, starts, lengths)
    out = np.empty((lengths.size, num_hashes), dtype=np.int32)
    for i in range(num_hashes):
        out[:, i] = chain.step().view(np.int32)
    return out


def _valid_buffers(keys: Keys, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    binary = _as_binary(keys)
    if binary.null_count:
        raise ValueError(f"cannot {what} {binary.null_count} null record key(s): Hudi keys are never null")
    data, starts, lengths = _buffers(binary)
    if (lengths == 0).any():
        # Java's HashFunction throws "key length must be > 0": Hudi never adds an empty key.
        raise ValueError(f"cannot {what} {int((lengths == 0).sum())} empty record key(s)")
    return data, starts, lengths


def _positions(h: np.ndarray, num_bits: np.ndarray | int) -> np.ndarray:
    """Bit positions of hashes ``h`` (uint32 holding Java ints) in filters of ``num_bits`` bits."""
    # Java's Math.abs(h % m): `%` truncates toward zero (np.fmod), so a negative h gives -(|h| mod m);
    # |h % m| < m < 2**31, so int32 arithmetic cannot overflow here.
    divisor = np.int32(num_bits) if isinstance(num_bits, int) else num_bits.astype(np.int32)
    return np.abs(np.fmod(h.view(np.int32), divisor)).astype(np.int64)


def _bits_at(buffer: np.ndarray, byte_start: np.ndarray | int, positions: np.ndarray) -> np.ndarray:
    """Whether bit ``positions`` is set in the bit arrays starting at byte ``byte_start``."""
    byte = buffer[byte_start + (positions >> 3)]
    # LSB-first: bit i is byte i // 8 under the mask 1 << (i % 8) (InternalBloomFilter.BIT_VALUES).
    return ((byte >> (positions & 7).astype(np.uint8)) & 1).astype(bool)
