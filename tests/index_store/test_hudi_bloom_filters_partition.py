"""Hudi's ``bloom_filters`` metadata partition (``hudi_source.blooms``): the real tables have none,
so the tests write one as Hudi's bloom index does (a filter of each base file's record keys, keyed
by the hashed partition and file name) and check the reader's point lookups and the pruning of
= and IN on the record key: sound against DuckDB over the hudi-rs snapshot, credited by explain."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import file_group, groups_holding
from hudi_metadata_writer import append_log

from hudi_expr import Expression, col
from index_store import open_table
from index_store.hudi_bloom.filter import HudiBloomFilter
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.index_ids import bloom_filter_keys
from index_store.tables.hudi import HudiTable

hudi = pytest.importorskip("hudi")

SOURCE = "Hudi metadata table (bloom_filters)"


def write_bloom_partition(root: Path, *, skip: int | None = None, broken: int | None = None) -> list[dict]:
    """A ``bloom_filters`` partition of one file group holding a filter of every live base file
    (but file ``skip``; file ``broken``'s filter is not base64), declared in hoodie.properties."""
    mdt = HudiMetadataTable(root)
    bases = [f for f in mdt.files().to_pylist() if f["file_name"].endswith(".parquet")]
    keys = bloom_filter_keys(
        pa.array([f["partition"] for f in bases]), pa.array([f["file_name"] for f in bases])
    ).to_pylist()
    latest = HudiTable(root).timeline().latest_completed_commit()
    assert latest is not None
    records = []
    for i, (f, key) in enumerate(zip(bases, keys, strict=True)):
        if i == skip:
            continue
        bloom = HudiBloomFilter.create(100, 0.0001)
        bloom.add_all(pq.read_table(root / f["path"], columns=["_hoodie_record_key"])["_hoodie_record_key"])
        text = b"%%% not base64" if i == broken else bloom.to_serialized().encode()
        records.append(
            {
                "key": key,
                "type": 4,
                "BloomFilterMetadata": {
                    "type": bloom.type_code,
                    "timestamp": latest,
                    "bloomFilter": text,
                    "isDeleted": False,
                },
            }
        )
    (root / ".hoodie" / "metadata" / "bloom_filters").mkdir()
    append_log(root, "bloom_filters", "bloom-filters-0000-0", latest, records, block_size=512)
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(
        text.replace("hoodie.table.metadata.partitions=", "hoodie.table.metadata.partitions=bloom_filters,")
    )
    return bases


def test_point_lookups_equal_the_whole_partition(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    bases = write_bloom_partition(root, skip=1)
    mdt = HudiMetadataTable(root)
    whole = mdt.bloom_filters().sort_by("file_name")
    assert whole.num_rows == len(bases) - 1
    asked = pa.table(
        {"partition": [f["partition"] for f in bases[:3]], "file_name": [f["file_name"] for f in bases[:3]]}
    )
    some = mdt.bloom_filters(asked).sort_by("file_name")
    assert (
        some.to_pylist() == whole.filter(pa.compute.is_in(whole["file_name"], asked["file_name"])).to_pylist()
    )
    assert some.num_rows == 2  # file 1 has none


CASES: list[tuple[str, Expression, str, list[object]]] = [
    ("v9_txns_simple_meta", col("txn_id") == "TXN-005", "txn_id = ?", ["TXN-005"]),
    (
        "v9_txns_simple_meta",
        col("txn_id").isin(["TXN-003", "TXN-0105", "TXN-018"]),
        "txn_id IN (?, ?, ?)",
        ["TXN-003", "TXN-0105", "TXN-018"],
    ),
    ("v9_txns_simple_meta", col("_hoodie_record_key") == "TXN-0105", "_hoodie_record_key = ?", ["TXN-0105"]),
    (
        "v9_txns_complex_meta",
        col("_hoodie_record_key") == "txn_id:TXN-005,account_id:ACC-E",
        "_hoodie_record_key = ?",
        ["txn_id:TXN-005,account_id:ACC-E"],
    ),
    (
        "mor_avro_v9_txns_simple_meta",
        col("txn_id").isin(["TXN-002", "TXN-0105"]),
        "txn_id IN (?, ?)",
        ["TXN-002", "TXN-0105"],
    ),
    ("mor_avro_v9_txns_simple_meta", col("txn_id") != "TXN-002", "txn_id <> ?", ["TXN-002"]),
]


@pytest.mark.parametrize("name", sorted({c[0] for c in CASES}))
def test_key_predicates_prune_soundly_and_are_credited(name: str, copy_table: Callable[[str], Path]) -> None:
    root = copy_table(name)
    write_bloom_partition(root, skip=0)
    table = open_table(root, source="hudi")
    credited = 0
    for _, expr, where, params in (c for c in CASES if c[0] == name):
        result = table.prune(expr)
        assert groups_holding(root, where, params) <= {file_group(f) for f in result.files}, (
            expr,
            result.explain(),
        )
        credited += result.removed_by_source.get(SOURCE, 0)
        if result.removed_by_source.get(SOURCE):
            assert SOURCE in result.explain()
    assert credited > 0
    # The same with this project's own index built: both answer, still sound.
    table.build(progress=False)
    both = open_table(root)
    for _, expr, where, params in (c for c in CASES if c[0] == name):
        assert groups_holding(root, where, params) <= {file_group(f) for f in both.prune(expr).files}, expr


def test_a_file_without_a_filter_or_with_a_broken_one_is_kept(copy_table: Callable[[str], Path]) -> None:
    root = copy_table("v9_txns_simple_meta")
    bases = write_bloom_partition(root, skip=0)
    props = root / ".hoodie" / "hoodie.properties"  # statistics being built: the filters answer alone
    props.write_text(
        props.read_text() + "hoodie.table.metadata.partitions.inflight=column_stats,partition_stats\n"
    )
    absent = open_table(root, source="hudi").prune(col("txn_id") == "NO-SUCH-KEY")
    assert {Path(f).name for f in absent.files} == {bases[0]["file_name"]}
    assert absent.removed_by_source == {SOURCE: len(bases) - 1}

    root = copy_table("v9_txns_nonpart_meta")
    write_bloom_partition(root, broken=0)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text() + "hoodie.table.metadata.partitions.inflight=column_stats\n")
    result = open_table(root, source="hudi").prune(col("txn_id") == "NO-SUCH-KEY")
    assert result.kept == result.total
    assert any("bloom_filters partition does not read" in n for n in result.notes())
