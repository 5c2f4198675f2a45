"""Metadata records decoded and merged: every kind of column statistics bound to its exact Arrow
type, Hudi's files-partition merge, and records that do not decode. Values are Avro-encoded
against the real tables' own HoodieMetadataRecord schema."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi_metadata_writer import column_stats_record, encode, writer_schema

from index_store.errors import MetadataTableError
from index_store.hudi_metadata import Cells, raw_table
from index_store.hudi_metadata.partitions import files_table, stats_table


@pytest.fixture(scope="module")
def schema(hudi_tables: dict[str, Path]) -> str:
    return writer_schema(hudi_tables["v9_txns_simple_meta"])


def _cells(records: list[dict[str, Any]], schema: str) -> Cells:
    keys, values = encode(records, schema)
    return Cells([k.decode() for k in keys], values, schema, "test")


def _bounds(schema: str, cases: dict[str, tuple[Any, ...]], target: pa.Schema | None) -> dict[str, Any]:
    records = [
        column_stats_record(f"k-{column}", "f.parquet", column, lo, hi, value_type=vt, type_info=info)
        for column, (lo, hi, vt, info) in cases.items()
    ]
    table = stats_table(raw_table("column_stats", [_cells(records, schema)]), target, None)
    row = table.to_pylist()[0]
    out = {c: (row[c]["min"], row[c]["max"], table.schema.field(c).type.field("min").type) for c in cases}
    return out


def test_every_kind_maps_to_the_columns_exact_type(schema: str) -> None:
    unscaled = (-1234).to_bytes(2, "big", signed=True)
    cases = {
        "v1_date": (("DateWrapper", 19737), ("DateWrapper", 19738), None, None),
        "v1_decimal": (
            ("DecimalWrapper", Decimal("12.34")),
            ("DecimalWrapper", Decimal("99.99")),
            None,
            None,
        ),
        "v1_ts": (("TimestampMicrosWrapper", 1_700_000_000_000_001),) * 2 + (None, None),
        "v1_ntz": (("TimestampMicrosWrapper", 1_700_000_000_000_001),) * 2 + (None, None),
        "small": (("IntWrapper", -3), ("IntWrapper", 120), 3, None),
        "f32": (("FloatWrapper", 0.5), ("FloatWrapper", 1.25), 5, None),
        "flag": (("BooleanWrapper", False), ("BooleanWrapper", True), 2, None),
        "text": (("StringWrapper", "a"), ("StringWrapper", "zé"), 7, None),
        "blob": (("BytesWrapper", b"\x00"), ("BytesWrapper", b"\xff"), 8, None),
        "v2_decimal": (("BytesWrapper", unscaled), ("BytesWrapper", (5).to_bytes(1, "big")), 10, "10,2"),
        "v2_date": (("IntWrapper", 0), ("IntWrapper", 19737), 12, None),
        "v2_time": (("IntWrapper", 1000), ("IntWrapper", 2000), 13, None),
        "v2_ts_ms": (("LongWrapper", 1_700_000_000_123), ("LongWrapper", 1_700_000_000_124), 15, None),
        "v2_local_us": (("LongWrapper", 5), ("LongWrapper", 6), 19, None),
        "v2_ts_ns": (("LongWrapper", 7000), ("LongWrapper", 8000), 17, None),
    }
    target = pa.schema(
        [
            ("v1_date", pa.date32()),
            ("v1_decimal", pa.decimal128(10, 2)),
            ("v1_ts", pa.timestamp("us", tz="UTC")),
            ("v1_ntz", pa.timestamp("us")),
            ("small", pa.int8()),
            ("f32", pa.float32()),
            ("flag", pa.bool_()),
            ("text", pa.string()),
            ("blob", pa.binary()),
            ("v2_decimal", pa.decimal128(10, 2)),
            ("v2_date", pa.date32()),
            ("v2_time", pa.time32("ms")),
            ("v2_ts_ms", pa.timestamp("us", tz="UTC")),
            ("v2_local_us", pa.timestamp("us")),
            ("v2_ts_ns", pa.timestamp("ns", tz="UTC")),
        ]
    )
    got = _bounds(schema, cases, target)
    for field in target:
        assert got[field.name][2] == field.type, field.name
    utc = dt.UTC
    assert got["v1_date"][:2] == (dt.date(2024, 1, 15), dt.date(2024, 1, 16))
    assert got["v1_decimal"][:2] == (Decimal("12.34"), Decimal("99.99"))
    assert got["v1_ts"][0] == dt.datetime(2023, 11, 14, 22, 13, 20, 1, tzinfo=utc)
    assert got["v1_ntz"][0] == dt.datetime(2023, 11, 14, 22, 13, 20, 1)  # wall clock kept
    assert got["small"][:2] == (-3, 120)
    assert got["f32"][:2] == (0.5, 1.25)
    assert got["flag"][:2] == (False, True)
    assert got["text"][:2] == ("a", "zé")
    assert got["blob"][:2] == (b"\x00", b"\xff")
    assert got["v2_decimal"][:2] == (Decimal("-12.34"), Decimal("0.05"))
    assert got["v2_date"][:2] == (dt.date(1970, 1, 1), dt.date(2024, 1, 15))
    assert got["v2_time"][:2] == (dt.time(0, 0, 1), dt.time(0, 0, 2))
    assert got["v2_ts_ms"][0] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=utc)
    assert got["v2_local_us"][0] == dt.datetime(1970, 1, 1, 0, 0, 0, 5)
    assert got["v2_ts_ns"][0] == dt.datetime(1970, 1, 1, 0, 0, 0, 7, tzinfo=utc)


def test_natural_types_without_a_schema(schema: str) -> None:
    got = _bounds(
        schema,
        {
            "d": (("DateWrapper", 1), ("DateWrapper", 2), None, None),
            "n": (("BytesWrapper", (123).to_bytes(1, "big")),) * 2 + (10, "5,1"),
            "l": (("LongWrapper", 1), ("LongWrapper", 2), 19, None),
        },
        None,
    )
    assert got["d"][2] == pa.date32()
    assert got["n"][2] == pa.decimal128(5, 1) and got["n"][0] == Decimal("12.3")
    assert got["l"][2] == pa.timestamp("us")


@pytest.mark.parametrize(
    ("bound", "target"),
    [
        (("DecimalWrapper", Decimal("12.345")), pa.decimal128(10, 2)),  # would round
        (("IntWrapper", 300), pa.int8()),  # would overflow
    ],
)
def test_bounds_that_do_not_fit_exactly_are_an_error(
    schema: str, bound: tuple[str, Any], target: pa.DataType
) -> None:
    with pytest.raises(MetadataTableError, match="exactly"):
        _bounds(schema, {"c": (bound, bound, None, None)}, pa.schema([("c", target)]))


def test_a_value_that_does_not_decode_is_an_error(schema: str) -> None:
    cells = Cells(["k"], [b"\x02\x00garbage"], schema, "some.hfile")
    with pytest.raises(MetadataTableError, match=r"some\.hfile: cell 0"):
        raw_table("column_stats", [cells])
    with pytest.raises(MetadataTableError, match="without the Avro schema"):
        raw_table("column_stats", [Cells(["k"], [b""], None, "x")])


def _files_record(key: str, entries: dict[str, tuple[int, bool]], kind: int = 2) -> dict[str, Any]:
    listing = {n: {"size": s, "isDeleted": d} for n, (s, d) in entries.items()}
    return {"key": key, "type": kind, "filesystemMetadata": listing}


def test_files_merge_as_hudi_merges_them(schema: str) -> None:
    parts = _files_record("__all_partitions__", {"p": (0, False), ".": (0, False), "gone": (0, False)}, 1)
    sources = [
        _cells([parts, _files_record("p", {"a": (10, False), "b": (5, False)})], schema),
        _cells([_files_record("p", {"a": (8, False), "b": (0, True), "c": (0, True)})], schema),
        _cells([_files_record(".", {"x": (1, False)}), _files_record("gone", {"y": (1, False)})], schema),
        _cells([_files_record("__all_partitions__", {"gone": (0, True)}, 1)], schema),
        _cells([_files_record("p", {"b": (7, False)})], schema),
        Cells(["."], None, None, "delete block"),
        _cells([_files_record(".", {"z": (2, False)})], schema),
    ]
    listing = files_table(raw_table("files", sources))
    assert listing.to_pylist() == [
        {"partition": "", "file_name": "z", "path": "z", "size": 2},
        {"partition": "p", "file_name": "a", "path": "p/a", "size": 10},
        {"partition": "p", "file_name": "b", "path": "p/b", "size": 7},
    ]
