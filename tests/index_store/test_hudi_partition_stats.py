"""Hudi's ``partition_stats`` pruning (``hudi_source.partition_stats``): whole partitions ruled out
by their bounds, sound against DuckDB over the hudi-rs snapshot on the real tables, and kept where
the partition's statistics could mislead (counts, a tombstone, behind, being built)."""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hudi_data import file_group, groups_holding
from hudi_metadata_writer import append_log, column_stats_record, latest_commit, set_table_property

from hudi_expr import Expression, col
from index_store import open_table
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.index_ids import partition_stats_keys

hudi = pytest.importorskip("hudi")

SOURCE = "Hudi metadata table (partition_stats)"
TABLES = ["v9_txns_simple_meta", "v9_txns_complex_meta", "mor_avro_v9_txns_simple_meta"]
PREDICATES: list[tuple[Expression, str, list[object]]] = [
    (col("amount") > Decimal("5000"), "amount > ?", [Decimal("5000")]),
    (col("amount") < Decimal("60"), "amount < ?", [Decimal("60")]),
    (col("txn_date") <= datetime.date(2024, 1, 16), "txn_date <= ?", [datetime.date(2024, 1, 16)]),
    (col("currency") == "USD", "currency = ?", ["USD"]),
    (col("currency") != "USD", "currency <> ?", ["USD"]),
    (col("currency").isin(["EUR", "GBP"]), "currency IN (?, ?)", ["EUR", "GBP"]),
    (col("merchant_name").is_null(), "merchant_name IS NULL", []),
    (col("merchant_name").is_not_null(), "merchant_name IS NOT NULL", []),
    (col("merchant_name").starts_with("S"), "starts_with(merchant_name, ?)", ["S"]),
    (~(col("is_international") == False), "NOT (is_international = FALSE)", []),  # noqa: E712
    (
        col("txn_ts").between(1700000000000, 1700300000000),
        "txn_ts BETWEEN ? AND ?",
        [1700000000000, 1700300000000],
    ),
    (
        (col("amount") > Decimal("5000")) | (col("currency") == "GBP"),
        "amount > ? OR currency = ?",
        [Decimal("5000"), "GBP"],
    ),
    (col("txn_id") == "NO-SUCH", "txn_id = ?", ["NO-SUCH"]),
]


def _ruled_out_partitions(root: Path, expr_column: str, test: Callable[[object, object], bool]) -> set[str]:
    stats = HudiMetadataTable(root).partition_stats([expr_column]).to_pylist()
    return {r["partition"] for r in stats if test(r[expr_column]["min"], r[expr_column]["max"])}


@pytest.mark.parametrize("name", TABLES)
def test_partition_stats_prune_soundly(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    table = open_table(root, source="hudi")
    credited = 0
    for expr, where, params in PREDICATES:
        result = table.prune(expr)
        assert groups_holding(root, where, params) <= {file_group(f) for f in result.files}, (
            expr,
            result.explain(),
        )
        credited += result.removed_by_source.get(SOURCE, 0)
    assert credited > 0
    # With this project's own index built too, both answer; still sound.
    table.build(progress=False)
    both = open_table(root)
    for expr, where, params in PREDICATES:
        assert groups_holding(root, where, params) <= {file_group(f) for f in both.prune(expr).files}, expr


def test_a_partition_ruled_out_drops_all_its_files_without_column_stats(
    copy_table: Callable[[str], Path],
) -> None:
    root = copy_table("v9_txns_simple_meta")
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", "column_stats")
    out = _ruled_out_partitions(root, "amount", lambda lo, hi: hi <= Decimal("5000"))
    assert out  # some partition holds no amount above 5000
    result = open_table(root).prune(col("amount") > Decimal("5000"))
    listing = open_table(root).reader.listing().files
    expected = {f.path for f in listing if f.partition not in out}
    assert set(result.files) == {str(root / p) for p in expected}
    assert result.removed_by_source == {SOURCE: len(listing) - len(expected)}
    assert any("partition_stats partition" in n for n in result.notes())
    assert groups_holding(root, "amount > ?", [Decimal("5000")]) <= {file_group(f) for f in result.files}


def test_partition_stats_being_built_or_behind_are_not_used(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", "partition_stats")
    result = open_table(root).prune(col("amount") > Decimal("5000"))
    assert SOURCE not in result.removed_by_source
    assert result.kept < result.total  # column_stats still answers
    assert any("partition_stats partition is still being built" in n for n in result.notes())

    root = copy_table("v9_txns_complex_meta")
    timeline = root / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    latest = latest_commit(root)
    for p in timeline.iterdir():
        if p.name.startswith(latest) and re.fullmatch(r"\d+_\d+\.\w+", p.name):
            p.unlink()
    result = open_table(root).prune(col("amount") > Decimal("5000"))
    assert SOURCE not in result.removed_by_source
    assert any("partition_stats partition is not used (behind" in n for n in result.notes())
    assert groups_holding(root, "amount > ?", [Decimal("5000")]) <= {file_group(f) for f in result.files}


def _partition_record(root: Path, partition: str, column: str, **kw: object) -> dict[str, object]:
    (key,) = partition_stats_keys(pa.array([column]), pa.array([partition])).to_pylist()
    return column_stats_record(key, partition, column, record_type=6, **kw)  # type: ignore[arg-type]


def test_counts_and_tombstones_keep_partitions(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    mdt = HudiMetadataTable(root)
    group = mdt.layout.slices("partition_stats")[0].file_id
    before = open_table(root, source="hudi").prune(col("merchant_name").is_null())
    assert before.removed_by_source.get(SOURCE, 0) > 0
    stats = {r["partition"]: r for r in mdt.partition_stats(["merchant_name"]).to_pylist()}
    clean = sorted(p for p, r in stats.items() if r["merchant_name"]["null_count"] == 0)
    assert clean and "region=eu" in clean
    # A record with nulls merges in (counts summed): the partition may hold a null now.
    nulls = _partition_record(
        root,
        "region=eu",
        "merchant_name",
        min_value=("StringWrapper", "A"),
        max_value=("StringWrapper", "B"),
        counts=(2, 2, 1, 1),
    )
    # Its amount statistics deleted: unknown, so its files stay for amount predicates.
    tomb = _partition_record(root, "region=eu", "amount", min_value=None, max_value=None, deleted=True)
    append_log(root, "partition_stats", group, latest_commit(root), [nulls, tomb])
    after = {
        r["partition"]: r
        for r in HudiMetadataTable(root).partition_stats(["merchant_name", "amount"]).to_pylist()
    }
    assert after["region=eu"]["merchant_name"]["null_count"] == 2 and after["region=eu"]["amount"] is None

    table = open_table(root, source="hudi")
    listing = table.reader.listing().files
    eu = sum(1 for f in listing if f.partition == "region=eu")
    result = table.prune(col("merchant_name").is_null())
    assert result.removed_by_source.get(SOURCE, 0) == before.removed_by_source[SOURCE] - eu
    assert groups_holding(root, "merchant_name IS NULL", []) <= {file_group(f) for f in result.files}
    result = table.prune(col("amount") > Decimal("100000"))
    assert result.removed_by_source.get(SOURCE, 0) == len(listing) - eu


def test_files_all_ruled_out_by_partition_need_no_file_statistics(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    for base in (root / ".hoodie" / "metadata" / "column_stats").glob("*.hfile"):
        base.write_bytes(b"not an HFile")  # column_stats unreadable from here on
    table = open_table(root, source="hudi")
    none = table.prune(col("amount") > Decimal("1000000"))
    assert none.kept == 0 and none.removed_by_source == {SOURCE: none.total}
    assert not any("column_stats" in n for n in none.notes())  # never read
    some = table.prune(col("amount") > Decimal("5000"))
    assert 0 < some.kept < some.total
    assert any("column_stats" in n for n in some.notes())  # read, and found unreadable
    assert groups_holding(root, "amount > ?", [Decimal("5000")]) <= {file_group(f) for f in some.files}
