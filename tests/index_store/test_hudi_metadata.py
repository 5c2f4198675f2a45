"""Hudi's metadata table read on the real tables (tests/data/hudi/*_meta.zip), against the data
table's own listing, the parquet footers of its live base files, hudi-rs and DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from index_store.hudi_metadata import HudiMetadataTable
from index_store.tables.hudi import HudiTable

hudi = pytest.importorskip("hudi")

META_TABLES = [
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_meta",
]


@pytest.fixture(params=META_TABLES)
def meta(request: pytest.FixtureRequest, hudi_tables: dict[str, Path]) -> tuple[Path, HudiMetadataTable]:
    root = hudi_tables[request.param]
    return root, HudiMetadataTable(root)


def _index_defs(root: Path) -> dict[str, dict]:
    return json.loads((root / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]


def test_index_definitions(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    defs = mdt.index_definitions()
    assert set(defs) == set(_index_defs(root))
    assert defs["secondary_index_merchant_idx"].columns == ("merchant_name",)
    assert defs["secondary_index_txn_date_idx"].index_type == "secondary_index"
    assert "amount" in defs["column_stats"].columns


def test_partitions_and_step(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    parts = mdt.partitions()
    assert {"files", "column_stats", "record_index"} <= set(parts.available)
    assert parts.inflight == ()
    assert ("partition_stats" in parts.available) == (root.name != "v9_txns_nonpart_meta")
    assert "bloom_filters" not in parts.available
    assert mdt.in_step_with(HudiTable(root))


def test_files_equal_the_live_listing(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    live = sorted((f.path, f.size) for f in HudiTable(root).list_files())
    files = mdt.files()
    assert list(zip(files["path"].to_pylist(), files["size"].to_pylist(), strict=True)) == live
    # every version still on storage is listed too, and the live files are among them
    assert set(files["path"].to_pylist()) <= set(mdt.files(all_versions=True)["path"].to_pylist())


def _footer_stats(path: Path, column: str) -> dict:
    md = pq.ParquetFile(path).metadata
    chunks = [
        md.row_group(g).column(i)
        for g in range(md.num_row_groups)
        for i in range(md.num_columns)
        if md.row_group(g).column(i).path_in_schema == column
    ]
    stats = [c.statistics for c in chunks if c.statistics is not None and c.statistics.has_min_max]
    return {
        "min": min(s.min for s in stats) if stats else None,
        "max": max(s.max for s in stats) if stats else None,
        "null_count": sum(c.statistics.null_count for c in chunks),
        "value_count": sum(c.num_values for c in chunks),
        "total_size": sum(c.total_compressed_size for c in chunks),
        "total_uncompressed_size": sum(c.total_uncompressed_size for c in chunks),
    }


def test_column_stats_equal_the_footers(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    indexed = _index_defs(root)["column_stats"]["sourceFields"]
    stats = mdt.column_stats()
    by_file = {row["file_name"]: row for row in stats.to_pylist()}
    bases = [f for f in HudiTable(root).list_files() if f.path.endswith(".parquet")]
    assert bases and {Path(f.path).name for f in bases} <= set(by_file)
    for f in bases:
        row = by_file[Path(f.path).name]
        assert row["partition"] == f.partition
        file_schema = pq.read_schema(root / f.path)
        for column in indexed:
            got = dict(row[column])
            assert got.pop("tight") is False  # per file bounds from a footer
            assert got == _footer_stats(root / f.path, column), (f.path, column)
            assert stats.schema.field(column).type.field("min").type == file_schema.field(column).type


def test_column_stats_of_chosen_columns(meta: tuple[Path, HudiMetadataTable]) -> None:
    _, mdt = meta
    stats = mdt.column_stats(["amount", "txn_date"])
    assert stats.column_names == ["partition", "file_name", "amount", "txn_date"]
    assert pa.types.is_decimal(stats.schema.field("amount").type.field("min").type)
    assert stats.schema.field("txn_date").type.field("max").type == pa.date32()


@pytest.mark.parametrize("name", [t for t in META_TABLES if t != "v9_txns_nonpart_meta"])
def test_partition_stats_bound_the_column_stats(name: str, hudi_tables: dict[str, Path]) -> None:
    # Hudi's own partition statistics: bounds contain every live file's; counts are Hudi's, which
    # after a clustering still count the replaced files (8 values where the live file has 4).
    mdt = HudiMetadataTable(hudi_tables[name])
    per_file = mdt.column_stats(["amount", "txn_ts", "txn_date"]).to_pylist()
    per_partition = mdt.partition_stats(["amount", "txn_ts", "txn_date"]).to_pylist()
    assert sorted(r["partition"] for r in per_partition) == sorted({r["partition"] for r in per_file})
    for row in per_partition:
        files = [r for r in per_file if r["partition"] == row["partition"]]
        for column in ("amount", "txn_ts", "txn_date"):
            assert row[column]["tight"] is True
            assert row[column]["min"] <= min(r[column]["min"] for r in files)
            assert row[column]["max"] >= max(r[column]["max"] for r in files)
            assert row[column]["value_count"] >= sum(r[column]["value_count"] for r in files)


def _snapshot(root: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTable(str(root)).read())


def test_record_index_equals_hudi_rs(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    rows = _snapshot(root)
    holders: dict[tuple[str, str], set[str]] = {}
    for key, part, name in zip(
        rows["_hoodie_record_key"].to_pylist(),
        rows["_hoodie_partition_path"].to_pylist(),
        rows["_hoodie_file_name"].to_pylist(),
        strict=True,
    ):
        holders.setdefault((key, part), set()).add(name.split("_")[0])
    index = mdt.record_index()
    got = {(r["record_key"], r["partition"]): r["file_id"] for r in index.to_pylist()}
    assert set(got) == set(holders)
    for where, file_id in got.items():
        assert file_id in holders[where]  # a key several files hold: one of them
    instants = set(HudiTable(root).timeline().completed)
    assert set(index["instant"].to_pylist()) <= instants


def test_record_index_point_lookups(meta: tuple[Path, HudiMetadataTable]) -> None:
    _, mdt = meta
    full = mdt.record_index()
    some = full["record_key"].to_pylist()[::3]
    looked_up = mdt.record_index([*some, "no-such-key"])
    assert sorted(looked_up.to_pylist(), key=lambda r: r["record_key"]) == sorted(
        full.filter(pc.is_in(full["record_key"], pa.array(some))).to_pylist(), key=lambda r: r["record_key"]
    )
    assert mdt.record_index([]).num_rows == 0


def _hudi_string(column: pa.ChunkedArray) -> str:
    """How Hudi writes a secondary key of this column's type, as DuckDB SQL."""
    if pa.types.is_date(column.type):
        return "CAST(date_diff('day', DATE '1970-01-01', {c}) AS VARCHAR)"
    return "CAST({c} AS VARCHAR)"


def test_secondary_indexes_equal_duckdb(meta: tuple[Path, HudiMetadataTable]) -> None:
    root, mdt = meta
    snapshot = _snapshot(root)
    defs = {n: d for n, d in _index_defs(root).items() if d["indexType"] == "secondary_index"}
    assert defs
    con = duckdb.connect()
    con.register("snapshot", snapshot)
    for name, definition in defs.items():
        (column,) = definition["sourceFields"]
        expr = _hudi_string(snapshot[column]).format(c=f'"{column}"')
        expected = sorted(
            con.execute(f'SELECT {expr}, "_hoodie_record_key" FROM snapshot').fetchall(),
            key=lambda r: (r[0] is None, r),
        )
        index = mdt.secondary_index(name)
        got = sorted(
            zip(index["secondary_key"].to_pylist(), index["record_key"].to_pylist(), strict=True),
            key=lambda r: (r[0] is None, r),
        )
        assert got == expected, name
    assert mdt.secondary_index(next(iter(defs)).removeprefix("secondary_index_")).num_rows
