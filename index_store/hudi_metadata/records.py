"""Metadata table records decoded: Avro values (``HoodieMetadataRecord`` of Hudi's
``HoodieMetadata.avsc``) to one Arrow table per kind of metadata partition.

Every record of the metadata table, in an HFile base file or an HFile data block of a log file,
is an HFile cell: the record key as the cell key and, as the value, the record encoded in Avro
binary against the writer schema (the block's ``SCHEMA`` header, the base file's ``schema`` file
info). Hudi blanks the ``key`` field in the value to save space, so the cell key is the record's
key. A record's ``type`` says which payload field it fills: 1 the list of partitions and 2 a
partition's files (``filesystemMetadata``), 3 column statistics and 6 partition statistics
(``ColumnStatsMetadata``), 4 a bloom filter, 5 a record index entry, 7 a secondary index entry.

Column statistics bounds are Avro unions of wrapper records (``IntWrapper``, ``DecimalWrapper``,
...). They are kept here in one typed slot per storage family (``SLOTS``) with the kind of value
they hold (``kinds.kind_of``), so that merging compares like with like and
``values.typed_bounds`` maps them to the data column's exact Arrow type afterwards.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from index_store.errors import MetadataTableError
from index_store.hudi_metadata.avro_columns import Unsupported, decode_columns
from index_store.hudi_metadata.kinds import decimal_type, kind_of

__all__ = [
    "BLOOM_SCHEMA",
    "COLUMN_STATS_RAW_SCHEMA",
    "FILES_RAW_SCHEMA",
    "RECORD_INDEX_RAW_SCHEMA",
    "SECONDARY_RAW_SCHEMA",
    "SLOTS",
    "Cells",
    "decode_cells",
    "raw_table",
]

# Storage families of wrapped bounds: every wrapper's value lands in exactly one of these.
SLOTS: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
    # Every decimal, whatever its precision and scale (DecimalWrapper's decimal(30, 15), Hudi 1.x's
    # unscaled bytes), so that merging compares decimals as numbers, never as bytes.
    "decimal": pa.decimal256(76, 38),
}
_WRAPPER_SLOT = {
    "BooleanWrapper": "bool",
    "IntWrapper": "int",
    "LongWrapper": "int",
    "FloatWrapper": "float",
    "DoubleWrapper": "float",
    "BytesWrapper": "bytes",
    "StringWrapper": "string",
    "DateWrapper": "int",
    "DecimalWrapper": "decimal",
    "TimeMicrosWrapper": "int",
    "TimestampMicrosWrapper": "int",
    "LocalDateWrapper": "int",
}

_BASE = [("key", pa.string()), ("seq", pa.int64()), ("removed", pa.bool_())]
FILES_RAW_SCHEMA = pa.schema(
    [
        *_BASE,
        ("type", pa.int32()),
        (
            "entries",
            pa.list_(pa.struct([("name", pa.string()), ("size", pa.int64()), ("is_deleted", pa.bool_())])),
        ),
    ]
)
COLUMN_STATS_RAW_SCHEMA = pa.schema(
    _BASE
    + [
        ("file_name", pa.string()),
        ("column_name", pa.string()),
        ("min_kind", pa.string()),
        ("max_kind", pa.string()),
        ("type_info", pa.string()),
    ]
    + [(f"{end}_{slot}", t) for end in ("min", "max") for slot, t in SLOTS.items()]
    + [
        ("value_count", pa.int64()),
        ("null_count", pa.int64()),
        ("total_size", pa.int64()),
        ("total_uncompressed_size", pa.int64()),
        ("is_deleted", pa.bool_()),
        ("is_tight_bound", pa.bool_()),
    ]
)
BLOOM_SCHEMA = pa.schema(
    [
        *_BASE,
        ("bloom_type", pa.string()),
        ("timestamp", pa.string()),
        ("bloom_filter", pa.binary()),
        ("is_deleted", pa.bool_()),
    ]
)
RECORD_INDEX_RAW_SCHEMA = pa.schema(
    [
        *_BASE,
        ("partition", pa.string()),
        ("file_id_high_bits", pa.int64()),
        ("file_id_low_bits", pa.int64()),
        ("file_index", pa.int32()),
        ("file_id_string", pa.string()),
        ("instant_time", pa.int64()),
        ("file_id_encoding", pa.int32()),
        ("position", pa.int64()),
    ]
)
SECONDARY_RAW_SCHEMA = pa.schema([*_BASE, ("is_deleted", pa.bool_())])

_RAW_SCHEMAS = {
    "files": FILES_RAW_SCHEMA,
    "column_stats": COLUMN_STATS_RAW_SCHEMA,
    "partition_stats": COLUMN_STATS_RAW_SCHEMA,
    "bloom_filters": BLOOM_SCHEMA,
    "record_index": RECORD_INDEX_RAW_SCHEMA,
    "secondary_index": SECONDARY_RAW_SCHEMA,
}


class Cells:
    """Cells of one HFile (a base file or a log data block), in file order, and the Avro writer
    schema of their values; or the keys of a delete block (``values`` None). Keys and values may
    be given as Arrow arrays (as an HFile is read): Python lists are made only when asked for."""

    __slots__ = ("_keys", "_values", "schema", "where")

    def __init__(
        self,
        keys: Sequence[str] | pa.Array,
        values: Sequence[bytes] | pa.Array | None,
        schema: dict[str, Any] | str | None,
        where: str,
    ) -> None:
        self._keys = keys
        self._values = values
        self.schema = schema
        self.where = where  # the file (and block) they come from, for messages

    @property
    def keys(self) -> Sequence[str]:
        if isinstance(self._keys, pa.Array):
            self._keys = self._keys.cast(pa.string()).to_pylist()
        return self._keys

    @property
    def values(self) -> Sequence[bytes] | None:
        if isinstance(self._values, pa.Array):
            self._values = self._values.to_pylist()
        return self._values

    @property
    def key_array(self) -> pa.StringArray:
        """The keys as an Arrow string array."""
        keys = self._keys
        return keys.cast(pa.string()) if isinstance(keys, pa.Array) else pa.array(keys, pa.string())

    @property
    def value_array(self) -> pa.BinaryArray | None:
        """The values as an Arrow binary array (None: a delete block's keys)."""
        values = self._values
        if values is None:
            return None
        return values.cast(pa.binary()) if isinstance(values, pa.Array) else pa.array(values, pa.binary())


def _schema_dict(schema: dict[str, Any] | str | None, where: str) -> dict[str, Any]:
    if schema is None:
        raise MetadataTableError(f"{where}: HFile cells without the Avro schema of their values")
    try:
        loaded = json.loads(schema) if isinstance(schema, str) else schema
    except ValueError as exc:
        raise MetadataTableError(f"{where}: the values' Avro schema is not JSON ({exc})") from exc
    if not isinstance(loaded, dict):
        raise MetadataTableError(f"{where}: the values' Avro schema is not a record schema")
    return loaded


def _parse(schema: dict[str, Any], where: str) -> Any:
    try:
        return fastavro.parse_schema(schema)
    except (ValueError, fastavro.schema.SchemaParseException) as exc:
        raise MetadataTableError(f"{where}: the values' Avro schema does not parse ({exc})") from exc


def _zigzag(n: int) -> bytes:
    """An Avro long (zigzag varint) of a non-negative ``n``."""
    n, out = n << 1, bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read(stream: io.BytesIO, parsed: Any) -> Any:
    return fastavro.schemaless_reader(
        stream, parsed, None, return_record_name=True, return_record_name_override=True
    )


def _locate_bad_cell(cells: Cells, parsed: Any) -> MetadataTableError:
    """The error naming the first cell whose value does not decode on its own (or fill its bytes)."""
    assert cells.values is not None
    for i, (key, value) in enumerate(zip(cells.keys, cells.values, strict=True)):
        stream = io.BytesIO(value)
        try:
            _read(stream, parsed)
            if stream.tell() == len(value):
                continue
            reason = f"{len(value) - stream.tell()} bytes left after the record"
        except Exception as exc:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
            reason = str(exc) or type(exc).__name__
        return MetadataTableError(
            f"{cells.where}: cell {i} (key {key!r}) does not decode against HoodieMetadataRecord: {reason}"
        )
    return MetadataTableError(f"{cells.where}: the cells' values do not decode against HoodieMetadataRecord")


def decode_cells(cells: Cells) -> list[dict[str, Any]]:
    """The Avro records of the cells' values, with ``key`` set from each cell key. Wrapped bounds
    come back as ``(wrapper name, {"value": v})`` (fastavro's record names), so that an
    ``IntWrapper`` and a ``DateWrapper`` holding the same int stay apart. The values, back to
    back, are the items of one Avro array: one fastavro call decodes them all."""
    if cells.values is None or not len(cells.values):
        return []
    schema = _schema_dict(cells.schema, cells.where)
    array = _parse({"type": "array", "items": schema}, cells.where)
    stream = io.BytesIO(_zigzag(len(cells.values)) + b"".join(cells.values) + b"\x00")
    try:
        records = _read(stream, array)
    except Exception:  # fastavro raises EOFError, ValueError, UnicodeDecodeError, ...
        records = None
    if (
        not isinstance(records, list)
        or len(records) != len(cells.values)
        or stream.tell() != len(stream.getbuffer())
    ):
        raise _locate_bad_cell(cells, _parse(schema, cells.where))
    for key, record in zip(cells.keys, records, strict=True):
        record["key"] = key
    return records


def _wrapped(value: Any) -> tuple[str | None, str | None, Any]:
    """``(wrapper name, slot, python value)`` of a wrapped bound; Nones for a null or an
    ``ArrayWrapper`` (a bound of several values, which no rule here reads)."""
    if value is None:
        return None, None, None
    if isinstance(value, tuple):
        name, body = value
    else:  # a union of one record type: no name came back
        return None, None, None
    short = str(name).rsplit(".", 1)[-1]
    slot = _WRAPPER_SLOT.get(short)
    if slot is None or not isinstance(body, dict):
        return short, None, None
    inner = body.get("value")
    if slot == "bytes" and isinstance(inner, bytes | bytearray):
        inner = bytes(inner)
    if slot == "decimal" and not isinstance(inner, Decimal):
        return short, None, None
    return short, slot, inner


def _column_stats_row(record: dict[str, Any]) -> dict[str, Any] | None:
    stats = record.get("ColumnStatsMetadata")
    if stats is None:
        return None
    type_info = stats.get("valueType")
    ordinal = type_info.get("typeOrdinal") if isinstance(type_info, dict) else None
    info = type_info.get("additionalInfo") if isinstance(type_info, dict) else None
    row: dict[str, Any] = {
        "file_name": stats.get("fileName"),
        "column_name": stats.get("columnName"),
        "type_info": info,
        "value_count": stats.get("valueCount"),
        "null_count": stats.get("nullCount"),
        "total_size": stats.get("totalSize"),
        "total_uncompressed_size": stats.get("totalUncompressedSize"),
        "is_deleted": bool(stats.get("isDeleted")),
        "is_tight_bound": bool(stats.get("isTightBound", True)),
    }
    for end in ("min", "max"):
        wrapper, slot, value = _wrapped(stats.get(f"{end}Value"))
        kind = kind_of(ordinal, wrapper) if slot is not None else None
        if kind == "decimal" and isinstance(value, bytes):  # Hudi 1.x: unscaled two's complement
            scale = decimal_type(info)
            value = (
                None
                if scale is None
                else Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale.scale)
            )
            slot = "decimal"
        row[f"{end}_kind"] = kind if value is not None else None
        if slot is not None:
            row[f"{end}_{slot}"] = value
    return row


def _files_row(record: dict[str, Any]) -> dict[str, Any]:
    listing = record.get("filesystemMetadata") or {}
    return {
        "type": record.get("type"),
        "entries": [
            {"name": name, "size": info.get("size"), "is_deleted": bool(info.get("isDeleted"))}
            for name, info in listing.items()
        ],
    }


def _bloom_row(record: dict[str, Any]) -> dict[str, Any] | None:
    bloom = record.get("BloomFilterMetadata")
    if bloom is None:
        return None
    return {
        "bloom_type": bloom.get("type"),
        "timestamp": bloom.get("timestamp"),
        "bloom_filter": bytes(bloom.get("bloomFilter") or b""),
        "is_deleted": bool(bloom.get("isDeleted")),
    }


def _record_index_row(record: dict[str, Any]) -> dict[str, Any] | None:
    info = record.get("recordIndexMetadata")
    if info is None:
        return None
    return {
        "partition": info.get("partitionName", info.get("partition")),
        "file_id_high_bits": info.get("fileIdHighBits"),
        "file_id_low_bits": info.get("fileIdLowBits"),
        "file_index": info.get("fileIndex"),
        "file_id_string": info.get("fileId"),
        "instant_time": info.get("instantTime"),
        "file_id_encoding": info.get("fileIdEncoding", 0),
        "position": info.get("position"),
    }


def _secondary_row(record: dict[str, Any]) -> dict[str, Any] | None:
    info = record.get("SecondaryIndexMetadata")
    return None if info is None else {"is_deleted": bool(info.get("isDeleted"))}


_ROWS = {
    "files": _files_row,
    "column_stats": _column_stats_row,
    "partition_stats": _column_stats_row,
    "bloom_filters": _bloom_row,
    "record_index": _record_index_row,
    "secondary_index": _secondary_row,
}


# Kinds whose payload has only fixed fields: decoded column by column (``avro_columns``). Per raw
# column, the payload field it comes from (the first name the writer schema has), and a default.
_COLUMNAR: dict[str, tuple[str, dict[str, tuple[tuple[str, ...], Any]]]] = {
    "record_index": (
        "recordIndexMetadata",
        {
            "partition": (("partitionName", "partition"), None),
            "file_id_high_bits": (("fileIdHighBits",), None),
            "file_id_low_bits": (("fileIdLowBits",), None),
            "file_index": (("fileIndex",), None),
            "file_id_string": (("fileId",), None),
            "instant_time": (("instantTime",), None),
            "file_id_encoding": (("fileIdEncoding",), 0),
            "position": (("position",), None),
        },
    ),
    "secondary_index": ("SecondaryIndexMetadata", {"is_deleted": (("isDeleted",), False)}),
}


def _columnar_cells(kind: str, cells: Cells, first_seq: int) -> pa.Table | None:
    """The raw rows of one HFile's cells decoded column by column; None when they need the
    record-by-record decode (a type the columnar decoder does not read, a record without the
    payload, bytes that do not line up: that path names the problem)."""
    raw_schema = _RAW_SCHEMAS[kind]
    keys = cells.key_array
    n = len(keys)
    base = {
        "key": keys,
        "seq": pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)),
        "removed": pa.array(np.full(n, cells.value_array is None)),
    }
    values = cells.value_array
    if values is None or not n:
        columns = {f.name: pa.nulls(n, f.type) for f in raw_schema if f.name not in base}
        return pa.table({**base, **columns}, schema=raw_schema)
    try:
        decoded, data = decode_columns(_schema_dict(cells.schema, cells.where), values)
    except Unsupported:
        return None
    payload, fields = _COLUMNAR[kind]
    reached = [c.valid for path, c in decoded.items() if path[:1] == (payload,)]
    if not reached or not np.logical_or.reduce(reached).all():
        return None  # a record without the payload: the record-by-record path says which
    out = dict(base)
    for name, (sources, default) in fields.items():
        target = raw_schema.field(name).type
        column = next((decoded[(payload, s)] for s in sources if (payload, s) in decoded), None)
        if column is None:
            out[name] = pa.array([default] * n, target)
            continue
        array = column.to_arrow(data, target)
        out[name] = array if default is None else array.fill_null(pa.scalar(default, target))
    return pa.table(out, schema=raw_schema)


def _columnar_table(kind: str, sources: Sequence[Cells]) -> pa.Table | None:
    tables, seq = [], 0
    for cells in sources:
        table = _columnar_cells(kind, cells, seq)
        if table is None:
            return None
        tables.append(table)
        seq += table.num_rows
    return pa.concat_tables(tables) if tables else _RAW_SCHEMAS[kind].empty_table()


def raw_table(kind: str, sources: Sequence[Cells]) -> pa.Table:
    """The records of ``sources`` (in merge order: base file, then log blocks as written) as one
    table of ``kind``'s raw schema: ``seq`` is each record's place in that order, ``removed``
    marks a delete block's key (every earlier record of it is gone)."""
    if kind in _COLUMNAR:
        table = _columnar_table(kind, sources)
        if table is not None:
            return table
    return record_table(kind, sources)


def record_table(kind: str, sources: Sequence[Cells]) -> pa.Table:
    """``raw_table`` record by record (fastavro, one dict per record): every kind, and the
    errors that name the cell that does not decode."""
    schema = _RAW_SCHEMAS[kind]
    to_row = _ROWS[kind]
    rows: list[dict[str, Any]] = []
    for cells in sources:
        if cells.values is None:
            start = len(rows)
            rows.extend({"key": key, "seq": start + i, "removed": True} for i, key in enumerate(cells.keys))
            continue
        for record in decode_cells(cells):
            row = to_row(record)
            if row is None:
                raise MetadataTableError(
                    f"{cells.where}: record {record['key']!r} of type {record.get('type')} has no "
                    f"{kind} payload: the file is not of metadata partition {kind!r}"
                )
            row.update(key=record["key"], seq=len(rows), removed=False)
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)
