"""Secondary key to rows with Hudi's own metadata table (``index_store.hudi_source.rows``): ``read``,
``count``, ``exists``, ``select``/``row_ids`` and ``indexes`` on the real tables opened with no
build, checked against DuckDB over the hudi-rs snapshot, and the cases where the index cannot be
exact (behind, partition being built, a key the record index cannot place, keys not proven unique,
stored keys of another form) still answering right."""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi_data import file_group
from hudi_metadata_writer import append_log, latest_commit, set_table_property

from hudi_expr import Expression, col
from index_store import open_table
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.source import slice_cells
from index_store.hudi_source.secondary_keys import secondary_form

hudi = pytest.importorskip("hudi")

TABLES = [
    "v9_txns_simple_meta",
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "mor_avro_v9_txns_simple_meta",
]
DAY = datetime.date

# (predicate, the same as SQL over the snapshot, the index that answers it or None)
CASES: list[tuple[Expression, str, str | None]] = [
    (col("merchant_name") == "Amazon", "merchant_name = 'Amazon'", "merchant_idx"),
    (col("merchant_name") == "No Such Shop", "merchant_name = 'No Such Shop'", "merchant_idx"),
    (
        col("merchant_name").isin(["IKEA", "Amazon", "Zalando", "Nowhere"]),
        "merchant_name IN ('IKEA', 'Amazon', 'Zalando', 'Nowhere')",
        "merchant_idx",
    ),
    (col("txn_date") == DAY(2024, 1, 15), "txn_date = DATE '2024-01-15'", "txn_date_idx"),
    (col("txn_date") == DAY(1999, 1, 1), "txn_date = DATE '1999-01-01'", "txn_date_idx"),
    (
        col("txn_date").isin([DAY(2024, 1, 16), DAY(2024, 1, 18), DAY(2031, 1, 1)]),
        "txn_date IN (DATE '2024-01-16', DATE '2024-01-18', DATE '2031-01-01')",
        "txn_date_idx",
    ),
    (col("txn_date") == "2024-01-15", "txn_date = DATE '2024-01-15'", "txn_date_idx"),  # a coerced literal
    (
        (col("txn_date") == DAY(2024, 1, 15)) & (col("merchant_name") == "Amazon"),
        "txn_date = DATE '2024-01-15' AND merchant_name = 'Amazon'",
        "merchant_idx",
    ),
    (
        (col("txn_date") == DAY(2024, 1, 15)) & (col("amount") > 100),
        "txn_date = DATE '2024-01-15' AND amount > 100",
        "txn_date_idx",
    ),
    (col("amount") > 1000, "amount > 1000", None),
]


def _snapshot(root: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTable(str(root)).read())


def _expected(snapshot: pa.Table, where: str) -> list[str]:
    con = duckdb.connect()
    con.register("snap", snapshot)
    rows = con.execute(f"SELECT _hoodie_record_key FROM snap WHERE {where} ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def _check(root: Path, snapshot: pa.Table | None = None) -> None:
    """read, count and exists of every case equal DuckDB over the snapshot, and prune keeps every
    file group holding a matching row."""
    snapshot = _snapshot(root) if snapshot is None else snapshot
    table = open_table(root)
    for expr, where, _ in CASES:
        expected = _expected(snapshot, where)
        holding = snapshot.filter(pa.array(_matching(snapshot, where)))["_hoodie_file_name"].to_pylist()
        assert {file_group(f) for f in holding} <= {file_group(f) for f in table.prune(expr).files}, where
        got = table.read(expr, ["_hoodie_record_key", "merchant_name", "txn_date"])
        assert sorted(got["_hoodie_record_key"].to_pylist()) == expected, where
        assert table.count(expr) == len(expected), where
        assert table.exists(expr) == bool(expected), where


@pytest.mark.parametrize("name", TABLES)
def test_rows_from_hudi_secondary_indexes_equal_duckdb(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    snapshot = _snapshot(root)
    _check(root, snapshot)
    table = open_table(root, source="hudi")
    for expr, where, index in CASES:
        found = table._from_hudi_secondary(expr)
        if index is None:
            assert found is None
            continue
        assert found is not None and f"secondary_index_{index}" in found.partitions, where
        exact = " AND " not in where or "merchant_name" in where
        assert found.exact == exact, where
        # Every file slice holding a matching row is read; when exact, only those.
        holding = snapshot.filter(pa.array(_matching(snapshot, where)))["_hoodie_file_name"].to_pylist()
        read = {s.file_id for s in found.slices}
        assert {file_group(f) for f in holding} <= {file_group(f) for f in read}, where
        if exact:
            assert len(read) == len({file_group(f) for f in holding}), where


def _matching(snapshot: pa.Table, where: str) -> list[bool]:
    keys = set(_expected(snapshot, where))
    return [k in keys for k in snapshot["_hoodie_record_key"].to_pylist()]


@pytest.mark.parametrize("name", ["v9_txns_simple_meta", "v9_txns_complex_meta"])
def test_select_and_row_ids_are_the_matching_rows(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    snapshot = _snapshot(root)
    table = open_table(root)
    for expr, where, index in CASES:
        selection = table.select(expr)
        text = selection.explain()
        if index is not None:
            head = text.split(" used:")[0]
            assert head.startswith("Hudi metadata table (") and f"secondary_index_{index}" in head, text
        else:
            assert "Hudi metadata table not used" in text
        keys = []
        for path, positions in table.row_ids(expr).items():
            rows = pq.read_table(path, columns=["_hoodie_record_key"]).take(positions)
            keys += rows["_hoodie_record_key"].to_pylist()
        if index is not None:
            assert sorted(keys) == _expected(snapshot, where), where
        else:
            assert set(_expected(snapshot, where)) <= set(keys), where
    exact = table.select(col("merchant_name") == "Amazon").explain()
    assert "count/exists from the index alone" in exact


def test_indexes_lists_hudis_secondary_indexes(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    listed = {s.name: s for s in open_table(root).indexes()}
    assert set(listed) == {"secondary_index_merchant_idx", "secondary_index_txn_date_idx"}
    assert listed["secondary_index_txn_date_idx"].columns == ("txn_date",)
    assert all(s.complete and s.live_files == 5 for s in listed.values())
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", "secondary_index_merchant_idx")
    listed = {s.name: s for s in open_table(root).indexes()}
    assert not listed["secondary_index_merchant_idx"].complete


def _append(root: Path, partition: str, key: str, record: dict[str, object]) -> None:
    """``record`` appended to the metadata file group holding ``key`` (Hudi hashes each key to
    one; else the first), as a log file of its latest slice read after the others."""
    mdt = HudiMetadataTable(root)
    slices = mdt.layout.slices(partition)
    held = [p for p in slices if any(key in c.keys for c in slice_cells(p, mdt.layout.valid_instant))]
    piece = (held or slices)[0]
    append_log(root, partition, piece.file_id, _newest(root, piece.base_instant), [record])


def _newest(root: Path, base_instant: str | None) -> str:
    """An instant a new log block of a metadata slice is read at: the later of the data table's
    latest commit (the metadata table's latest delta commit) and the slice's base (a compaction)."""
    return max(latest_commit(root), base_instant or "")


def test_a_metadata_table_behind_answers_by_reading(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    latest = latest_commit(root)
    for p in timeline.iterdir():
        if p.name.startswith(latest) and re.fullmatch(r"\d+_\d+\.\w+", p.name):
            p.unlink()
    _check(root)
    table = open_table(root)
    assert table._from_hudi_secondary(col("merchant_name") == "Amazon") is None
    assert "not in step" in table.prune(col("merchant_name") == "Amazon").explain()


def test_a_secondary_index_being_built_is_not_used(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    set_table_property(
        root,
        "hoodie.table.metadata.partitions.inflight",
        "secondary_index_merchant_idx,secondary_index_txn_date_idx",
    )
    _check(root)
    table = open_table(root)
    assert table._from_hudi_secondary(col("txn_date") == DAY(2024, 1, 15)) is None
    assert "still being built" in table.prune(col("txn_date") == DAY(2024, 1, 15)).explain()


def test_a_key_the_record_index_cannot_place_answers_by_reading(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    key = "Amazon$TXN-NOWHERE"
    record = {"key": key, "type": 7, "SecondaryIndexMetadata": {"isDeleted": False}}
    _append(root, "secondary_index_merchant_idx", key, record)
    _check(root)
    table = open_table(root)
    assert table._from_hudi_secondary(col("merchant_name") == "Amazon") is None
    found = table._from_hudi_secondary(col("merchant_name") == "IKEA")  # its keys are all placed
    assert found is not None and found.exact


def _record_index_entry(key: str, partition: str, file_id: str, instant: object) -> dict[str, object]:
    value = uuid.UUID(file_id.rsplit("-", 1)[0]).int
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    return {
        "key": key,
        "type": 5,
        "recordIndexMetadata": {
            "partitionName": partition,
            "fileIdHighBits": signed(value >> 64),
            "fileIdLowBits": signed(value & ((1 << 64) - 1)),
            "fileIndex": int(file_id.rsplit("-", 1)[1]),
            "fileId": "",
            "instantTime": instant,
            "fileIdEncoding": 0,
            "position": None,
        },
    }


def test_keys_not_proven_unique_are_counted_by_reading(copy_table: Callable[[str], Path]) -> None:
    """A record index entry more than the table has rows: the keys may not be unique (as with
    inserts allowing duplicates), so nothing is counted from the index, and every file whose key
    range may hold a key is read too: here the record index names another file group for TXN-001
    (as it names one copy of a duplicated key), and its row is still found."""
    root = copy_table("v9_txns_simple_meta")
    mdt = HudiMetadataTable(root)
    entries = mdt.record_index()
    placed = entries.filter(pc.equal(entries["record_key"], "TXN-001")).to_pylist()[0]
    other = next(r for r in entries.to_pylist() if r["file_id"] != placed["file_id"])
    instant = mdt._raw("record_index", "record_index")["instant_time"][0].as_py()
    records = [
        _record_index_entry("TXN-001", other["partition"], other["file_id"], instant),
        _record_index_entry("TXN-EXTRA", placed["partition"], placed["file_id"], instant),
    ]
    slices = mdt.layout.slices("record_index")
    held = [p for p in slices if any("TXN-001" in c.keys for c in slice_cells(p, mdt.layout.valid_instant))]
    append_log(root, "record_index", held[0].file_id, _newest(root, held[0].base_instant), records)
    _check(root)
    found = open_table(root)._from_hudi_secondary(col("merchant_name") == "Amazon")
    assert found is not None and not found.exact and not found.unique
    assert {placed["file_id"], other["file_id"]} <= {s.file_id for s in found.slices}
    assert "keys not proven unique" in found.explain()


def test_stored_keys_of_another_form_are_not_used(copy_table: Callable[[str], Path]) -> None:
    """A date index whose keys are spelled as ISO dates (as an older writer might): not used."""
    root = copy_table("v9_txns_simple_meta")
    key = "2024-01-15$TXN-001"
    record = {"key": key, "type": 7, "SecondaryIndexMetadata": {"isDeleted": False}}
    _append(root, "secondary_index_txn_date_idx", key, record)
    _check(root)
    table = open_table(root)
    assert table._from_hudi_secondary(col("txn_date") == DAY(2024, 1, 15)) is None
    text = table.prune(col("txn_date") == DAY(2024, 1, 15)).explain()
    assert "Hudi metadata table (secondary_index_txn_date_idx) not used for txn_date" in text
    assert "form expected" in text


def test_secondary_key_forms() -> None:
    dates = secondary_form(pa.date32())
    assert dates is not None
    got = dates.keys(pa.array([DAY(2024, 1, 15), None, DAY(1969, 12, 31)], pa.date32()))
    assert got.to_pylist() == ["19737", "-1"]
    ints = secondary_form(pa.int32())
    assert ints is not None and ints.keys(pa.array([0, -42, 7], pa.int32())).to_pylist() == ["0", "-42", "7"]
    assert ints.conforms(pa.array(["0", "-42", None])) and not ints.conforms(pa.array(["007"]))
    assert not dates.conforms(pa.array(["2024-01-15"]))
    for unproven in (pa.float64(), pa.timestamp("us"), pa.decimal128(10, 2), pa.bool_(), pa.binary()):
        assert secondary_form(unproven) is None


def test_an_index_on_a_column_of_unproven_form_is_not_used(copy_table: Callable[[str], Path]) -> None:
    """An index declared on a timestamp column (its secondary keys' form depends on the engine and
    release): its files are kept, and explain says why."""
    root = copy_table("v9_txns_simple_meta")
    defs = root / ".hoodie" / ".index_defs" / "index.json"
    defs.write_text(defs.read_text().replace('[ "merchant_name" ]', '[ "txn_datetime" ]'))
    snapshot = _snapshot(root)
    moment = snapshot["txn_datetime"][0].as_py()
    table = open_table(root)
    expr = col("txn_datetime") == moment
    assert table._from_hudi_secondary(expr) is None
    text = table.prune(expr).explain()
    assert "(secondary_index_merchant_idx) not used for txn_datetime" in text
    assert "not proven bit-exact" in text
    assert table.count(expr) == pc.sum(pc.equal(snapshot["txn_datetime"], moment)).as_py()
    used = {s.name: s.used_for for s in table.hudi_indexes()}
    assert used["secondary_index_merchant_idx"] == ""


def test_auto_with_our_own_index_still_selects_rows_with_hudis(copy_table: Callable[[str], Path]) -> None:
    """``auto`` with our own index built: Hudi's secondary index answers the row-level calls on a
    column none of ours is defined on, and ours where one is (both right)."""
    root = copy_table("v9_txns_simple_meta")
    snapshot = _snapshot(root)
    table = open_table(root)
    table.build()
    amazon = col("merchant_name") == "Amazon"
    expected = _expected(snapshot, "merchant_name = 'Amazon'")
    found = table._hudi_rows(amazon, "snapshot")
    assert found is not None and found.exact and found.partitions == ("secondary_index_merchant_idx",)
    assert table.count(amazon) == len(expected)
    assert sorted(table.read(amazon, ["_hoodie_record_key"])["_hoodie_record_key"].to_pylist()) == expected
    assert table._hudi_rows(col("amount") > 1000, "snapshot") is None  # no Hudi index on amount

    table.create_index(["merchant_name"], "value", "ours")
    table.build_index()
    assert table._hudi_rows(amazon, "snapshot") is None  # our own secondary index answers
    assert table.count(amazon) == len(expected)
    assert table.exists(amazon)
