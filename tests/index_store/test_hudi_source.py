"""Hudi's own metadata table answering ``prune``, ``tag`` and ``count`` with no build
(``index_store.hudi_source``), on the real tables that carry one: sound against DuckDB over the
hudi-rs snapshot, equal to the answers of this project's own index once built (duplicate keys
aside), and never wrong on a metadata table that is behind, ahead, partly built or contradicts
the data table."""

from __future__ import annotations

import datetime
import re
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi_data import file_group
from hudi_metadata_writer import append_log, column_stats_record, latest_commit, set_table_property

from hudi_expr import Expression, col
from index_store import open_table
from index_store.errors import (
    IndexNotBuiltError,
    IndexSourceError,
    MetadataOutOfStepError,
    MetadataPartitionUnavailableError,
    MetadataTableError,
)
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.routing import file_group_indexes
from index_store.hudi_metadata.source import slice_cells
from index_store.tables.hudi import HudiTable
from index_store.tagging import tag_stats

hudi = pytest.importorskip("hudi")

META_TABLES = [
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_meta",
    "v9_timebasedkeygen_epochmillis",
    "mor_avro_v9_timebasedkeygen_nonhivestyle",
    "v9_txns_simple_overwrite",
]

# (predicate, the same as SQL over the snapshot with its parameters)
PREDICATES: list[tuple[Expression, str, list[object]]] = [
    (col("amount") > Decimal("1000"), "amount > ?", [Decimal("1000")]),
    (col("amount") <= Decimal("99.99"), "amount <= ?", [Decimal("99.99")]),
    (col("txn_date") == datetime.date(2024, 1, 18), "txn_date = ?", [datetime.date(2024, 1, 18)]),
    (col("merchant_name") == "Spotify", "merchant_name = ?", ["Spotify"]),
    (col("merchant_name").is_null(), "merchant_name IS NULL", []),
    (
        col("merchant_name").isin(["IKEA", "Amazon", "Zalando"]),
        "merchant_name IN (?, ?, ?)",
        ["IKEA", "Amazon", "Zalando"],
    ),
    (col("txn_id").isin(["TXN-003", "TXN-012"]), "txn_id IN (?, ?)", ["TXN-003", "TXN-012"]),
    (col("txn_ts") >= 1700500000000, "txn_ts >= ?", [1700500000000]),
    (
        (col("currency") == "EUR") & (col("fee_amount") > Decimal("0")),
        "currency = ? AND fee_amount > ?",
        ["EUR", 0],
    ),
    (~(col("is_international") == True), "NOT (is_international = TRUE)", []),  # noqa: E712
]


def _snapshot(root: Path) -> pa.Table:
    return pa.Table.from_batches(hudi.HudiTable(str(root)).read())


def _must_keep(snapshot: pa.Table, where: str, params: list[object]) -> set[str]:
    """File groups holding a row ``where`` is TRUE on, by DuckDB over the snapshot."""
    con = duckdb.connect()
    con.register("snap", snapshot)
    rows = con.execute(f"SELECT DISTINCT _hoodie_file_name FROM snap WHERE {where}", params).fetchall()
    return {file_group(r[0]) for r in rows}


@pytest.fixture(params=META_TABLES)
def table_root(request: pytest.FixtureRequest, copy_table: Callable[[str], Path]) -> Path:
    return copy_table(request.param)


def test_prune_count_and_tag_without_build_are_sound_and_equal_the_built_index(table_root: Path) -> None:
    snapshot = _snapshot(table_root)
    table = open_table(table_root)
    built_copy = Path(shutil.copytree(table_root, table_root.parent / (table_root.name + "_built")))
    own = open_table(built_copy, source="own")
    own.build(progress=False)
    # Files Hudi wrote no statistics of (v9_timebasedkeygen_epochmillis' last commit) stay kept.
    described = set(HudiMetadataTable(table_root).column_stats()["file_name"].to_pylist())
    for expr, where, params in PREDICATES:
        result = table.prune(expr)
        kept = {file_group(f) for f in result.files}
        assert _must_keep(snapshot, where, params) <= kept, (expr, result.explain())
        mine = {Path(f).name for f in result.files}
        theirs = {Path(f).name for f in own.prune(expr).files}
        # Equal, but for the file groups holding a file Hudi has no statistics of (kept whole).
        undescribed = {file_group(f) for f in mine - described}
        # Hudi's secondary indexes (merchant_name, txn_date) may prune more than ours.
        if "merchant_name" not in where and "txn_date" not in where:
            assert theirs <= mine, (expr, result.explain())
        assert {file_group(f) for f in mine - theirs} <= undescribed, (expr, result.explain())
        con = duckdb.connect()
        con.register("snap", snapshot)
        (expected,) = con.execute(f"SELECT count(*) FROM snap WHERE {where}", params).fetchone() or (0,)
        assert table.count(expr) == expected, expr
    keys = [*snapshot["_hoodie_record_key"].to_pylist(), "NO-SUCH-KEY"]
    tagged = table.tag(keys)
    built = own.tag(keys)
    assert tag_stats(tagged).locations == "one"
    assert tag_stats(built).locations == "every"
    every: dict[str, set[str]] = {}
    for row in built.to_pylist():
        every.setdefault(row["key"], set()).add(Path(row["file"]).name if row["file"] else "")
    holders: dict[str, set[str]] = {}
    for key, name in zip(keys[:-1], snapshot["_hoodie_file_name"].to_pylist(), strict=True):
        holders.setdefault(key, set()).add(file_group(name))
    for row in tagged.to_pylist():
        name = Path(row["file"]).name if row["file"] else ""
        if row["key"] == "NO-SUCH-KEY":
            assert row["file"] is None
            continue
        assert row["file"] is not None, row  # never a false insert
        assert file_group(name) in holders[row["key"]]
        if len(every[row["key"]]) == 1:
            assert {name} == every[row["key"]]  # one location: the built index's
        else:
            assert name in every[row["key"]]  # the record index holds one of the copies
    assert len(tagged) == len(keys)


def test_explain_names_the_metadata_table_and_its_partition(copy_table: Callable[[str], Path]) -> None:
    table = open_table(copy_table("v9_txns_simple_meta"))
    text = table.prune(col("merchant_name") == "Spotify").explain()
    assert "Hudi metadata table (column_stats)" in text
    assert "column_stats partition" in text


def test_with_both_indexes_auto_intersects_and_own_uses_its_own(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    auto = open_table(root)
    before = auto.prune(col("amount") > Decimal("1000")).files
    auto.build(progress=False)
    both = auto.prune(col("amount") > Decimal("1000"))
    assert both.files == before
    assert any("Hudi metadata table answered" in n for n in both.notes())
    own = open_table(root, source="own").prune(col("amount") > Decimal("1000"))
    assert own.files == before
    assert not any("Hudi metadata table" in n for n in own.notes())
    only = open_table(root, source="hudi").prune(col("amount") > Decimal("1000"))
    assert only.files == before


def test_own_without_build_and_hudi_without_a_metadata_table_are_refused(
    copy_table: Callable[[str], Path],
) -> None:
    root = copy_table("v9_txns_simple_meta")
    with pytest.raises(IndexNotBuiltError):
        open_table(root, source="own").prune(col("amount") > 1)
    with pytest.raises(IndexNotBuiltError):
        open_table(root, source="own").tag(["TXN-001"])
    shutil.rmtree(root / ".hoodie" / "metadata")
    with pytest.raises(IndexSourceError, match="no Hudi metadata table"):
        open_table(root, source="hudi")
    with pytest.raises(IndexNotBuiltError):  # auto: no metadata table, no build: as before
        open_table(root).prune(col("amount") > 1)
    with pytest.raises(ValueError, match="source must be one of"):
        open_table(root, source="both")  # type: ignore[arg-type]


def test_plain_and_metadata_less_tables_keep_using_the_own_index(
    copy_table: Callable[[str], Path], tmp_path: Path
) -> None:
    with pytest.raises(IndexNotBuiltError):
        open_table(copy_table("v9_txns_simple_nometa")).prune(col("amount") > 1)
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "part.parquet")
    with pytest.raises(IndexNotBuiltError):
        open_table(tmp_path).prune(col("a") > 1)
    with pytest.raises(IndexSourceError):
        open_table(tmp_path, source="hudi")


def _drop_instant(folder: Path, instant: str) -> None:
    for p in folder.iterdir():
        if p.name.startswith(instant) and re.fullmatch(r"\d+_\d+\.\w+", p.name):
            p.unlink()


def _check_sound(root: Path, table_files: list[str], where: str, params: list[object]) -> None:
    assert _must_keep(_snapshot(root), where, params) <= {file_group(f) for f in table_files}


def test_a_metadata_table_behind_keeps_what_it_does_not_cover_and_refuses_to_tag(
    copy_table: Callable[[str], Path],
) -> None:
    root = copy_table("v9_txns_complex_meta")
    _drop_instant(root / ".hoodie" / "metadata" / ".hoodie" / "timeline", latest_commit(root))
    table = open_table(root)
    for expr, where, params in PREDICATES:
        result = table.prune(expr)
        _check_sound(root, result.files, where, params)
    assert any("behind" in n for n in result.notes())
    with pytest.raises(MetadataOutOfStepError):
        table.tag(["txn_id:TXN-001,account_id:ACC-A"])  # a new key would look like an insert


def test_a_metadata_table_ahead_reads_as_hudi_does(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    _drop_instant(root / ".hoodie" / "timeline", latest_commit(root))  # that data commit is now inflight
    table = open_table(root)
    for expr, where, params in PREDICATES:
        _check_sound(root, table.prune(expr).files, where, params)
    found = table.tag(_snapshot(root)["_hoodie_record_key"].to_pylist())
    assert found["file"].null_count == 0


def test_a_partition_being_built_keeps_every_file_or_refuses(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    table = open_table(root)
    assert table.prune(col("amount") > Decimal("1000")).kept < 5
    building = "column_stats,partition_stats,record_index"
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", building)
    result = table.prune(col("amount") > Decimal("1000"))  # the same table object sees the change
    assert result.kept == result.total == 5
    assert any("still being built" in n for n in result.notes())
    with pytest.raises(MetadataPartitionUnavailableError, match="record_index"):
        table.tag(["TXN-001"])


def _file_group(mdt: HudiMetadataTable, partition: str, key: str | None = None) -> str:
    """The metadata file group holding ``key`` (Hudi hashes each key to one), else the first."""
    slices = mdt.layout.slices(partition)
    for piece in slices if key is not None else ():
        if any(key in cells.keys for cells in slice_cells(piece, mdt.layout.valid_instant)):
            return piece.file_id
    return slices[0].file_id


def test_a_column_without_statistics_keeps_its_files(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_nonpart_meta")
    mdt = HudiMetadataTable(root)
    target = mdt.files()["file_name"].to_pylist()[0]
    raw = mdt._raw("column_stats", "column_stats")
    rows = raw.filter(pc.and_(pc.equal(raw["file_name"], target), pc.equal(raw["column_name"], "amount")))
    key = str(rows["key"][0].as_py())
    record = column_stats_record(key, target, "amount", None, None, deleted=True)
    append_log(root, "column_stats", _file_group(mdt, "column_stats", key), latest_commit(root), [record])
    result = open_table(root).prune(col("amount") > Decimal("100000000"))
    assert [Path(f).name for f in result.files] == [target]  # unknown: kept; the other file ruled out


def test_a_record_index_entry_in_a_replaced_file_group_is_never_an_insert(
    copy_table: Callable[[str], Path],
) -> None:
    import uuid as uuid_module

    root = copy_table("v9_txns_simple_overwrite")
    partition, file_id = sorted(HudiTable(root).timeline().replaced_file_groups())[0]
    mdt = HudiMetadataTable(root)
    keys = mdt.record_index()["record_key"].to_pylist()
    raw = mdt._raw("record_index", "record_index")
    value = uuid_module.UUID(file_id.rsplit("-", 1)[0]).int
    signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    record = {
        "key": "TXN-GONE",
        "type": 5,
        "recordIndexMetadata": {
            "partitionName": partition,
            "fileIdHighBits": signed(value >> 64),
            "fileIdLowBits": signed(value & ((1 << 64) - 1)),
            "fileIndex": int(file_id.rsplit("-", 1)[1]),
            "fileId": "",
            "instantTime": raw["instant_time"][0].as_py(),
            "fileIdEncoding": 0,
            "position": None,
        },
    }
    slices = mdt.layout.slices("record_index")  # the file group Hudi's hash sends the key to
    group = slices[int(file_group_indexes(pa.array(["TXN-GONE"]), len(slices))[0])].file_id
    append_log(root, "record_index", group, latest_commit(root), [record])
    table = open_table(root)
    with pytest.raises(MetadataTableError, match="no live slice"):
        table.tag(["TXN-GONE"])
    assert table.tag(keys)["file"].null_count == 0  # the other keys still answer


def test_tag_within_partitions_from_the_record_index(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    table = open_table(root)
    found = table.tag(["TXN-001"])
    home = found["partition"][0].as_py()
    assert home == "region=us"
    within = table.tag(["TXN-001", "TXN-001", "TXN-404"], partitions=["us", "eu", "us"]).to_pylist()
    assert [r["partition"] for r in within] == ["region=us", "region=eu", "region=us"]
    assert within[0]["file"] == found["file"][0].as_py()
    assert within[1]["file"] is None and within[2]["file"] is None  # not in that partition: new there


def test_bounds_hudi_orders_otherwise_are_unknown() -> None:
    from index_store.hudi_source.view import _comparable

    lo = pa.array(["a", "\ue001x", None, "b"])
    hi = pa.array(["b", "z", "c", "\U0001f600"])
    got_lo, got_hi = _comparable(lo, hi)
    assert got_lo.to_pylist() == ["a", None, None, None]
    assert got_hi.to_pylist() == ["b", None, "c", None]
    blo, bhi = _comparable(pa.array([b"\x01"]), pa.array([b"\xff"]))  # Java orders bytes signed
    assert blo.null_count == bhi.null_count == 1


def test_hudi_secondary_index_rules_out_file_groups(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    result = open_table(root).prune(col("merchant_name").isin(["IKEA", "Amazon"]))
    _check_sound(root, result.files, "merchant_name IN (?, ?)", ["IKEA", "Amazon"])
    assert result.removed_by_source.get("Hudi metadata table (secondary_index)", 0) >= 1
    assert "secondary indexes of merchant_name" in result.explain()


def test_a_secondary_entry_the_record_index_cannot_place_proves_nothing(
    copy_table: Callable[[str], Path],
) -> None:
    root = copy_table("v9_txns_simple_meta")
    mdt = HudiMetadataTable(root)
    key = "Amazon$TXN-NOWHERE"
    record = {"key": key, "type": 7, "SecondaryIndexMetadata": {"isDeleted": False}}
    group = _file_group(mdt, "secondary_index_merchant_idx")
    append_log(root, "secondary_index_merchant_idx", group, latest_commit(root), [record])
    result = open_table(root).prune(col("merchant_name").isin(["IKEA", "Amazon"]))
    _check_sound(root, result.files, "merchant_name IN (?, ?)", ["IKEA", "Amazon"])
    assert "Hudi metadata table (secondary_index)" not in result.removed_by_source


def test_a_metadata_table_behind_does_not_use_its_secondary_index(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    _drop_instant(root / ".hoodie" / "metadata" / ".hoodie" / "timeline", latest_commit(root))
    result = open_table(root).prune(col("merchant_name").isin(["IKEA", "Amazon"]))
    _check_sound(root, result.files, "merchant_name IN (?, ?)", ["IKEA", "Amazon"])
    assert "Hudi metadata table (secondary_index)" not in result.removed_by_source


def test_hudi_indexes_lists_what_hudi_keeps_and_what_answers(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    statuses = {s.name: s for s in open_table(root).hudi_indexes()}
    assert statuses["secondary_index_merchant_idx"].columns == ("merchant_name",)
    assert statuses["secondary_index_merchant_idx"].used_for == "prune, rows (= and IN)"
    # A date's secondary key is its day count, a form proven on these tables: used too.
    assert statuses["secondary_index_txn_date_idx"].used_for == "prune, rows (= and IN)"
    assert (statuses["column_stats"].used_for, statuses["record_index"].used_for) == ("prune", "tag")
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", "record_index")
    now = {s.name: s for s in open_table(root).hudi_indexes()}
    assert (now["record_index"].state, now["record_index"].used_for) == ("building", "")
    assert now["secondary_index_merchant_idx"].used_for == ""  # it needs the record index
    assert open_table(root, source="own").hudi_indexes() == []
