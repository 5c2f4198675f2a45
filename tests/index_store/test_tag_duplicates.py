"""A key in several live files is tagged as Hudi's bloom index tags it, with every location (one
row per (key, file); ``on_duplicate="error"`` refuses instead), by ranges and blooms and by the
record index, which keeps every location of a key through commits and compaction. Empty keys are
refused as Hudi's key generators refuse them. The oracle is DuckDB reading every live file."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from index_store import DuplicateKeyError, IndexedTable, RecordKeyError, open_table
from index_store.partitions import read_record_index
from index_store.partitions.record_index import lookup_record_keys
from index_store.tagging import tag_stats

METHODS: list[Literal["bloom", "record"]] = ["bloom", "record"]
TWICE = ["v9_timebasedkeygen_nonhivestyle", "v9_timebasedkeygen_epochmillis"]  # TXN-001 in two files


def _holders(t: IndexedTable) -> dict[tuple[str, str], set[str]]:
    """(key, partition) -> the live files holding it, read by DuckDB."""
    by_path = {os.path.join(t.root, f.path): f.partition for f in t.reader.list_files()}
    listing = ", ".join(f"'{p}'" for p in by_path)
    rows = duckdb.sql(
        f"SELECT _hoodie_record_key, filename FROM read_parquet([{listing}], filename = true, "
        "hive_partitioning = false)"
    ).fetchall()
    out: dict[tuple[str, str], set[str]] = {}
    for key, name in rows:
        out.setdefault((key, by_path[os.path.normpath(name)]), set()).add(os.path.normpath(name))
    return out


def _rows(result: pa.Table) -> list[tuple[str, str | None]]:
    return [
        (k, None if f is None else os.path.normpath(f))
        for k, f in zip(result["key"].to_pylist(), result["file"].to_pylist(), strict=True)
    ]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", TWICE)
def test_a_key_in_two_live_files_of_a_real_hudi_table_is_tagged_in_both(
    name: str, method: Literal["auto", "bloom", "record"], hudi_tables: dict[str, Path], tmp_path: Path
) -> None:
    t = open_table(hudi_tables[name], index_path=tmp_path / "idx")
    t.build(record_index=True, progress=False)
    holders = _holders(t)
    (partition,) = [p for (k, p), files in holders.items() if k == "TXN-001" and len(files) == 2]
    two = holders[("TXN-001", partition)]
    other = next(k for (k, p), files in holders.items() if len(files) == 1 and k != "TXN-001")

    for partitions in (None, [partition, partition, partition, partition]):
        keys = [other, "TXN-001", "TXN-404", "TXN-001"]
        if partitions is not None:
            partitions[0] = next(p for (k, p) in holders if k == other)
        result = t.tag(keys, partitions, using=method)
        got = _rows(result)
        assert [k for k, _ in got] == [other, "TXN-001", "TXN-001", "TXN-404", "TXN-001", "TXN-001"]
        assert {f for k, f in got[1:3]} == two and {f for k, f in got[4:]} == two
        assert got[1:3] == got[4:]  # a key's files in one order
        assert got[3] == ("TXN-404", None)
        stats = tag_stats(result)
        assert (stats.keys, stats.updates, stats.inserts, stats.several_files) == (4, 3, 1, 2)
        with pytest.raises(DuplicateKeyError, match=r"'TXN-001'.*on_duplicate='all'"):
            t.tag(keys, partitions, using=method, on_duplicate="error")
    # The strict mode still tags a batch without such keys.
    assert t.tag([other], using=method, on_duplicate="error")["file"].null_count == 0


def test_the_record_index_keeps_every_location_of_a_key(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"id": ["1", "2", "3"]}), root / "a.parquet")
    pq.write_table(pa.table({"id": ["3", "3", "4"]}), root / "b.parquet")  # twice in one file: one location
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)

    def locations(key: str) -> set[str]:
        rows = read_record_index(t.index_root, t.snapshot().live["record_index"])
        loaded = t._load()
        where = dict(zip(loaded.file_idx.tolist(), loaded.paths.to_pylist(), strict=True))
        found = lookup_record_keys(t.index_root, t.snapshot().live["record_index"], pa.array([key]))
        assert found.file_idx.size == pc.sum(pc.equal(rows["key"], key)).as_py()  # every entry found
        return {where[i] for i in found.file_idx.tolist() if i in where}

    assert locations("3") == {"a.parquet", "b.parquet"}
    pq.write_table(pa.table({"id": ["3", "9"]}), root / "c.parquet")  # a third copy, by a later commit
    t.sync()
    assert locations("3") == {"a.parquet", "b.parquet", "c.parquet"}
    t.compact()
    assert locations("3") == {"a.parquet", "b.parquet", "c.parquet"}
    result = t.tag(["3"], using="record")
    assert [os.path.basename(f) for f in result["file"].to_pylist()] == [
        "a.parquet",
        "b.parquet",
        "c.parquet",
    ]
    assert _rows(result) == _rows(t.tag(["3"], using="bloom"))
    os.remove(root / "b.parquet")  # gone from disk: never named, and dropped by the next sync
    assert [os.path.basename(f) for f in t.tag(["3"], using="record")["file"].to_pylist()] == [
        "a.parquet",
        "c.parquet",
    ]
    t.sync()
    t.compact()
    assert locations("3") == {"a.parquet", "c.parquet"}


@pytest.mark.parametrize("method", METHODS)
def test_many_keys_in_many_files_equal_duckdb(
    tmp_path: Path, method: Literal["auto", "bloom", "record"]
) -> None:
    """Random keys repeated across files and in the batch: each input key's rows are exactly the
    files DuckDB finds it in (one null row when none), in input order."""
    rng = np.random.default_rng(4)
    root = tmp_path / "t"
    root.mkdir()
    for i in range(8):
        ids = rng.choice(400, 120, replace=False)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), root / f"f{i}.parquet")
    t = open_table(root)
    t.build(record_key="id", record_index=True, progress=False)
    holders: dict[str, set[str]] = {}
    for key, name in duckdb.sql(
        f"SELECT id::VARCHAR, filename FROM read_parquet('{root}/*.parquet', filename = true)"
    ).fetchall():
        holders.setdefault(key, set()).add(os.path.normpath(name))
    keys = [str(k) for k in rng.integers(0, 450, 300)]
    result = t.tag(keys, using=method)
    got = _rows(result)
    expected_keys = [k for k in keys for _ in range(max(len(holders.get(k, ())), 1))]
    assert [k for k, _ in got] == expected_keys
    by_key: dict[str, list[str | None]] = {}
    position = 0
    for k in keys:
        n = max(len(holders.get(k, ())), 1)
        files = [f for _, f in got[position : position + n]]
        expected: set[str | None] = set(holders.get(k, ())) or {None}
        assert set(files) == expected, k
        assert by_key.setdefault(k, files) == files  # the same order each time
        position += n
    stats = tag_stats(result)
    assert stats.several_files == sum(1 for k in keys if len(holders.get(k, ())) > 1)
    assert stats.updates + stats.inserts == len(keys)


def test_on_duplicate_must_be_all_or_error(tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": ["1"]}), tmp_path / "a.parquet")
    t = open_table(tmp_path)
    t.build(record_key="id", progress=False)
    with pytest.raises(ValueError, match="on_duplicate must be 'all' or 'error', not 'first'"):
        t.tag(["1"], on_duplicate="first")  # type: ignore[arg-type]


@pytest.mark.parametrize("method", METHODS)
def test_empty_keys_are_refused_as_hudi_refuses_them(
    tmp_path: Path, method: Literal["auto", "bloom", "record"], copy_table: Callable[[str], Path]
) -> None:
    """``tag([''])`` was an insert, while an empty key field is refused: both are errors now."""
    pq.write_table(pa.table({"id": ["1", "2"], "n": [1, 2]}), tmp_path / "a.parquet")
    t = open_table(tmp_path)
    t.build(record_key="id", record_index=True, progress=False)
    with pytest.raises(
        RecordKeyError, match="1 of 3 record keys are empty: a Hudi record key is never empty"
    ):
        t.tag(["1", "", "3"], using=method)
    with pytest.raises(RecordKeyError, match="empty"):
        t.tag(pa.table({"id": ["1", ""]}), using=method)
    with pytest.raises(RecordKeyError, match="record keys are empty"):
        t.tag(pa.chunked_array([["1"], [""]]), using=method)
    hudi = open_table(copy_table("v9_txns_simple_meta"))
    hudi.build(record_index=True, progress=False)
    with pytest.raises(RecordKeyError, match="record keys are empty"):
        hudi.tag([""], ["region=us"], using=method)
