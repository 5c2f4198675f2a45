"""An Avro schema (a data block's ``SCHEMA`` header) as Arrow types, and the form fastavro reads
and writes it in.

Dates, times and timestamps are read as the integers they are stored as (their logical types
dropped from the schema fastavro gets: the bytes are the same) and become Arrow temporal types by
a cast of whole columns, exact and without a Python object per value; decimals stay fastavro's
(``Decimal``), uuid strings plain strings. The mapping follows Spark's (``timestamp-micros`` is a
UTC instant, ``local-timestamp-*`` a naive one), as the base files Hudi writes beside the logs.

A union of several records (Hudi's metadata records: a column's min and max are one of a dozen
wrapper records) has an Arrow column only when asked (``record_unions``): a struct with a field per
branch, named by the record's short name, only the branch written set."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import fastavro
import pyarrow as pa

__all__ = ["AvroArrow", "UnsupportedAvroSchema", "avro_arrow"]

_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
# logical types read as their stored integer, then cast to the Arrow type
_TEMPORAL = {
    "date": pa.date32(),
    "time-millis": pa.time32("ms"),
    "time-micros": pa.time64("us"),
    "timestamp-millis": pa.timestamp("ms", tz="UTC"),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "timestamp-nanos": pa.timestamp("ns", tz="UTC"),
    "local-timestamp-millis": pa.timestamp("ms"),
    "local-timestamp-micros": pa.timestamp("us"),
    "local-timestamp-nanos": pa.timestamp("ns"),
}


class UnsupportedAvroSchema(ValueError):
    """An Avro schema with a construct that has no Arrow column here (a union of several
    non-null types, a top-level type other than a record)."""


@dataclass(frozen=True)
class AvroArrow:
    """One Avro record schema, ready for fastavro and Arrow."""

    fastavro_schema: Any  # parsed, temporal logical types dropped (what fastavro reads and writes)
    array_schema: Any  # the same, as the items of an array (a whole block in one call)
    physical: pa.Schema  # the Arrow types of fastavro's values (temporal columns as integers)
    logical: pa.Schema  # the records' Arrow schema
    has_maps: bool  # Arrow gives maps as (key, value) pairs, fastavro wants dicts
    has_record_unions: bool = False  # fastavro must name the branch it read (see ``record_unions``)


@lru_cache(maxsize=128)
def avro_arrow(schema_json: str, record_unions: bool = False) -> AvroArrow:
    """The Arrow view of an Avro record schema (cached: every block of a file carries the same);
    ``record_unions``: unions of several records become structs of their branches."""
    try:
        schema = json.loads(schema_json)
    except json.JSONDecodeError as exc:
        raise UnsupportedAvroSchema(f"the schema is not JSON: {exc}") from exc
    if not isinstance(schema, Mapping) or schema.get("type") != "record":
        raise UnsupportedAvroSchema("the schema of a data block must be an Avro record")
    converter = _Converter(record_unions)
    stripped, physical, logical, _ = converter.convert(schema, schema.get("namespace", ""))
    physical_schema, logical_schema = pa.schema(list(physical)), pa.schema(list(logical))
    try:
        parsed = fastavro.parse_schema(stripped)
        parsed_array = fastavro.parse_schema({"type": "array", "items": stripped})
    except Exception as exc:  # fastavro raises its own SchemaParseException and others
        raise UnsupportedAvroSchema(f"fastavro cannot parse the schema: {exc}") from exc
    return AvroArrow(
        parsed, parsed_array, physical_schema, logical_schema, converter.has_maps, converter.has_record_unions
    )


class _Converter:
    """Walks an Avro schema once: the stripped schema, and physical and logical Arrow types."""

    def __init__(self, record_unions: bool = False) -> None:
        self.named: dict[str, tuple[pa.DataType, pa.DataType, bool]] = {}
        self.has_maps = False
        self.record_unions = record_unions
        self.has_record_unions = False

    def convert(self, node: Any, namespace: str) -> tuple[Any, Any, Any, bool]:
        """``(stripped node, physical Arrow type, logical Arrow type, nullable)``."""
        if isinstance(node, str):
            if node in _PRIMITIVES:
                return node, _PRIMITIVES[node], _PRIMITIVES[node], node == "null"
            found = self.named.get(node) or self.named.get(f"{namespace}.{node}" if namespace else node)
            if found is None:
                raise UnsupportedAvroSchema(f"unknown Avro type name {node!r}")
            return node, found[0], found[1], found[2]
        if isinstance(node, list):
            return self._union(node, namespace)
        if not isinstance(node, Mapping):
            raise UnsupportedAvroSchema(f"not an Avro type: {node!r}")
        kind, logical_type = node.get("type"), node.get("logicalType")
        if logical_type in _TEMPORAL and kind in ("int", "long"):
            return kind, _PRIMITIVES[kind], _TEMPORAL[logical_type], False
        if logical_type == "uuid" and kind == "string":
            return "string", pa.string(), pa.string(), False
        if kind == "record":
            return self._record(node, namespace)
        if kind == "enum":
            self._name(node, namespace, pa.string(), pa.string())
            return dict(node), pa.string(), pa.string(), False
        if kind == "fixed" or (kind == "bytes" and logical_type == "decimal"):
            arrow = self._bytes_type(node)
            if kind == "fixed":
                self._name(node, namespace, arrow, arrow)
            return dict(node), arrow, arrow, False
        if kind == "array":
            items, phys, logi, nullable = self.convert(node["items"], namespace)
            return (
                {**node, "items": items},
                pa.list_(pa.field("element", phys, nullable)),
                pa.list_(pa.field("element", logi, nullable)),
                False,
            )
        if kind == "map":
            self.has_maps = True
            values, phys, logi, nullable = self.convert(node["values"], namespace)
            return (
                {**node, "values": values},
                pa.map_(pa.string(), pa.field("value", phys, nullable)),
                pa.map_(pa.string(), pa.field("value", logi, nullable)),
                False,
            )
        # {"type": "string"} and the like (a logical type unknown here reads as its base type)
        return self.convert(kind, namespace)

    def _union(self, branches: list[Any], namespace: str) -> tuple[Any, Any, Any, bool]:
        converted = [self.convert(b, namespace) for b in branches]
        non_null = [c for c in converted if not pa.types.is_null(c[1])]
        names = [_short_name(b) for b in branches if b != "null"]
        if (
            len(non_null) > 1
            and self.record_unions
            and all(pa.types.is_struct(c[1]) for c in non_null)
            and len(set(names)) == len(names)
            and all(names)
        ):
            # A struct of the branches: fastavro names the one it read, and only that field is set.
            self.has_record_unions = True
            physical = pa.struct([pa.field(n, c[1]) for n, c in zip(names, non_null, strict=True)])
            logical = pa.struct([pa.field(n, c[2]) for n, c in zip(names, non_null, strict=True)])
            return [c[0] for c in converted], physical, logical, True
        if len(non_null) > 1:
            raise UnsupportedAvroSchema(
                f"a union of several non-null types ({branches}) has no Arrow column here"
            )
        stripped = [c[0] for c in converted]
        if not non_null:
            return stripped, pa.null(), pa.null(), True
        _, phys, logi, _ = non_null[0]
        return stripped, phys, logi, len(converted) > 1

    def _record(self, node: Mapping[str, Any], namespace: str) -> tuple[Any, Any, Any, bool]:
        space = node.get("namespace", namespace)
        fullname = self._fullname(node, namespace)
        fields, physical, logical = [], [], []
        for f in node.get("fields", ()):
            stripped, phys, logi, nullable = self.convert(f["type"], space)
            fields.append({**f, "type": stripped})
            physical.append(pa.field(f["name"], phys, nullable))
            logical.append(pa.field(f["name"], logi, nullable))
        self.named[fullname] = (pa.struct(physical), pa.struct(logical), False)
        return {**node, "fields": fields}, pa.struct(physical), pa.struct(logical), False

    def _bytes_type(self, node: Mapping[str, Any]) -> pa.DataType:
        if node.get("logicalType") == "decimal":
            precision, scale = int(node["precision"]), int(node.get("scale", 0))
            return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        return pa.binary(int(node["size"])) if node.get("type") == "fixed" else pa.binary()

    def _name(self, node: Mapping[str, Any], namespace: str, phys: pa.DataType, logi: pa.DataType) -> None:
        self.named[self._fullname(node, namespace)] = (phys, logi, False)

    @staticmethod
    def _fullname(node: Mapping[str, Any], namespace: str) -> str:
        name = str(node["name"])
        if "." in name:
            return name
        space = node.get("namespace", namespace)
        return f"{space}.{name}" if space else name


def _short_name(branch: Any) -> str:
    """A union branch's name without its namespace ("" for an unnamed type)."""
    name = (
        branch if isinstance(branch, str) else branch.get("name", "") if isinstance(branch, Mapping) else ""
    )
    return str(name).rsplit(".", 1)[-1]
