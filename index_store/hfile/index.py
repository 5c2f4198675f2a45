"""Block indexes, both ways: root index blocks (the data index's top level and the meta index, in
the load-on-open section) and the non-root blocks of a multi-level data index (intermediate and
leaf), plus ``locate``, which finds for many keys at once the block each can be in.

A root entry is a block's offset (8 bytes), its on-disk size (4) and its first key behind a Hadoop
vlong length; a non-root block is an entry count, a table of entry offsets, then entries of offset,
size and key. Data index keys are HBase keys (a 2-byte row length, the row, then family, qualifier,
timestamp and type that Hudi leaves empty or constant); only the row counts for Hudi, so the index
keeps rows. A block's index key may be shorter than its true first key (HBase writes a key between
the previous block's last and this block's first), which keeps "the last entry not above the key"
the right block."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "IndexEntries",
    "IndexFormatError",
    "encode_non_root_index",
    "encode_root_index",
    "hbase_key",
    "locate",
    "read_non_root_index",
    "read_root_index",
    "read_vlong",
    "row_of",
    "vlong",
]

_ENTRY = struct.Struct(">qi")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">H")


class IndexFormatError(ValueError):
    """Index block bytes that do not hold the entries they announce."""


@dataclass(frozen=True)
class IndexEntries:
    """The entries of one index block, in key order: first keys (rows), block offsets and on-disk
    sizes."""

    keys: pa.BinaryArray
    offsets: np.ndarray
    sizes: np.ndarray
    rows: list[bytes]  # the keys as Python bytes, for a single key's bisect

    def __len__(self) -> int:
        return len(self.keys)


def read_vlong(data: bytes, pos: int) -> tuple[int, int]:
    """Hadoop's ``WritableUtils`` vlong at ``pos`` and the position after it."""
    if pos >= len(data):
        raise IndexFormatError("a vlong runs past the end of the block")
    first = data[pos] - 256 if data[pos] > 127 else data[pos]
    if first >= -112:
        return first, pos + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    if pos + size > len(data):
        raise IndexFormatError("a vlong runs past the end of the block")
    value = int.from_bytes(data[pos + 1 : pos + size], "big")
    return (~value if negative else value), pos + size


def vlong(value: int) -> bytes:
    """``value`` as Hadoop's ``WritableUtils`` vlong."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    prefix = -113
    if value < 0:
        value, prefix = ~value, -121
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return struct.pack(">b", prefix - len(body) + 1) + body


def row_of(key: bytes) -> bytes:
    """The row of an HBase key (its 2-byte length, then the row)."""
    if len(key) < 2:
        raise IndexFormatError(f"an index key of {len(key)} bytes, shorter than its row length")
    length = _SHORT.unpack_from(key, 0)[0]
    if 2 + length > len(key):
        raise IndexFormatError(f"an index key's row of {length} bytes runs past the key's {len(key)}")
    return key[2 : 2 + length]


def hbase_key(row: bytes) -> bytes:
    """An HBase key for ``row`` as HBase writes Hudi's cells: empty family and qualifier, the
    latest timestamp, type Put."""
    return _SHORT.pack(len(row)) + row + b"\x00" + b"\x7f\xff\xff\xff\xff\xff\xff\xff" + b"\x04"


def read_root_index(payload: bytes, count: int, rows: bool = True) -> IndexEntries:
    """The ``count`` entries of a root index block (``rows``: keys are HBase keys, as in the data
    index; else plain names, as in the meta index). Bytes after them (a multi-level root's mid-key
    metadata) are not entries."""
    keys, offsets, sizes, pos = [], np.empty(count, np.int64), np.empty(count, np.int64), 0
    for i in range(count):  # each entry's key length says where the next entry starts
        if pos + _ENTRY.size > len(payload):
            raise IndexFormatError(f"the root index ends after {i} of its {count} entries")
        offsets[i], sizes[i] = _ENTRY.unpack_from(payload, pos)
        length, pos = read_vlong(payload, pos + _ENTRY.size)
        if length < 0 or pos + length > len(payload):
            raise IndexFormatError(f"root index entry {i}'s key of {length} bytes runs past the block")
        key = payload[pos : pos + length]
        keys.append(row_of(key) if rows else key)
        pos += length
    return IndexEntries(pa.array(keys, pa.binary()), offsets, sizes, keys)


def read_non_root_index(payload: bytes) -> IndexEntries:
    """The entries of a leaf or intermediate index block."""
    if len(payload) < 4:
        raise IndexFormatError("a non-root index block shorter than its entry count")
    count = _INT.unpack_from(payload, 0)[0]
    base = 4 + 4 * (count + 1)
    if count < 0 or base > len(payload):
        raise IndexFormatError(f"a non-root index block of {count} entries has no room for their offsets")
    relative = np.frombuffer(payload, ">i4", count + 1, 4).astype(np.int64)
    starts = base + relative
    if np.any(np.diff(starts) < _ENTRY.size) or starts[-1] > len(payload):
        raise IndexFormatError("a non-root index block's entry offsets are out of order or past the block")
    offsets = np.empty(count, np.int64)
    sizes = np.empty(count, np.int64)
    keys = []
    for i in range(count):
        offsets[i], sizes[i] = _ENTRY.unpack_from(payload, int(starts[i]))
        keys.append(row_of(payload[int(starts[i]) + _ENTRY.size : int(starts[i + 1])]))
    return IndexEntries(pa.array(keys, pa.binary()), offsets, sizes, keys)


def encode_root_index(entries: list[tuple[int, int, bytes]]) -> bytes:
    """A root index block's payload from (offset, on-disk size, key) entries."""
    return b"".join(_ENTRY.pack(offset, size) + vlong(len(key)) + key for offset, size, key in entries)


def encode_non_root_index(entries: list[tuple[int, int, bytes]]) -> bytes:
    """A leaf or intermediate index block's payload from (offset, on-disk size, key) entries."""
    bodies = [_ENTRY.pack(offset, size) + key for offset, size, key in entries]
    starts = np.concatenate([[0], np.cumsum([len(b) for b in bodies], dtype=np.int64)])
    return _INT.pack(len(entries)) + starts.astype(">i4").tobytes() + b"".join(bodies)


def locate(first_keys: pa.Array, keys: pa.Array) -> np.ndarray:
    """For each of ``keys``, the position of the last of ``first_keys`` (sorted) not above it: the
    block it can be in; -1 before the first. One stable sort of both, no per-key search."""
    n = len(first_keys)
    both = pa.concat_arrays([first_keys.cast(pa.binary()), keys.cast(pa.binary())])
    # Stable: a first key equal to a key sorts before it (it came first), so it counts as "not above".
    order = pc.sort_indices(both).to_numpy()
    is_first = order < n
    below = np.cumsum(is_first) - 1
    out = np.empty(len(keys), np.int64)
    out[order[~is_first] - n] = below[~is_first]
    return out
