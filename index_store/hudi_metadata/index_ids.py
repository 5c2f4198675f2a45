"""The hashed ids the metadata table's statistics and bloom filter keys are made of, computed as
Hudi computes them (``HashID``, ``ColumnIndexID``, ``PartitionIndexID``, ``FileIndexID``), so a
record is found by its key instead of by decoding its whole partition.

- a column name and a partition identifier (``"."`` for a non-partitioned table) hash to 64 bits
  with XXHash64, seed ``0xdabadaba`` (a Java int, so sign-extended to the long seed), big-endian;
- a file name hashes to 128 bits with MD5;
- each id is base64-encoded on its own (12 and 24 characters, padded) and the parts concatenated:
  ``column_stats`` keys are column + partition + file, ``partition_stats`` keys column + partition,
  ``bloom_filters`` keys partition + file. So every key of one column starts with that column's
  12 characters, and ``column + partition`` is the prefix of one partition's files.

Every function works on many strings at once (numpy over padded byte matrices), no per-string loop.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "NON_PARTITIONED_ID",
    "bloom_filter_keys",
    "column_ids",
    "column_stats_keys",
    "file_ids",
    "md5",
    "partition_ids",
    "partition_stats_keys",
    "xxhash64",
]

NON_PARTITIONED_ID = "."  # Hudi's partition identifier of a non-partitioned table
_SEED = np.uint64(0xFFFFFFFFDABADABA)  # HashID's int seed 0xdabadaba widened to a long
_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_B64 = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", dtype=np.uint8)


def _matrix(strings: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 bytes of ``strings`` as rows of a zero-padded uint8 matrix at least ``width`` wide
    (plus room for reads past the end), and their lengths."""
    arr = pc.cast(strings, pa.binary()) if not pa.types.is_binary(strings.type) else strings
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)
    lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
    data = arr.buffers()[2]
    flat = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    cols = -(-max(width, int(lengths.max(initial=0)) + 72) // 8) * 8
    out = np.zeros((len(arr), cols), dtype=np.uint8)
    first, last = int(offsets[0]), int(offsets[-1])
    if last > first:
        # Byte j of the data goes to row r, column j - offsets[r]: one shift per row, repeated.
        shift = np.arange(len(arr), dtype=np.int64) * cols - offsets[:-1]
        out.reshape(-1)[np.arange(first, last) + np.repeat(shift, lengths)] = flat[first:last]
    return out, lengths


def _lanes(matrix: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
    """The little-endian unsigned word of ``size`` bytes at byte ``at`` (a multiple of ``size``)
    of each row."""
    words = matrix.view("<u8" if size == 8 else "<u4")
    return words[np.arange(len(at)), at // size].astype(np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def xxhash64(strings: pa.Array, seed: np.uint64 = _SEED) -> np.ndarray:
    """XXHash64 of each string's UTF-8 bytes (uint64), as lz4-java's ``XXHash64.hash``."""
    m, n = _matrix(strings, 32)
    with np.errstate(over="ignore"):
        h = np.full(len(n), seed + _P5, dtype=np.uint64)
        stripes = n // 32
        if stripes.max(initial=0):
            v = [
                np.full(len(n), seed + _P1 + _P2, np.uint64),
                np.full(len(n), seed + _P2, np.uint64),
                np.full(len(n), seed, np.uint64),
                np.full(len(n), seed - _P1, np.uint64),
            ]
            for s in range(int(stripes.max())):
                live = stripes > s
                for j in range(4):
                    lane = m[:, 32 * s + 8 * j : 32 * s + 8 * j + 8].copy().view("<u8")[:, 0]
                    v[j] = np.where(live, _round(v[j], lane), v[j])
            big = _rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)
            for j in range(4):
                big = (big ^ _round(np.zeros_like(big), v[j])) * _P1 + _P4
            h = np.where(stripes > 0, big, h)
        h = h + n.astype(np.uint64)
        at = stripes * 32
        for _ in range(3):  # up to three 8-byte words after the stripes
            live = n - at >= 8
            k = _round(np.zeros_like(h), _lanes(m, at, 8))
            h = np.where(live, _rotl(h ^ k, 27) * _P1 + _P4, h)
            at = at + 8 * live
        live = n - at >= 4
        h = np.where(live, _rotl(h ^ (_lanes(m, at, 4) * _P1), 23) * _P2 + _P3, h)
        at = at + 4 * live
        for _ in range(3):  # the last bytes one by one
            live = n - at >= 1
            byte = m[np.arange(len(n)), at].astype(np.uint64)
            h = np.where(live, _rotl(h ^ (byte * _P5), 11) * _P1, h)
            at = at + live
        h ^= h >> np.uint64(33)
        h *= _P2
        h ^= h >> np.uint64(29)
        h *= _P3
        h ^= h >> np.uint64(32)
    return h


_MD5_S = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4)
_MD5_K = np.floor(np.abs(np.sin(np.arange(1, 65))) * 2**32).astype(np.uint64).astype(np.uint32)
_MD5_G = np.array(
    [i for i in range(16)]
    + [(5 * i + 1) % 16 for i in range(16, 32)]
    + [(3 * i + 5) % 16 for i in range(32, 48)]
    + [(7 * i) % 16 for i in range(48, 64)]
)


def md5(strings: pa.Array) -> np.ndarray:
    """MD5 digests of each string's UTF-8 bytes, an ``(n, 16)`` uint8 matrix."""
    m, n = _matrix(strings, 64)
    rows = np.arange(len(n))
    blocks = (n + 8) // 64 + 1
    width = int(blocks.max(initial=1)) * 64
    msg = np.zeros((len(n), width), dtype=np.uint8)
    msg[:, : m.shape[1] if m.shape[1] < width else width] = m[:, :width]
    msg[rows, n] = 0x80
    bits = (n.astype(np.uint64) * np.uint64(8)).view(np.uint8).reshape(len(n), 8)
    tail = (blocks * 64 - 8)[:, None] + np.arange(8)
    np.put_along_axis(msg, tail, bits, axis=1)
    words = np.ascontiguousarray(msg.view("<u4").T)  # one row per word: contiguous columns
    state = [np.full(len(n), v, np.uint32) for v in (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)]
    with np.errstate(over="ignore"):
        for b in range(int(blocks.max(initial=1))):
            live = blocks > b
            w = words[16 * b : 16 * b + 16]
            a, bb, c, d = state
            for i in range(64):
                if i < 16:
                    f = (bb & c) | (~bb & d)
                elif i < 32:
                    f = (d & bb) | (~d & c)
                elif i < 48:
                    f = bb ^ c ^ d
                else:
                    f = c ^ (bb | ~d)
                f = f + a + _MD5_K[i] + w[_MD5_G[i]]
                s = np.uint32(_MD5_S[i])
                a, d, c = d, c, bb
                bb = bb + ((f << s) | (f >> (np.uint32(32) - s)))
            state = [np.where(live, x + y, x) for x, y in zip(state, (a, bb, c, d), strict=True)]
    return np.stack(state, axis=1).astype("<u4").view(np.uint8)


def _base64(raw: np.ndarray) -> np.ndarray:
    """Base64 (padded) of each row of an ``(n, w)`` uint8 matrix, as an ``(n, 4 * ceil(w / 3))``
    matrix of ASCII codes."""
    n, w = raw.shape
    groups = -(-w // 3)
    padded = np.zeros((n, groups * 3), dtype=np.uint32)
    padded[:, :w] = raw
    trip = padded.reshape(n, groups, 3)
    word = (trip[..., 0] << 16) | (trip[..., 1] << 8) | trip[..., 2]
    sextets = np.stack([(word >> s) & 63 for s in (18, 12, 6, 0)], axis=-1).reshape(n, groups * 4)
    out = _B64[sextets]
    pad = groups * 3 - w
    if pad:
        out[:, -pad:] = ord("=")
    return out


def _strings(chars: np.ndarray) -> pa.StringArray:
    n, w = chars.shape
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * w).tobytes())
    return pa.StringArray.from_buffers(n, offsets, pa.py_buffer(np.ascontiguousarray(chars).tobytes()))


def _ids64(strings: pa.Array) -> pa.StringArray:
    digest = xxhash64(strings).astype(">u8").view(np.uint8).reshape(len(strings), 8)
    return _strings(_base64(digest))


def column_ids(columns: pa.Array) -> pa.StringArray:
    """``ColumnIndexID`` of each column name, base64 (12 characters)."""
    return _ids64(columns)


def partition_ids(partitions: pa.Array) -> pa.StringArray:
    """``PartitionIndexID`` of each partition path ("" is a non-partitioned table's), base64."""
    identifiers = pc.if_else(pc.equal(partitions, ""), NON_PARTITIONED_ID, partitions)
    return _ids64(identifiers)


def file_ids(file_names: pa.Array) -> pa.StringArray:
    """``FileIndexID`` of each file name (MD5), base64 (24 characters)."""
    return _strings(_base64(md5(file_names)))


def column_stats_keys(columns: pa.Array, partitions: pa.Array, file_names: pa.Array) -> pa.StringArray:
    """The ``column_stats`` key of each (column, partition, file name)."""
    return pc.binary_join_element_wise(
        column_ids(columns), partition_ids(partitions), file_ids(file_names), ""
    )


def partition_stats_keys(columns: pa.Array, partitions: pa.Array) -> pa.StringArray:
    """The ``partition_stats`` key of each (column, partition)."""
    return pc.binary_join_element_wise(column_ids(columns), partition_ids(partitions), "")


def bloom_filter_keys(partitions: pa.Array, file_names: pa.Array) -> pa.StringArray:
    """The ``bloom_filters`` key of each (partition, file name)."""
    return pc.binary_join_element_wise(partition_ids(partitions), file_ids(file_names), "")
