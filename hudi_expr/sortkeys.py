"""Numpy sort keys of arrow values, for binary search over many IN-list values at once.

A key array must be *monotone* in the SQL order (x <= y implies key(x) <= key(y)); then "some value
lies within [min, max]" tested on keys never misses a value that truly does, which is all pruning
needs. Numbers, dates and timestamps give exact keys. Strings and binary become fixed-width numpy
bytes (``S<w>``), exact for values up to ``MAX_KEY_BYTES`` long without trailing NUL bytes; longer
ones compare by their first bytes only and NUL-padded ones tie: ties can only keep a file, never
prune one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from hudi_expr.types import is_binary_like, is_string_like

__all__ = ["MAX_KEY_BYTES", "common_keys", "sort_keys"]

MAX_KEY_BYTES = 64


def sort_keys(arr: pa.Array) -> np.ndarray | None:
    """Monotone numpy keys of ``arr`` (nulls filled arbitrarily), or None for other types."""
    t = arr.type
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        target: Any = pa.uint64() if pa.types.is_unsigned_integer(t) else pa.int64()
        return np.asarray(arr.cast(target).fill_null(0).to_numpy(zero_copy_only=False))
    if pa.types.is_floating(t):
        return np.asarray(arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))
    if pa.types.is_date32(t) or pa.types.is_timestamp(t) or pa.types.is_date64(t):
        storage = pa.int32() if pa.types.is_date32(t) else pa.int64()
        return np.asarray(arr.view(storage).cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
    if pa.types.is_decimal128(t) and t.precision <= 18:
        # The low 64-bit word of a decimal128 is its unscaled value whenever that fits in int64.
        filled = arr.fill_null(pa.scalar(0, t)) if arr.null_count else arr
        words = np.frombuffer(filled.buffers()[1], dtype=np.int64)
        return words[2 * filled.offset : 2 * (filled.offset + len(filled)) : 2].copy()
    if is_string_like(t) or is_binary_like(t):
        return _fixed_width_bytes(arr)
    return None


def _fixed_width_bytes(arr: pa.Array) -> np.ndarray:
    """Each value's first bytes in an ``S<w>`` array (numpy compares those bytewise, like SQL)."""
    n = len(arr)
    binary = arr.cast(pa.large_binary())
    if binary.null_count:
        binary = binary.fill_null(b"")
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64)[binary.offset : binary.offset + n + 1]
    buffer = binary.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = np.minimum(np.diff(offsets), MAX_KEY_BYTES)
    width = max(int(lengths.max()) if n else 1, 1)
    out = np.zeros((n, width), dtype=np.uint8)
    if len(data):
        last = len(data) - 1
        # One gather per byte position, over all values at once (positions past a value's end stay 0).
        for j in range(width):
            column = data[np.minimum(starts + j, last)]
            out[:, j] = np.where(lengths > j, column, 0)
    if width <= 8:
        # Up to 8 bytes, a big-endian integer orders exactly like the zero-padded bytes, and
        # numpy searches integers several times faster than byte strings.
        padded = np.zeros((n, 8), dtype=np.uint8)
        padded[:, :width] = out
        return padded.view(">u8").ravel().astype(np.uint64)
    return out.view(f"S{width}").ravel()


def common_keys(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two key arrays in one comparable dtype (string keys may be uint64 or bytes; see above)."""
    if a.dtype == b.dtype or a.dtype.kind not in "uS" or b.dtype.kind not in "uS":
        return a, b
    return _as_bytes(a), _as_bytes(b)


def _as_bytes(keys: np.ndarray) -> np.ndarray:
    return keys.astype(">u8").view("S8") if keys.dtype.kind == "u" else keys
