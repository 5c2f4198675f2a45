"""Tagging confirms candidates from a value index on the key column instead of reading the data."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import index_store
from index_store.secondary.tagging import key_values
from index_store.tagging import tag_stats


def _table(root: Path, kind: str) -> index_store.IndexedTable:
    rng = np.random.default_rng(7)
    ids = rng.permutation(12_000) - 3_000  # negative keys too
    for i in range(4):
        part = ids[i * 3_000 : (i + 1) * 3_000]
        column = pa.array([f"k{x}" for x in part]) if kind == "string" else pa.array(part, pa.int64())
        pq.write_table(pa.table({"id": column, "v": pa.array(part)}), root / f"f{i}.parquet")
    t = index_store.open_table(root)
    t.build(record_key="id", progress=False)
    return t


@pytest.mark.parametrize("kind", ["string", "int"])
def test_tag_with_value_index_equals_reading_the_data(tmp_path: Path, kind: str) -> None:
    t = _table(tmp_path, kind)
    spell = (lambda x: f"k{x}") if kind == "string" else str
    present = [spell(x) for x in range(-3_000, 9_000, 37)]
    absent = [spell(x) for x in range(9_000, 9_300)]
    odd = ["-0", "007", "+5", "99999999999999999999", " "] if kind == "int" else ["k", "K1", " "]
    keys = present + absent + odd
    by_data = t.tag(keys)
    assert tag_stats(by_data).bytes_read > 0
    t.create_index("id")
    t.build_index(progress=False)
    by_index = t.tag(keys)
    assert by_index["file"].to_pylist() == by_data["file"].to_pylist()
    assert by_index["file"].null_count == len(absent) + len(odd)
    assert tag_stats(by_index).bytes_read == 0  # no data file's key column was read


def test_files_without_index_file_are_read(tmp_path: Path) -> None:
    t = _table(tmp_path, "string")
    t.create_index("id")
    t.build_index(progress=False)
    pq.write_table(
        pa.table({"id": pa.array(["new1", "new2"]), "v": pa.array([1, 2])}), tmp_path / "f9.parquet"
    )
    t.sync()  # the new file has no index file yet: its pairs are confirmed by reading it
    tags = t.tag(["new1", "k5", "nope"])
    assert os.path.basename(tags["file"][0].as_py()) == "f9.parquet"
    assert tags["file"][2].as_py() is None
    assert tag_stats(tags).bytes_read > 0


def test_key_values_spell_keys_as_java_does() -> None:
    keys = pa.array(["12", "-7", "0", "-0", "007", "+5", "1e3", "9223372036854775807", "9223372036854775808"])
    converted = key_values(keys, pa.int64())
    assert converted is not None
    values, ok = converted
    assert ok.tolist() == [True, True, True, False, False, False, False, True, False]
    assert values.to_pylist()[:3] == [12, -7, 0]
    small = key_values(pa.array(["127", "128", "-128"]), pa.int8())
    assert small is not None
    ok8 = small[1]
    assert ok8.tolist() == [True, False, True]
    assert key_values(pa.array(["2024-01-01"]), pa.date32()) is None
