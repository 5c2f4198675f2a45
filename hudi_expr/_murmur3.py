"""MurmurHash3 x64_128 (seed 0), vectorized across keys with numpy uint64 arithmetic.

Bit-exact with ``mmh3.hash128(key, seed=0, x64arch=True, signed=False)``: ``h1`` is the low and
``h2`` the high 64 bits of that integer. Python loops run only over 16-byte block indices (and
the tail), never over keys. numpy integer arrays wrap on overflow, which is what MurmurHash needs.
"""

from __future__ import annotations

import mmh3
import numpy as np
import pyarrow as pa

__all__ = ["hash_binary", "hash_words"]

_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_N1 = np.uint64(0x52DCE729)
_N2 = np.uint64(0x38495AB5)
_FIVE = np.uint64(5)

# Keys longer than this are hashed one by one with mmh3 (C), so that one pathological long key
# does not make the vectorized loop run once per 16 bytes of it for all keys.
MAX_VECTORIZED_KEY_LEN = 256


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _mix_k1(k1: np.ndarray) -> np.ndarray:
    return _rotl(k1 * _C1, 31) * _C2


def _mix_k2(k2: np.ndarray) -> np.ndarray:
    return _rotl(k2 * _C2, 33) * _C1


def _fmix(k: np.ndarray) -> np.ndarray:
    k = k ^ (k >> np.uint64(33))
    k = k * _FMIX1
    k = k ^ (k >> np.uint64(33))
    k = k * _FMIX2
    return k ^ (k >> np.uint64(33))


def _block(h1: np.ndarray, h2: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h1 = h1 ^ _mix_k1(k1)
    h1 = (_rotl(h1, 27) + h2) * _FIVE + _N1
    h2 = h2 ^ _mix_k2(k2)
    h2 = (_rotl(h2, 31) + h1) * _FIVE + _N2
    return h1, h2


def _finish(
    h1: np.ndarray, h2: np.ndarray, k1: np.ndarray, k2: np.ndarray, length: np.ndarray | np.uint64
) -> tuple[np.ndarray, np.ndarray]:
    # Tail words: mixing a zero word gives zero, so keys whose tail is shorter need no mask here.
    h2 = h2 ^ _mix_k2(k2)
    h1 = h1 ^ _mix_k1(k1)
    h1 = h1 ^ length
    h2 = h2 ^ length
    h1 = h1 + h2
    h2 = h2 + h1
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = h1 + h2
    h2 = h2 + h1
    return h1, h2


def hash_words(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hash fixed-width keys given as an ``(n, w)`` uint64 matrix: each row is one ``8*w``-byte key
    (little-endian words). The fast path for numbers, decimals and aligned fixed-size binary."""
    words = np.asarray(words, dtype=np.uint64)
    n, width = words.shape
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    for b in range(width // 2):
        h1, h2 = _block(h1, h2, words[:, 2 * b], words[:, 2 * b + 1])
    zero = np.zeros(n, dtype=np.uint64)
    k1 = words[:, width - 1] if width % 2 else zero
    return _finish(h1, h2, k1, zero, np.uint64(8 * width))


def _byte_mask(nbytes: np.ndarray) -> np.ndarray:
    # numpy defines uint64 << 64 as 0, so 8 bytes gives 0 - 1 = all ones (wrapping).
    return (np.uint64(1) << (nbytes.astype(np.uint64) << np.uint64(3))) - np.uint64(1)


def hash_binary(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Hash every entry of a binary, large_binary or fixed_size_binary array (null slots hash
    whatever bytes they span; callers mask them)."""
    n = len(array)
    if pa.types.is_fixed_size_binary(array.type):
        width = array.type.byte_width
        data = _buffer_bytes(array.buffers()[1], array.offset * width, (array.offset + n) * width)
        if width % 8 == 0 and width > 0:
            return hash_words(data.view("<u8").reshape(n, width // 8))
        offsets = np.arange(n + 1, dtype=np.int64) * width
    else:
        dtype = np.int64 if pa.types.is_large_binary(array.type) else np.int32
        raw = np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset : array.offset + n + 1]
        first = int(raw[0]) if n else 0
        offsets = raw.astype(np.int64) - first
        data = _buffer_bytes(array.buffers()[2], first, first + int(offsets[-1]))
    return _hash_ragged(offsets, data)


def _buffer_bytes(buffer: pa.Buffer | None, start: int, stop: int) -> np.ndarray:
    if buffer is None or stop <= start:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(buffer, dtype=np.uint8)[start:stop].copy()


def _hash_ragged(offsets: np.ndarray, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys ``data[offsets[i]:offsets[i+1]]``; loops over block index, masked per key."""
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    n = len(lengths)
    # Zero-padded little-endian words, so an 8-byte load at any byte position is two aligned
    # loads and shifts; the padding covers loads past the end of the last key.
    words = np.zeros(len(data) // 8 + 4, dtype="<u8")
    words.view(np.uint8)[: len(data)] = data

    def load(pos: np.ndarray) -> np.ndarray:
        q = pos >> 3
        r = ((pos & 7) << 3).astype(np.uint64)
        return (words[q] >> r) | (words[q + 1] << (np.uint64(64) - r))

    long_keys = np.flatnonzero(lengths > MAX_VECTORIZED_KEY_LEN)
    if long_keys.size:
        lengths = lengths.copy()
        lengths[long_keys] = 0
    nblocks = lengths >> 4
    h1 = np.zeros(n, dtype=np.uint64)
    h2 = np.zeros(n, dtype=np.uint64)
    max_blocks = int(nblocks.max()) if n else 0
    min_blocks = int(nblocks.min()) if n else 0
    for b in range(max_blocks):
        idx = slice(None) if b < min_blocks else np.flatnonzero(nblocks > b)
        pos = starts[idx] + 16 * b
        h1[idx], h2[idx] = _block(h1[idx], h2[idx], load(pos), load(pos + 8))
    tail_pos = starts + (nblocks << 4)
    tail_len = lengths & 15
    k1 = load(tail_pos) & _byte_mask(np.minimum(tail_len, 8))
    k2 = load(tail_pos + 8) & _byte_mask(np.maximum(tail_len - 8, 0))
    h1, h2 = _finish(h1, h2, k1, k2, lengths.astype(np.uint64))
    for i in long_keys:
        value = mmh3.hash128(data[starts[i] : offsets[i + 1]].tobytes(), seed=0, x64arch=True, signed=False)
        h1[i] = value & 0xFFFFFFFFFFFFFFFF
        h2[i] = value >> 64
    return h1, h2
