"""Hudi record keys, bit-exact with Hudi's key generators.

``RecordKeySpec`` turns a batch of key column values into the strings Hudi writes into
``_hoodie_record_key``, and reads a table's key setup from its ``.hoodie/hoodie.properties``.

What Hudi does (``KeyGenUtils``, ``KeyGenerator.constructRecordKey``, ``SimpleAvroKeyGenerator``,
``ComplexAvroKeyGenerator``, ``NonpartitionedAvroKeyGenerator``, ``CustomAvroKeyGenerator``,
``BuiltinKeyGenerator`` for Spark rows):

- simple: the value as text; a null or empty value is refused (``HoodieKeyException``);
- complex: ``f1:v1,f2:v2`` with ``__null__`` for a null and ``__empty__`` for an empty value,
  refused when every field is null or empty;
- ``NonpartitionedKeyGenerator`` and ``CustomKeyGenerator``: simple for one field, else complex;
  ``TimestampBasedKeyGenerator``: simple (it only changes the partition path);
- ``ComplexKeyGenerator`` with ONE field depends on the release that wrote the table (HUDI-7001):
  0.14.1, 0.15.0 and 1.0.0-1.0.2 wrote the bare value, every other release ``field:value``; from
  table version 9 on Hudi always writes ``field:value``.

Value text is Java's ``toString`` of what Hudi's Avro path holds: strings as is, integers in
decimal, booleans ``true``/``false``, dates (Avro ``date``: ``LocalDate``) as ``yyyy-MM-dd``,
decimals as ``BigDecimal.toString`` (plain, or scientific such as ``1.23E-8`` when the exponent is
below -6; Arrow's decimal-to-string cast follows the same rule). Types whose text cannot be
reproduced exactly (floats, timestamps, binary, nested) are refused: the caller can pass the
already-encoded key strings instead. All of it runs over whole arrays (pyarrow compute).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import RecordKeyError

if TYPE_CHECKING:
    from index_store.config import IndexConfig

__all__ = ["COMPLEX", "RECORD_KEY_META_FIELD", "SIMPLE", "UNKNOWN", "RecordKeySpec"]

RECORD_KEY_META_FIELD = "_hoodie_record_key"
SIMPLE = "simple"
COMPLEX = "complex"
UNKNOWN = "unknown"  # keys only from the stored column: the encoding cannot be known for sure
_GENERATORS = (SIMPLE, COMPLEX, UNKNOWN)

NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"

# Hudi's built-in key generators, by hoodie.table.keygenerator.class and .type
# (KeyGeneratorType): how each makes the record key.
_BY_TYPE = {
    "SIMPLE": "simple",
    "SIMPLE_AVRO": "simple",
    "TIMESTAMP": "simple",
    "TIMESTAMP_AVRO": "simple",
    "COMPLEX": "complex",
    "COMPLEX_AVRO": "complex",
    "NON_PARTITION": "by_count",
    "NON_PARTITION_AVRO": "by_count",
    "CUSTOM": "by_count",
    "CUSTOM_AVRO": "by_count",
    "GLOBAL_DELETE": "prefixed",
    "GLOBAL_DELETE_AVRO": "prefixed",
    "HOODIE_TABLE_METADATA": "simple",  # the metadata table's: its records' "key" field, verbatim
}
_CLASS_TYPES = {
    "org.apache.hudi.keygen.SimpleKeyGenerator": "SIMPLE",
    "org.apache.hudi.keygen.SimpleAvroKeyGenerator": "SIMPLE_AVRO",
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator": "TIMESTAMP",
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator": "TIMESTAMP_AVRO",
    "org.apache.hudi.keygen.ComplexKeyGenerator": "COMPLEX",
    "org.apache.hudi.keygen.ComplexAvroKeyGenerator": "COMPLEX_AVRO",
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator": "NON_PARTITION",
    "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator": "NON_PARTITION_AVRO",
    "org.apache.hudi.keygen.CustomKeyGenerator": "CUSTOM",
    "org.apache.hudi.keygen.CustomAvroKeyGenerator": "CUSTOM_AVRO",
    "org.apache.hudi.keygen.GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    "org.apache.hudi.keygen.GlobalAvroDeleteKeyGenerator": "GLOBAL_DELETE_AVRO",
    "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator": "HOODIE_TABLE_METADATA",
}
# Where a table records the single-field ComplexKeyGenerator encoding (FIELD_PREFIXED or
# VALUE_ONLY); proposed for Hudi (apache/hudi#19304) under either name, authoritative when present.
_ENCODING_PROPS = ("hoodie.table.complex.keygen.encoding", "hoodie.table.complex.keygenerator.encoding")

# LocalDate.toString prints years above 9999 with a '+' (Arrow does not): dates are kept to
# 0001-01-01 .. 9999-12-31, in days since 1970-01-01.
_MIN_DAY, _MAX_DAY = -719162, 2932896


@dataclass(frozen=True)
class RecordKeySpec:
    """How a table's record keys are made."""

    fields: tuple[str, ...]  # key generator fields (data columns), in order
    column: str | None = None  # column in the data files holding the encoded key, if files store it
    # "simple" (one field: the value as text), "complex" ("f1:v1,f2:v2"), or "unknown" (the key
    # can only be read from ``column``; ``detail`` says why)
    generator: str = SIMPLE
    detail: str = ""

    def __post_init__(self) -> None:
        if self.generator not in _GENERATORS:
            raise RecordKeyError(f"unknown key generator {self.generator!r}: use one of {list(_GENERATORS)}")
        if self.generator == SIMPLE and len(self.fields) > 1:
            raise RecordKeyError(
                f"a simple record key has one field, got {list(self.fields)}: use generator='complex'"
            )

    @classmethod
    def from_hudi_properties(
        cls, properties: Mapping[str, str], file_schema: pa.Schema | None
    ) -> RecordKeySpec | None:
        """From the table's own ``.hoodie/hoodie.properties`` (recordkey fields, key generator
        class/type, populate.meta.fields) and a base file's schema (does it have
        ``_hoodie_record_key``?). None when the table declares no record key fields (and has no
        meta column)."""
        fields = tuple(
            f.strip() for f in properties.get("hoodie.table.recordkey.fields", "").split(",") if f.strip()
        )
        populated = properties.get("hoodie.populate.meta.fields", "true").strip().lower() != "false"
        stored = populated and (file_schema is None or RECORD_KEY_META_FIELD in file_schema.names)
        column = RECORD_KEY_META_FIELD if stored else None
        if not fields:
            if column is None:
                return None
            return cls(
                (), column, UNKNOWN, "the table declares no record key fields: Hudi generated its keys"
            )
        generator, detail = _hudi_generator(properties, fields)
        return cls(fields, column, generator, detail)

    @classmethod
    def from_config(cls, config: IndexConfig) -> RecordKeySpec | None:
        """The record key an index was built with (None: built without key information)."""
        if not config.key_fields and config.key_column is None:
            return None
        return cls(config.key_fields, config.key_column, config.key_generator or SIMPLE)

    @property
    def read_columns(self) -> tuple[str, ...]:
        """What to read from a data file to get its keys: (column,) when files store the key,
        else the fields."""
        return (self.column,) if self.column is not None else self.fields

    def encode(self, table: pa.Table | pa.RecordBatch) -> pa.StringArray:
        """The Hudi record key of each row from the key fields, vectorized (pyarrow compute; no
        per-row Python loop)."""
        if self.generator == UNKNOWN or not self.fields:
            why = self.detail or "the key generator's encoding is not known"
            raise RecordKeyError(
                f"cannot encode record keys from the fields {list(self.fields)}: {why}. Pass the record "
                f"key strings as Hudi wrote them ({self.column or RECORD_KEY_META_FIELD}) instead"
            )
        n = table.num_rows
        texts = [_value_text(_column(table, f), f) for f in self.fields]
        if self.generator == SIMPLE:
            (field,), (text,) = self.fields, texts
            _refuse(text.null_count, f"record key field {field!r} is null", n)
            _refuse(_count(pc.equal(pc.binary_length(text), 0)), f"record key field {field!r} is empty", n)
            return text
        args: list[pa.Array | pa.Scalar] = []
        present = None
        for i, (field, text) in enumerate(zip(self.fields, texts, strict=True)):
            non_empty = pc.fill_null(pc.greater(pc.binary_length(text), 0), False)
            part = pc.if_else(
                non_empty, text, pc.if_else(pc.is_null(text), NULL_PLACEHOLDER, EMPTY_PLACEHOLDER)
            )
            args += [pa.scalar(("," if i else "") + field + ":", pa.string()), part]
            present = non_empty if present is None else pc.or_(present, non_empty)
        _refuse(n - _count(present), f"all record key fields {list(self.fields)} are null or empty", n)
        return _as_string(pc.binary_join_element_wise(*args, ""))

    def leading_integers(self, keys: pa.Array) -> tuple[pa.Array, pa.Array]:
        """The value of the first key field, as int64, read back from each key when it is an
        integer (``(values, decoded)``; not decoded: the key is not the text of an integer there).

        Exact where decoded: an integer's text has no ``,`` and ``encode`` writes the first field
        first (``f1:<digits>,...``, or the whole key for a simple key), so a row whose key equals
        the given one has exactly this value; tagging prunes files with the field's min/max."""
        text = keys.cast(pa.string())
        if self.generator == SIMPLE:
            pattern = r"^(-?[0-9]{1,18})$"
        elif self.generator == COMPLEX and self.fields:
            pattern = "^" + re.escape(self.fields[0] + ":") + r"(-?[0-9]{1,18}),"
        else:
            return pa.nulls(len(keys), pa.int64()), pa.array([False] * len(keys))
        extracted = pc.extract_regex(text, pattern=pattern.replace("(", "(?P<v>", 1))
        values = pc.struct_field(extracted, "v").cast(pa.int64())
        return values, pc.is_valid(extracted)

    def keys_of(self, table: pa.Table | pa.RecordBatch) -> pa.StringArray:
        """Keys of rows read from a data file: the stored column as is when there is one, else
        encode()."""
        if self.column is None:
            return self.encode(table)
        keys = _column(table, self.column)
        if pa.types.is_dictionary(keys.type):
            keys = keys.dictionary_decode()
        if not _is_string(keys.type):
            raise RecordKeyError(f"stored record key column {self.column!r} holds {keys.type}, not strings")
        _refuse(
            keys.null_count,
            f"stored record key column {self.column!r} is null",
            len(keys),
            "a table with hoodie.populate.meta.fields=false stores no keys: read them from the fields",
        )
        return _as_string(keys)


def _hudi_generator(properties: Mapping[str, str], fields: tuple[str, ...]) -> tuple[str, str]:
    """(generator, detail) of a table's declared key generator, as Hudi encodes its keys."""
    class_name = properties.get("hoodie.table.keygenerator.class", "").strip()
    type_name = properties.get("hoodie.table.keygenerator.type", "").strip().upper()
    if class_name:  # Hudi prefers the class when both are set (KeyGeneratorType.getKeyGeneratorClassName)
        type_name = _CLASS_TYPES.get(class_name, "")
        declared = class_name
    else:
        declared = type_name
    if not declared:
        if len(fields) > 1:  # every built-in generator that takes several fields writes f1:v1,f2:v2
            return COMPLEX, ""
        return UNKNOWN, (
            "the table does not record its key generator (hoodie.table.keygenerator.class/.type), "
            "and a single-field key is the bare value or 'field:value' depending on it"
        )
    kind = _BY_TYPE.get(type_name)
    if kind is None:
        return UNKNOWN, f"its key generator {declared} is not one of Hudi's built-in ones"
    if kind == "simple":
        if len(fields) > 1:
            return UNKNOWN, f"its key generator {declared} takes one record key field, not {list(fields)}"
        return SIMPLE, ""
    if kind == "by_count" or len(fields) > 1:
        return (SIMPLE if len(fields) == 1 else COMPLEX), ""
    if kind == "prefixed":
        return COMPLEX, ""
    return _single_field_complex(properties, fields[0], declared)


def _single_field_complex(properties: Mapping[str, str], field: str, declared: str) -> tuple[str, str]:
    """A ComplexKeyGenerator with one field (HUDI-7001): ``field:value`` or the bare value."""
    for prop in _ENCODING_PROPS:
        recorded = properties.get(prop, "").strip().upper()
        if recorded == "FIELD_PREFIXED":
            return COMPLEX, ""
        if recorded == "VALUE_ONLY":
            return SIMPLE, ""
    if (
        _version(properties, "hoodie.table.version") >= 9
        and _version(properties, "hoodie.table.initial.version") >= 9
    ):
        return COMPLEX, ""  # created at version 9+: only Hudi 1.1+ wrote it, always field:value
    return UNKNOWN, (
        f"its key generator {declared} has the single field {field!r} and the table was created "
        f"before table version 9: Hudi 0.14.1, 0.15.0 and 1.0.0-1.0.2 wrote the bare value, other "
        f"releases '{field}:value' (HUDI-7001)"
    )


def _version(properties: Mapping[str, str], key: str) -> int:
    try:
        return int(properties.get(key, "0").strip())
    except ValueError:
        return 0


def _column(table: pa.Table | pa.RecordBatch, name: str) -> pa.Array:
    """One column as a single array; RecordKeyError naming the columns there are when missing."""
    names = table.schema.names
    if names.count(name) != 1:
        nested = " (nested key fields are not supported: pass the encoded keys)" if "." in name else ""
        what = "is not a column" if name not in names else "is more than one column"
        raise RecordKeyError(
            f"record key field {name!r} {what} of the table{nested}; its columns are {names}"
        )
    column = table.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _value_text(values: pa.Array, field: str) -> pa.Array:
    """Java's toString of each value as Hudi's Avro path holds it (null stays null)."""
    kind = values.type
    if pa.types.is_dictionary(kind):
        return _value_text(values.dictionary_decode(), field)
    if _is_string(kind):
        return _as_string(values)
    if pa.types.is_null(kind):
        return pa.nulls(len(values), pa.string())
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_decimal(kind):
        # Arrow prints decimals exactly as BigDecimal.toString (scientific below exponent -6)
        return _as_string(values)
    if pa.types.is_date(kind):
        try:
            days = values.cast(pa.date32()).cast(pa.int32())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise RecordKeyError(f"record key field {field!r} has dates that are not whole days: {e}") from e
        low, high = pc.min_max(days).values()
        if low.is_valid and (low.as_py() < _MIN_DAY or high.as_py() > _MAX_DAY):
            raise RecordKeyError(
                f"record key field {field!r} has dates outside 0001-01-01..9999-12-31, which Java prints "
                "differently: pass the encoded record key strings instead"
            )
        return _as_string(days.cast(pa.date32()))
    raise RecordKeyError(
        f"record key field {field!r} has type {kind}, which is not supported for key encoding "
        f"({_why_unsupported(kind)}): pass the already-encoded record key strings instead"
    )


def _why_unsupported(kind: pa.DataType) -> str:
    if pa.types.is_floating(kind):
        return "Java prints it with Float/Double.toString"
    if pa.types.is_timestamp(kind) or pa.types.is_time(kind) or pa.types.is_duration(kind):
        return "Hudi's text for it depends on the write path and its settings"
    if pa.types.is_nested(kind):
        return "a nested value"
    return "its text in Hudi cannot be reproduced exactly"


def _is_string(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def _as_string(values: pa.Array) -> pa.StringArray:
    return values if values.type == pa.string() else values.cast(pa.string())


def _count(mask: pa.Array) -> int:
    """How many entries of a boolean array are true."""
    return int(pc.sum(mask).as_py() or 0)


def _refuse(bad: int, what: str, n: int, why: str = "Hudi refuses such a record key") -> None:
    """RecordKeyError when ``bad`` of ``n`` rows break a rule (by default one Hudi enforces)."""
    if bad:
        raise RecordKeyError(f"{what} in {bad} of {n} rows: {why}")
