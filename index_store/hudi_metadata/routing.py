"""Which file group of a hashed metadata partition holds a key, as Hudi routes it.

Hudi writes each ``record_index`` key to file group ``|(|h| mod n)|`` of the partition's ``n`` file
groups (``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``), ``h`` being Java's
``String.hashCode`` of the key (32-bit, over UTF-16 code units), file groups counted in file id
order (``record-index-0000-0``, ``record-index-0001-0``, ...). The routing is used only when the
partition's file groups are exactly those ``n`` names; otherwise every file group is looked in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["file_group_indexes", "java_string_hashes", "route_keys"]

_GROUP_NAME = re.compile(r"^(?P<prefix>[a-z-]+-)(?P<index>\d{4,})-0$")


def java_string_hashes(keys: pa.StringArray | pa.ChunkedArray) -> np.ndarray:
    """Java's ``String.hashCode`` of every key (int32), computed column-wise: each UTF-16 code
    unit ``u_j`` of a key of ``L`` units weighs ``31 ** (L - 1 - j)``, all modulo 2**32."""
    arr = pa.array(keys, pa.string()) if not isinstance(keys, pa.Array | pa.ChunkedArray) else keys
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.string())
    arr = arr.cast(pa.string())
    n = len(arr)
    if n == 0:
        return np.zeros(0, np.int32)
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset : arr.offset + n + 1]
    buffer = arr.buffers()[2]
    data = np.frombuffer(buffer, np.uint8)[offsets[0] : offsets[-1]] if buffer else np.zeros(0, np.uint8)
    starts = (offsets[:-1] - offsets[0]).astype(np.int64)
    # UTF-16 length of each key: its code points, plus one more for each outside the BMP (a
    # 4-byte UTF-8 sequence, lead byte >= 0xF0, becomes a surrogate pair).
    points = pc.utf8_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    wide = np.concatenate([[0], np.cumsum(data >= 0xF0, dtype=np.int64)])
    lengths = points + wide[offsets[1:] - offsets[0]] - wide[starts]
    units = np.frombuffer(data.tobytes().decode("utf-8").encode("utf-16-le"), np.uint16)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(n, np.int32)
    unit_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    owner = np.repeat(np.arange(n), lengths)
    exponent = (unit_start + lengths)[owner] - 1 - np.arange(total)
    powers = np.ones(int(lengths.max()), np.uint32)
    with np.errstate(over="ignore"):
        powers[1:] = 31
        powers = np.cumprod(powers, dtype=np.uint32)  # 31**k mod 2**32
        terms = units.astype(np.uint32) * powers[exponent]
        sums = np.add.reduceat(terms, unit_start[lengths > 0], dtype=np.uint32)
    hashes = np.zeros(n, np.uint32)
    hashes[lengths > 0] = sums
    return hashes.view(np.int32)


def file_group_indexes(keys: pa.StringArray | pa.ChunkedArray, count: int) -> np.ndarray:
    """The file group (0 .. ``count`` - 1) Hudi writes each key to, of ``count`` file groups."""
    hashes = java_string_hashes(keys).astype(np.int64)
    return np.abs(hashes) % count  # |MIN_VALUE| overflows in Java; its remainder's sign is dropped


def route_keys(file_ids: Sequence[str], keys: pa.Array) -> list[np.ndarray] | None:
    """The positions in ``keys`` of the keys each file group of ``file_ids`` (sorted, one per file
    group) holds, ascending; None when the file ids are not the ``<prefix>NNNN-0`` names of file
    groups 0 .. n-1 of one prefix, the layout the hash needs (then any group may hold any key)."""
    found = [_GROUP_NAME.match(f) for f in file_ids]
    if not found or any(m is None for m in found):
        return None
    if len({m.group("prefix") for m in found if m}) != 1:
        return None
    if [int(m.group("index")) for m in found if m] != list(range(len(found))):
        return None
    indexes = file_group_indexes(keys.cast(pa.string()), len(file_ids))
    order = np.argsort(indexes, kind="stable")
    bounds = np.searchsorted(indexes[order], np.arange(len(file_ids) + 1))
    return [order[bounds[g] : bounds[g + 1]] for g in range(len(file_ids))]
