"""Index record keys as in Hudi RFC-37: ``base64(hash64(column) + hash64(partition) + hash128(file))``.

One file's entry can be located without reading the others, and keys of one column sort together.
Hashes are MurmurHash3 x64_128 (``hash64`` is its low 64 bits), big-endian. The file part is
hashed once per file (``file_key_parts``) and reused for every column; assembly and base64 run
over whole arrays, so the keys of a 1M-file, 20-column index need no per-key Python.
"""

from __future__ import annotations

import base64

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr import hash_keys

__all__ = ["KEY_BYTES", "file_key_parts", "index_keys", "slice_keys"]

KEY_BYTES = 32


def file_key_parts(partitions: pa.Array, files: pa.Array) -> np.ndarray:
    """``hash64(partition) + hash128(file)`` of every file: an ``(n, 24)`` byte matrix."""
    encoded = pc.dictionary_encode(partitions.cast(pa.string()))
    p1, _ = hash_keys(encoded.dictionary)
    p_bytes = _big_endian(p1)[encoded.indices.to_numpy(zero_copy_only=False)]
    f1, f2 = hash_keys(files.cast(pa.string()))
    return np.concatenate([p_bytes, _big_endian(f1), _big_endian(f2)], axis=1)


def index_keys(column: str, parts: np.ndarray) -> pa.StringArray:
    """The key of ``column`` in each file whose ``file_key_parts`` row is given, as base64 text."""
    n = len(parts)
    c1, _ = hash_keys(pa.array([column], pa.string()))
    # 33 bytes per row (the 32-byte key and a zero) encode to exactly 44 characters, so one
    # b64encode call over the whole buffer yields every row's text; the zero's char becomes "=".
    raw = np.zeros((n, KEY_BYTES + 1), dtype=np.uint8)
    raw[:, :8] = _big_endian(c1)
    raw[:, 8:KEY_BYTES] = parts
    text = np.frombuffer(base64.b64encode(raw.tobytes()), dtype=np.uint8).reshape(n, 44).copy()
    text[:, -1] = ord("=")
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * 44).tobytes())
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(text.tobytes())])


def slice_keys(partitions: pa.Array, file_groups: pa.Array) -> pa.Int64Array:
    """Per file, a 64-bit key its file slice's other files share: MurmurHash3 (low 64 bits, as
    int64) of ``partition NUL file id``; null for a file with no file group (a slice of its own).
    Two slices whose keys collide are only ever kept together, which is sound."""
    if file_groups.null_count == len(file_groups):  # plain tables: nothing to hash
        return pa.nulls(len(file_groups), pa.int64())
    joined = pc.binary_join_element_wise(
        pc.fill_null(partitions.cast(pa.string()), ""), file_groups.cast(pa.string()), "\x00"
    )
    h1, _ = hash_keys(joined)
    return pa.array(
        h1.view(np.int64), pa.int64(), mask=np.asarray(pc.is_null(joined).to_numpy(zero_copy_only=False))
    )


def _big_endian(words: np.ndarray) -> np.ndarray:
    return words.astype(">u8").view(np.uint8).reshape(-1, 8)
