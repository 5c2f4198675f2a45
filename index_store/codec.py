"""Typed min/max in the ``column_stats`` partition: one parquet schema for columns of every type.

Each column's bounds live in the "slot" of its type family (``int`` for integers, dates and
timestamps, ``uint`` for uint64, ``float`` for floats, ``bool``, and ``bytes`` for strings, binary
and decimals as their raw little-endian two's complement), and the table schema in the timeline
says how to read them back. Every conversion is exact and vectorized; ``decode(encode(a)) == a``.
"""

from __future__ import annotations

import pyarrow as pa

from hudi_expr.types import is_binary_like, is_string_like

__all__ = ["SLOT_TYPES", "decode", "encode", "slot_of"]

SLOT_TYPES: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "uint": pa.uint64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "bytes": pa.large_binary(),
}


def slot_of(t: pa.DataType) -> str | None:
    """The slot holding bounds of type ``t``, or None for types without usable bounds."""
    if pa.types.is_uint64(t):
        return "uint"
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "int"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_boolean(t):
        return "bool"
    if is_string_like(t) or is_binary_like(t) or pa.types.is_decimal(t):
        return "bytes"
    return None


def encode(values: pa.Array, t: pa.DataType) -> pa.Array:
    """Bounds of type ``t`` as their slot's storage type."""
    slot = slot_of(t)
    if slot is None:
        raise TypeError(f"no stored bounds for type {t}")
    target = SLOT_TYPES[slot]
    if pa.types.is_decimal(t):
        width = t.byte_width
        fixed = pa.Array.from_buffers(
            pa.binary(width), len(values), values.buffers()[:2], offset=values.offset
        )
        return fixed.cast(target)
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        return values.view(pa.int64())
    if pa.types.is_date32(t):
        return values.view(pa.int32()).cast(target)
    return values.cast(target)


def decode(stored: pa.Array, t: pa.DataType) -> pa.Array:
    """The inverse of ``encode``: slot storage back to type ``t``."""
    if pa.types.is_decimal(t):
        width = t.byte_width
        # Null slots hold no bytes; fill them so every value spans exactly ``width`` bytes.
        filled = stored.fill_null(b"\0" * width) if stored.null_count else stored
        fixed = filled.cast(pa.binary(width))
        validity = stored.is_valid().buffers()[1] if stored.null_count else None
        return pa.Array.from_buffers(t, len(stored), [validity, fixed.buffers()[1]], offset=fixed.offset)
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        return stored.cast(pa.int64()).view(t)
    if pa.types.is_date32(t):
        return stored.cast(pa.int32()).view(t)
    if pa.types.is_float16(t):
        return stored.cast(pa.float32()).cast(t)
    return stored.cast(t)
