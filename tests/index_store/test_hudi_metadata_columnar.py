"""The column-by-column decode of ``record_index`` and ``secondary_index`` records
(``hudi_metadata.avro_columns``) equals the record-by-record one (fastavro), on the real tables and
on records written with every field's edge values; anything it does not read falls back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hudi_metadata_writer import encode, writer_schema

from index_store.errors import MetadataTableError
from index_store.hudi_metadata import Cells, HudiMetadataTable, raw_table
from index_store.hudi_metadata.avro_columns import Unsupported, decode_columns
from index_store.hudi_metadata.records import _columnar_table, _schema_dict, record_table
from index_store.hudi_metadata.source import slice_cells

META_TABLES = [
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_meta",
]


@pytest.fixture(scope="module")
def schema(hudi_tables: dict[str, Path]) -> str:
    return writer_schema(hudi_tables["v9_txns_simple_meta"])


def _cells(records: list[dict[str, Any]], schema: str) -> Cells:
    keys, values = encode(records, schema)
    return Cells(pa.array(keys, pa.binary()), pa.array(values, pa.binary()), schema, "test")


@pytest.mark.parametrize("name", META_TABLES)
def test_real_partitions_decode_alike(name: str, hudi_tables: dict[str, Path]) -> None:
    mdt = HudiMetadataTable(hudi_tables[name])
    partitions = [
        p for p in mdt.partitions().available if p == "record_index" or p.startswith("secondary_index_")
    ]
    assert "record_index" in partitions and len(partitions) == 3
    for partition in partitions:
        kind = "record_index" if partition == "record_index" else "secondary_index"
        sources = [
            c for piece in mdt.layout.slices(partition) for c in slice_cells(piece, mdt.layout.valid_instant)
        ]
        fast = _columnar_table(kind, sources)
        assert fast is not None and fast.num_rows > 0
        assert fast.equals(record_table(kind, sources)), partition


def _ri(key: str, **info: Any) -> dict[str, Any]:
    base = {
        "partitionName": "p",
        "fileIdHighBits": None,
        "fileIdLowBits": None,
        "fileIndex": None,
        "fileId": None,
        "instantTime": None,
        "fileIdEncoding": 0,
        "position": None,
    }
    return {"key": key, "type": 5, "recordIndexMetadata": base | info}


def test_edge_values_decode_alike(schema: str) -> None:
    records = [
        _ri(
            "a",
            fileIdHighBits=-(2**63),
            fileIdLowBits=2**63 - 1,
            fileIndex=0,
            instantTime=1772922289244,
            position=0,
        ),
        _ri("b", fileIdHighBits=-1, fileIdLowBits=1, fileIndex=-1, position=2**40),
        _ri("c", partitionName=None, fileId="plain-id", fileIdEncoding=1, position=-5),
        _ri("ü€😀", partitionName="päth/ü" * 30, fileId="x" * 300, fileIdEncoding=1, fileIndex=2**31 - 1),
        _ri("e", partitionName="", fileIdHighBits=63, fileIdLowBits=-64, fileIndex=-(2**31)),
    ]
    cells = _cells(records, schema)
    fast = _columnar_table("record_index", [cells, Cells(pa.array(["a"]), None, None, "delete"), cells])
    slow = record_table("record_index", [cells, Cells(["a"], None, None, "delete"), cells])
    assert fast is not None and fast.equals(slow)
    secondary = [
        {"key": f"v{i}$k{i}", "type": 7, "SecondaryIndexMetadata": {"isDeleted": i % 2 == 0}}
        for i in range(5)
    ]
    cells = _cells(secondary, schema)
    fast = _columnar_table("secondary_index", [cells])
    assert fast is not None and fast.equals(record_table("secondary_index", [cells]))


def test_what_it_does_not_read_falls_back(schema: str) -> None:
    files = _cells(
        [{"key": "p", "type": 2, "filesystemMetadata": {"a": {"size": 1, "isDeleted": False}}}], schema
    )
    with pytest.raises(Unsupported):
        decode_columns(_schema_dict(files.schema, "x"), files.value_array)  # a map
    # A record of another kind in a record index: the record path names it.
    with pytest.raises(MetadataTableError, match="no record_index payload"):
        raw_table("record_index", [files])
    # Bytes that do not decode: the record path names the cell.
    with pytest.raises(MetadataTableError, match=r"some\.hfile: cell 0"):
        raw_table(
            "record_index", [Cells(pa.array(["k"]), pa.array([b"\x02\x00garbage"]), schema, "some.hfile")]
        )
    truncated = _cells([_ri("a", fileId="abcdef", fileIdEncoding=1)], schema).value_array[0].as_py()[:-3]
    with pytest.raises(Unsupported):
        decode_columns(_schema_dict(schema, "x"), pa.array([truncated]))
