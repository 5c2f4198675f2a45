"""The content of a delete block (``HoodieDeleteBlock``), both ways: an int content version, an
int length, then the deleted records. Version 3 (Hudi 0.11 on) writes them as one Avro
``HoodieDeleteRecordList``: an array of (record key, partition path, ordering value), the ordering
value a union of one-field wrapper records (``IntWrapper``, ``LongWrapper``, ...) so its type
survives. Versions 1 and 2 hold Java-serialized objects (Kryo), which only a JVM reads.

The deleted records come as an Arrow table: ``record_key``, ``partition_path``,
``ordering_value`` (typed by the wrappers) and ``ordering_wrapper`` (each value's wrapper name,
so a block re-encodes to its own bytes even when its values mix wrappers)."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa

from index_store.hudi_log.format import CONTENT_VERSION, INT

__all__ = ["DELETE_COLUMNS", "DeleteContentError", "decode_delete_content", "encode_delete_content"]

DELETE_COLUMNS = ("record_key", "partition_path", "ordering_value", "ordering_wrapper")
_NAMESPACE = "org.apache.hudi.avro.model"


class DeleteContentError(ValueError):
    """A delete block whose content does not decode."""


class UnsupportedDeleteContent(DeleteContentError):
    """A delete block of a version or with ordering values not read here."""


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": "value", "type": value_type}]}


# The union branches of orderingVal in Hudi's HoodieDeleteRecord.avsc, in its order (union
# indexes are what the bytes hold), each with the Arrow type its value becomes. Temporal values
# are read as their integers; the Arrow cast gives them their type.
_WRAPPERS: tuple[tuple[str, Any, pa.DataType], ...] = (
    ("BooleanWrapper", "boolean", pa.bool_()),
    ("IntWrapper", "int", pa.int32()),
    ("LongWrapper", "long", pa.int64()),
    ("FloatWrapper", "float", pa.float32()),
    ("DoubleWrapper", "double", pa.float64()),
    ("BytesWrapper", "bytes", pa.binary()),
    ("StringWrapper", "string", pa.string()),
    ("DateWrapper", "int", pa.date32()),
    (
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        pa.decimal128(30, 15),
    ),
    ("TimeMicrosWrapper", "long", pa.time64("us")),
    ("TimestampMicrosWrapper", "long", pa.timestamp("us", tz="UTC")),
)
_ARROW_OF = {name: arrow for name, _, arrow in _WRAPPERS}
# the Arrow type fastavro's value builds (the integers of temporal values)
_PHYSICAL_ARROW = {
    name: (pa.int32() if physical == "int" else pa.int64() if physical == "long" else arrow)
    for name, physical, arrow in _WRAPPERS
}
# Hudi 1.1 appended ArrayWrapper (several ordering fields): its items add LocalDateWrapper.
_ITEM_BRANCHES: list[Any] = ["null", *(f"{_NAMESPACE}.{n}" for n, _, _ in _WRAPPERS)]
_ITEM_BRANCHES.append(_wrapper("LocalDateWrapper", "int"))
_ARRAY_WRAPPER = {
    "type": "record",
    "name": "ArrayWrapper",
    "fields": [{"name": "wrappedValues", "type": ["null", {"type": "array", "items": _ITEM_BRANCHES}]}],
}
_SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": _NAMESPACE,
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"]},
                            {"name": "partitionPath", "type": ["null", "string"]},
                            {
                                "name": "orderingVal",
                                "type": [
                                    "null",
                                    *(_wrapper(n, physical) for n, physical, _ in _WRAPPERS),
                                    _ARRAY_WRAPPER,
                                ],
                            },
                        ],
                    },
                },
            }
        ],
    }
)
_INTEGERS = {"IntWrapper", "LongWrapper"}
_NUMBERS = _INTEGERS | {"FloatWrapper", "DoubleWrapper"}


def decode_delete_content(content: bytes) -> pa.Table:
    """The records a delete block deletes (columns ``DELETE_COLUMNS``)."""
    if len(content) < 2 * INT.size:
        raise DeleteContentError(f"{len(content)} bytes of content, fewer than its version and length")
    version, length = INT.unpack_from(content, 0)[0], INT.unpack_from(content, INT.size)[0]
    if version in (1, 2):
        raise UnsupportedDeleteContent(
            f"delete block version {version} holds Java-serialized (Kryo) keys, written by Hudi before "
            "0.11; compact the file group with Hudi so the deletes reach its base file"
        )
    if version != CONTENT_VERSION:
        raise DeleteContentError(f"delete block version {version}, not 1 to {CONTENT_VERSION}")
    if length != len(content) - 2 * INT.size:
        raise DeleteContentError(f"its length says {length} bytes, {len(content) - 2 * INT.size} follow")
    stream = io.BytesIO(content[2 * INT.size :])
    try:
        decoded = fastavro.schemaless_reader(stream, _SCHEMA, None, return_record_name=True)
    except Exception as exc:  # fastavro raises EOFError, ValueError, ... on bytes off the schema
        raise DeleteContentError(f"the deleted records do not decode: {exc}") from exc
    if stream.tell() != length or not isinstance(decoded, dict):
        raise DeleteContentError("the deleted records do not fill the block's length")
    records = decoded["deleteRecordList"]
    wrappers: list[str | None] = []
    values: list[Any] = []
    for record in records:  # one pass to unpack the union (name, value) pairs
        ordering = record["orderingVal"]
        if ordering is None:
            wrappers.append(None)
            values.append(None)
            continue
        name, wrapped = ordering
        wrappers.append(name.rsplit(".", 1)[-1])
        values.append(wrapped.get("value"))
    return pa.table(
        {
            "record_key": pa.array([r["recordKey"] for r in records], pa.string()),
            "partition_path": pa.array([r["partitionPath"] for r in records], pa.string()),
            "ordering_value": _ordering_values(values, wrappers),
            "ordering_wrapper": pa.array(wrappers, pa.string()),
        }
    )


def encode_delete_content(deletes: pa.Table, version: int = CONTENT_VERSION) -> bytes:
    """A delete block's content (version 3) from a table of ``record_key``, ``partition_path``
    and optionally ``ordering_value`` and ``ordering_wrapper`` (by default the wrapper of the
    ordering column's type; a null value writes no ordering value)."""
    if version != CONTENT_VERSION:
        raise UnsupportedDeleteContent(
            f"only delete block version {CONTENT_VERSION} is written, not {version}"
        )
    n = deletes.num_rows
    keys = _column(deletes, "record_key", pa.nulls(n, pa.string()))
    partitions = _column(deletes, "partition_path", pa.nulls(n, pa.string()))
    ordering = _column(deletes, "ordering_value", pa.nulls(n))
    if "ordering_wrapper" in deletes.column_names:
        wrappers = _column(deletes, "ordering_wrapper", pa.nulls(n, pa.string())).to_pylist()
    else:
        wrappers = [_wrapper_of(ordering.type)] * n
    physical = _physical(ordering).to_pylist()
    records = [
        {
            "recordKey": key,
            "partitionPath": partition,
            "orderingVal": _wrapped(value, name),
        }
        for key, partition, value, name in zip(
            keys.to_pylist(), partitions.to_pylist(), physical, wrappers, strict=True
        )
    ]
    stream = io.BytesIO()
    fastavro.schemaless_writer(stream, _SCHEMA, {"deleteRecordList": records})
    data = stream.getvalue()
    return INT.pack(version) + INT.pack(len(data)) + data


def _wrapped(value: Any, name: str | None) -> tuple[str, dict[str, Any]] | None:
    """An ordering value in its union branch (fastavro's (record name, record) notation)."""
    if value is None or name is None:
        return None
    if name in _INTEGERS and isinstance(value, float):  # an integer widened to float64 on read
        value = int(value)
    return f"{_NAMESPACE}.{name}", {"value": value}


def _ordering_values(values: list[Any], wrappers: list[str | None]) -> pa.Array:
    """One typed column for the ordering values of a block; integer wrappers mixed (Hudi's
    Integer 0 beside longs) widen to int64, numbers to float64."""
    names = {w for w in wrappers if w is not None}
    if "ArrayWrapper" in names:
        raise UnsupportedDeleteContent(
            "ordering values of several fields (ArrayWrapper, hoodie.table.ordering.fields with more than "
            "one field) are not read here yet"
        )
    if not names:
        return pa.nulls(len(values))
    if len(names) == 1:
        (name,) = names
        return pa.array(values, _PHYSICAL_ARROW[name]).cast(_ARROW_OF[name])
    if names <= _INTEGERS:
        return pa.array(values, pa.int64())
    if names <= _NUMBERS:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    raise UnsupportedDeleteContent(f"one delete block mixes ordering values of types {sorted(names)}")


def _wrapper_of(kind: pa.DataType) -> str | None:
    """The wrapper Hudi puts a value of an Arrow type in (None: no ordering value)."""
    if pa.types.is_null(kind):
        return None
    for name, arrow in _ARROW_OF.items():
        if arrow == kind:
            return name
    if pa.types.is_timestamp(kind):
        return "TimestampMicrosWrapper"
    if pa.types.is_decimal(kind):
        return "DecimalWrapper"
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return "StringWrapper"
    raise UnsupportedDeleteContent(f"Hudi has no ordering value wrapper for Arrow type {kind}")


def _physical(ordering: pa.Array) -> pa.Array:
    """Ordering values as fastavro writes them (temporal ones as integers, in the wrappers' units)."""
    kind = ordering.type
    if pa.types.is_timestamp(kind):
        return ordering.cast(pa.timestamp("us", tz=kind.tz)).cast(pa.int64())
    if pa.types.is_date(kind):
        return ordering.cast(pa.date32()).cast(pa.int32())
    if pa.types.is_time(kind):
        return ordering.cast(pa.time64("us")).cast(pa.int64())
    if pa.types.is_decimal(kind):
        return ordering.cast(pa.decimal128(30, 15))
    return ordering


def _column(table: pa.Table, name: str, default: pa.Array) -> pa.Array:
    if name not in table.column_names:
        return default
    return table.column(name).combine_chunks()
