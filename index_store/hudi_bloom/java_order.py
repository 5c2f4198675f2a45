"""Java ``String.compareTo`` order (UTF-16 code units) for arrays of keys, vectorized."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.hudi_bloom.format import Keys
from index_store.hudi_bloom.hashing import _as_binary

# Valid UTF-8 has the bytes 0xEE-0xF4 only as lead bytes: 0xEE/0xEF start U+E000-U+FFFF, 0xF0-0xF4
# start U+10000 and up, which Java holds as surrogate pairs (0xD800-0xDFFF) and so sorts *below*
# U+E000-U+FFFF. Moving 0xF0-0xF4 down to 0xEE-0xF2 and 0xEE/0xEF up to 0xF3/0xF4 (each group
# keeping its order; continuation bytes are 0x80-0xBF, untouched) makes byte order UTF-16 order.
_UTF16_ORDER = np.arange(256, dtype=np.uint8)
_UTF16_ORDER[0xF0:0xF5] = np.arange(0xEE, 0xF3, dtype=np.uint8)
_UTF16_ORDER[0xEE:0xF0] = np.array([0xF3, 0xF4], dtype=np.uint8)


def java_sort_keys(strings: Keys) -> pa.LargeBinaryArray:
    """Binary sort keys whose bytewise order is Java's ``String.compareTo`` order of ``strings``
    (UTF-16 code units; Python's ``str`` order and UTF-8 byte order are by code point, which
    differs only when a character above U+FFFF meets one in U+E000-U+FFFF). One table lookup per
    byte, vectorized; nulls stay null."""
    binary = _as_binary(strings)
    validity, offsets, data = binary.buffers()
    if data is None or not len(binary):
        return binary
    mapped = pa.py_buffer(_UTF16_ORDER[np.frombuffer(data, dtype=np.uint8)].tobytes())
    return pa.Array.from_buffers(
        pa.large_binary(), len(binary), [validity, offsets, mapped], binary.null_count, binary.offset
    )


def java_argsort(strings: Keys) -> np.ndarray:
    """Indices that sort ``strings`` as Java's ``String.compareTo`` (stable; nulls last)."""
    return pc.sort_indices(java_sort_keys(strings)).to_numpy()
