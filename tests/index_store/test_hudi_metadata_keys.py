"""The metadata table's hashed keys computed here (``hudi_metadata.index_ids``) equal the keys Hudi
wrote in every real table's HFiles, and the hashes equal the reference ones."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi_metadata_writer import append_log, column_stats_record

from index_store.errors import HFileCorruptError
from index_store.hfile import HFileReader
from index_store.hudi_log import read_log_file
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.index_ids import (
    column_stats_keys,
    file_ids,
    md5,
    partition_stats_keys,
    xxhash64,
)
from index_store.tables.hudi import HudiTable

META_TABLES = [
    "v9_txns_complex_meta",
    "v9_txns_nonpart_meta",
    "v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_meta",
]
TEXTS = ["", "a", "abc", "region=us", "x" * 31, "y" * 32, "z" * 33, "é€😀" * 20, "k" * 200]


def test_xxhash64_reference_values() -> None:
    # XXH64's published values: "" and "a" with seed 0, "abc" with seed 0.
    got = xxhash64(pa.array(["", "a", "abc"]), seed=np.uint64(0))
    assert [hex(int(v)) for v in got] == ["0xef46db3751d8e999", "0xd24ec4f1a98c6e5b", "0x44bc2cf5ad770999"]


def test_md5_and_file_ids_equal_hashlib() -> None:
    digests = md5(pa.array(TEXTS))
    assert [bytes(d) for d in digests] == [hashlib.md5(t.encode()).digest() for t in TEXTS]
    expected = [base64.b64encode(hashlib.md5(t.encode()).digest()).decode() for t in TEXTS]
    assert file_ids(pa.array(TEXTS)).to_pylist() == expected


@pytest.mark.parametrize("name", META_TABLES)
def test_computed_keys_equal_the_stored_ones(name: str, hudi_tables: dict[str, Path]) -> None:
    mdt = HudiMetadataTable(hudi_tables[name])
    raw = mdt._raw("column_stats", "column_stats").filter(pc.invert(pc.field("removed")))
    listed = mdt.files(all_versions=True)
    at = pc.index_in(raw["file_name"], value_set=listed["file_name"])
    assert at.null_count == 0 and raw.num_rows > 100
    keys = column_stats_keys(raw["column_name"], listed["partition"].take(at), raw["file_name"])
    assert keys.to_pylist() == raw["key"].to_pylist()
    if "partition_stats" in mdt.partitions().available:
        raw = mdt._raw("partition_stats", "partition_stats").filter(pc.invert(pc.field("removed")))
        partitions = pc.if_else(pc.equal(raw["file_name"], "."), "", raw["file_name"])
        assert raw.num_rows > 100
        assert partition_stats_keys(raw["column_name"], partitions).to_pylist() == raw["key"].to_pylist()


def test_statistics_of_some_columns_read_only_their_blocks(copy_table: Callable[[str], Path]) -> None:
    """Records of another column fill a log block of many HFile data blocks; those blocks are
    then broken (their magic overwritten): reading ``amount`` never touches them, reading every
    column does and fails."""
    root = copy_table("v9_txns_simple_meta")
    mdt = HudiMetadataTable(root)
    before = mdt.column_stats(["amount", "txn_ts"])
    live = mdt.files().to_pylist()[0]
    names = [f"fake-{i:04d}.parquet" for i in range(1500)]
    keys = column_stats_keys(
        pa.array(["zz_other"] * len(names)), pa.array([live["partition"]] * len(names)), pa.array(names)
    ).to_pylist()
    records = [
        column_stats_record(k, n, "zz_other", ("IntWrapper", 1), ("IntWrapper", 2))
        for k, n in zip(keys, names, strict=True)
    ]
    group = mdt.layout.slices("column_stats")[0].file_id
    latest = HudiTable(root).timeline().latest_completed_commit()
    assert latest is not None
    path = append_log(root, "column_stats", group, latest, records, block_size=1024)
    (block,) = read_log_file(str(path))
    reader = HFileReader(block.content)
    offsets = reader._leaf_entries().offsets
    assert len(offsets) > 10
    data = bytearray(path.read_bytes())
    start = bytes(data).index(block.content)
    for offset in offsets[1:-1]:  # every block but the two a lookup of another prefix may touch
        data[start + int(offset) : start + int(offset) + 8] = b"XXXXXXXX"
    path.write_bytes(bytes(data))

    again = HudiMetadataTable(root)
    assert again.column_stats(["amount", "txn_ts"]).to_pylist() == before.to_pylist()
    with pytest.raises(HFileCorruptError):
        again.column_stats()
