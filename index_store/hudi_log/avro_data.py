"""The content of an Avro data block (``HoodieAvroDataBlock``), both ways: an int content version
(Hudi writes 3), an int record count, then per record an int length and the record in Avro's
binary encoding under the block's ``SCHEMA`` header.

A block decodes in one fastavro call: the records, their length prefixes cut out, are exactly the
items of an Avro array (a count, the items, a zero), and the rows become one Arrow table."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import fastavro
import pyarrow as pa

from index_store.hudi_log.avro_schema import AvroArrow, avro_arrow
from index_store.hudi_log.format import CONTENT_VERSION, INT

__all__ = ["AvroContentError", "decode_avro_content", "decode_avro_records", "encode_avro_content"]


class AvroContentError(ValueError):
    """An Avro data block whose content does not match its own lengths or schema."""


def decode_avro_content(content: bytes, schema_json: str) -> pa.Table:
    """The records of an Avro data block's content as an Arrow table (the schema's columns)."""
    avro_arrow(schema_json)  # an unsupported schema is refused before the content is read
    if len(content) < 2 * INT.size:
        raise AvroContentError(f"{len(content)} bytes of content, fewer than its version and count")
    version, count = INT.unpack_from(content, 0)[0], INT.unpack_from(content, INT.size)[0]
    if not 1 <= version <= CONTENT_VERSION:
        raise AvroContentError(f"content version {version}, not 1 to {CONTENT_VERSION}")
    if count < 0:
        raise AvroContentError(f"negative record count {count}")
    pieces, pos = [], 2 * INT.size
    for _ in range(count):  # the lengths chain: each says where the next one is
        if pos + INT.size > len(content):
            raise AvroContentError(f"the content ends before its {count} records")
        length = INT.unpack_from(content, pos)[0]
        pos += INT.size
        if length < 0 or pos + length > len(content):
            raise AvroContentError(f"a record of {length} bytes runs past the content")
        pieces.append(content[pos : pos + length])
        pos += length
    if pos != len(content):
        raise AvroContentError(f"{len(content) - pos} bytes after the last of {count} records")
    return decode_avro_records(b"".join(pieces), count, schema_json)


def decode_avro_records(
    records: bytes, count: int, schema_json: str, record_unions: bool = False
) -> pa.Table:
    """``count`` records in Avro's binary encoding, back to back (as an Avro data block's are
    once their lengths are cut out, or as an HFile data block's values are), as an Arrow table;
    ``record_unions``: unions of several records as structs of their branches (``avro_schema``)."""
    avro = avro_arrow(schema_json, record_unions)
    if not count:
        return avro.logical.empty_table()
    stream = io.BytesIO(_varint(count) + records + b"\x00")
    try:
        rows = fastavro.schemaless_reader(
            stream,
            avro.array_schema,
            None,
            return_record_name=avro.has_record_unions,
            return_record_name_override=avro.has_record_unions,
        )
    except Exception as exc:  # fastavro raises EOFError, ValueError, ... on bytes off its schema
        raise AvroContentError(f"records do not decode with the block's schema: {exc}") from exc
    if stream.tell() != len(stream.getbuffer()) or not isinstance(rows, list) or len(rows) != count:
        raise AvroContentError("records do not fill their lengths under the block's schema")
    if avro.has_record_unions:
        rows = [_branches_as_fields(row) for row in rows]
    return pa.Table.from_pylist(rows, schema=avro.physical).cast(avro.logical)


def _branches_as_fields(value: Any) -> Any:
    """fastavro's ``(record name, record)`` for a union branch as ``{short name: record}``, the
    struct ``avro_schema`` gives such a union."""
    if isinstance(value, tuple):
        name, inner = value
        return {str(name).rsplit(".", 1)[-1]: _branches_as_fields(inner)}
    if isinstance(value, dict):
        return {k: _branches_as_fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_branches_as_fields(v) for v in value]
    return value


def encode_avro_content(
    rows: pa.Table | Sequence[Mapping[str, Any]], schema_json: str, version: int = CONTENT_VERSION
) -> bytes:
    """An Avro data block's content from rows (an Arrow table with the schema's columns, or
    dicts as fastavro takes them)."""
    avro = avro_arrow(schema_json)
    records = _records(rows, avro) if isinstance(rows, pa.Table) else list(rows)
    parts = [INT.pack(version), INT.pack(len(records))]
    buffer = io.BytesIO()
    for record in records:  # each record is length-prefixed, so each is written on its own
        buffer.seek(0)
        buffer.truncate()
        fastavro.schemaless_writer(buffer, avro.fastavro_schema, record)
        data = buffer.getvalue()
        parts += [INT.pack(len(data)), data]
    return b"".join(parts)


def _records(table: pa.Table, avro: AvroArrow) -> list[dict[str, Any]]:
    """Rows as fastavro writes them: temporal columns as their stored integers (cast through the
    logical types first, so a column in another unit is converted, not reinterpreted)."""
    missing = [name for name in avro.logical.names if name not in table.column_names]
    if missing:
        raise AvroContentError(f"the rows lack the schema's columns {missing}")
    physical = table.select(avro.logical.names).cast(avro.logical).cast(avro.physical)
    records = physical.to_pylist()
    if avro.has_maps:
        records = [_maps_as_dicts(r, avro.physical) for r in records]
    return records


def _maps_as_dicts(value: Any, kind: pa.DataType | pa.Schema) -> Any:
    """Arrow's (key, value) pairs of map columns as dicts, at any depth."""
    if value is None:
        return None
    if isinstance(kind, pa.Schema) or pa.types.is_struct(kind):
        fields = list(kind)
        return {f.name: _maps_as_dicts(value[f.name], f.type) for f in fields}
    if pa.types.is_map(kind):
        return {k: _maps_as_dicts(v, kind.item_type) for k, v in value}
    if pa.types.is_list(kind):
        return [_maps_as_dicts(v, kind.value_type) for v in value]
    return value


def _varint(n: int) -> bytes:
    """Avro's zig-zag varint of a non-negative long."""
    n <<= 1
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
