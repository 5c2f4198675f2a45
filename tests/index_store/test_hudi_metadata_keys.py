"""The metadata table's hashed keys computed here (``hudi_metadata.index_ids``) equal the keys Hudi
wrote in every real table's HFiles, and the hashes equal the reference ones."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.index_ids import (
    column_stats_keys,
    file_ids,
    md5,
    partition_stats_keys,
    xxhash64,
)

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
