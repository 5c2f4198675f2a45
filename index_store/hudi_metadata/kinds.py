"""What kind of value a column statistics bound holds, and its natural Arrow type.

Hudi 1.x records the kind in ``valueType.typeOrdinal`` (``org.apache.hudi.stats.ValueType``) and
stores the value in a primitive wrapper (a decimal as the unscaled bytes of a ``BytesWrapper``,
precision and scale in ``additionalInfo``; a date as an ``IntWrapper``; a timestamp as a
``LongWrapper``). Before it (ordinal 0, ``V1``, or no ``valueType``) the wrapper alone says it:
``DateWrapper``, ``DecimalWrapper`` (decimal(30, 15)), ``TimestampMicrosWrapper``, ...
"""

from __future__ import annotations

import re

import pyarrow as pa

__all__ = ["VALUE_TYPE_KINDS", "decimal_type", "kind_of", "natural_type"]

# ValueType ordinals, in the enum's order.
VALUE_TYPE_KINDS = (
    "v1",
    "null",
    "boolean",
    "int",
    "long",
    "float",
    "double",
    "string",
    "bytes",
    "fixed",
    "decimal",
    "uuid",
    "date",
    "time_millis",
    "time_micros",
    "timestamp_millis",
    "timestamp_micros",
    "timestamp_nanos",
    "local_timestamp_millis",
    "local_timestamp_micros",
    "local_timestamp_nanos",
)
_V1_KINDS = {
    "BooleanWrapper": "boolean",
    "IntWrapper": "int",
    "LongWrapper": "long",
    "FloatWrapper": "float",
    "DoubleWrapper": "double",
    "BytesWrapper": "bytes",
    "StringWrapper": "string",
    "DateWrapper": "date",
    "DecimalWrapper": "decimal_v1",
    "TimeMicrosWrapper": "time_micros",
    "TimestampMicrosWrapper": "timestamp_micros",
    "LocalDateWrapper": "date",
}
_NATURAL = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "uuid": pa.string(),
    "bytes": pa.binary(),
    "fixed": pa.binary(),
    "decimal_v1": pa.decimal128(30, 15),
    "date": pa.date32(),
    "time_millis": pa.time32("ms"),
    "time_micros": pa.time64("us"),
    "timestamp_millis": pa.timestamp("ms", tz="UTC"),
    "timestamp_micros": pa.timestamp("us", tz="UTC"),
    "timestamp_nanos": pa.timestamp("ns", tz="UTC"),
    "local_timestamp_millis": pa.timestamp("ms"),
    "local_timestamp_micros": pa.timestamp("us"),
    "local_timestamp_nanos": pa.timestamp("ns"),
}


def kind_of(ordinal: int | None, wrapper: str | None) -> str | None:
    """The kind of a bound from its ``valueType`` ordinal (when set and not ``V1``) or else its
    wrapper's name; None when neither is known (the bound is then unusable)."""
    if ordinal is not None and 0 < ordinal < len(VALUE_TYPE_KINDS):
        return VALUE_TYPE_KINDS[ordinal]
    return _V1_KINDS.get(wrapper or "")


def decimal_type(type_info: str | None) -> pa.DataType | None:
    """``decimal128(precision, scale)`` from a decimal bound's ``additionalInfo`` (its first two
    numbers), or None when it does not carry them."""
    numbers = [int(n) for n in re.findall(r"\d+", type_info or "")]
    if len(numbers) < 2 or not 0 < numbers[0] <= 38:
        return None
    return pa.decimal128(numbers[0], numbers[1])


def natural_type(kind: str, type_info: str | None = None) -> pa.DataType | None:
    """The Arrow type a bound of ``kind`` reads as when the data column's type is not known."""
    if kind == "decimal":
        return decimal_type(type_info)
    return _NATURAL.get(kind)
