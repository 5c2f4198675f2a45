"""A table's columns as Hudi stores them: the Arrow types of its base files and the Avro record
schema of its log blocks and commit metadata, for the merge-on-read writer (``hudi_mor.py``).

Columns are first brought to the types Hudi keeps (Spark's, through Avro): small integers become
``int``, timestamps microseconds (UTC when zoned, as ``timestamp-micros``; ``local-timestamp-micros``
when naive), strings and binaries their plain kinds. Decimals become Avro ``fixed`` of the fewest
bytes their precision needs, named as Spark names them. Every column is nullable, an Avro union
with null first, as Hudi writes its schemas. Nested and time-of-day columns are refused."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

__all__ = ["META_FIELDS", "avro_record_schema", "hudi_arrow_schema", "normalize_columns"]

# Hudi's meta columns, in the order every base file and log record holds them
META_FIELDS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)


def _stored_type(field: pa.Field) -> pa.DataType:
    """The Arrow type a column is kept as (what base files hold and log blocks decode to)."""
    kind = field.type
    if pa.types.is_boolean(kind) or pa.types.is_float32(kind) or pa.types.is_float64(kind):
        return kind
    if pa.types.is_int32(kind) or pa.types.is_int64(kind):
        return kind
    if pa.types.is_integer(kind) and kind.bit_width < 32:  # Spark's byte and short are Avro ints
        return pa.int32()
    if pa.types.is_uint32(kind):
        return pa.int64()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_binary_view(kind):
        return pa.binary()
    if pa.types.is_date(kind):
        return pa.date32()
    if pa.types.is_timestamp(kind):
        # Avro's timestamp-micros is an instant (Arrow's zoned timestamp), stored in UTC
        return pa.timestamp("us", tz=None if kind.tz is None else "UTC")
    if pa.types.is_decimal128(kind):
        return kind
    raise ValueError(
        f"column {field.name!r} of type {kind}: the merge-on-read writer takes booleans, integers, "
        "floats, strings, binaries, dates, timestamps and decimals (up to precision 38)"
    )


def normalize_columns(table: pa.Table) -> pa.Table:
    """``table`` with its columns cast to the types Hudi keeps them as (exact casts only)."""
    schema = pa.schema([pa.field(f.name, _stored_type(f), nullable=True) for f in table.schema])
    return table.cast(schema)


def hudi_arrow_schema(data: pa.Schema) -> pa.Schema:
    """A base file's schema: the meta columns, then the (normalized) data columns."""
    meta = [pa.field(name, pa.string(), nullable=True) for name in META_FIELDS]
    return pa.schema([*meta, *data])


def _fixed_size(precision: int) -> int:
    """The fewest bytes holding any unscaled value of ``precision`` digits, two's complement
    (Spark's ``minBytesForPrecision``)."""
    size = 1
    while 2 ** (8 * size - 1) <= 10**precision:
        size += 1
    return size


def _avro_type(field: pa.Field, namespace: str) -> Any:
    kind = field.type
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_int32(kind):
        return "int"
    if pa.types.is_int64(kind):
        return "long"
    if pa.types.is_float32(kind):
        return "float"
    if pa.types.is_float64(kind):
        return "double"
    if pa.types.is_string(kind):
        return "string"
    if pa.types.is_binary(kind):
        return "bytes"
    if pa.types.is_date32(kind):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(kind):
        logical = "timestamp-micros" if kind.tz is not None else "local-timestamp-micros"
        return {"type": "long", "logicalType": logical}
    if pa.types.is_decimal128(kind):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{field.name}",
            "size": _fixed_size(kind.precision),
            "logicalType": "decimal",
            "precision": kind.precision,
            "scale": kind.scale,
        }
    raise ValueError(f"column {field.name!r} of type {kind} is not normalized (normalize_columns)")


def avro_record_schema(data: pa.Schema, table_name: str, *, with_meta: bool) -> str:
    """The Avro record schema (JSON text) of the normalized ``data`` columns, with Hudi's meta
    columns first when ``with_meta`` (what log blocks carry; commit metadata has none)."""
    name = f"{table_name}_record"
    namespace = f"hoodie.{table_name}"
    fields: list[dict[str, Any]] = []
    if with_meta:
        fields += [{"name": m, "type": ["null", "string"], "doc": "", "default": None} for m in META_FIELDS]
    fields += [
        {"name": f.name, "type": ["null", _avro_type(f, f"{namespace}.{name}")], "default": None}
        for f in data
    ]
    record = {"type": "record", "name": name, "namespace": namespace, "fields": fields}
    return json.dumps(record, separators=(",", ":"))
