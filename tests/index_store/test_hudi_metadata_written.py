"""The metadata table with files the tests write into copies of the real tables: merges
(tombstones, delete blocks, tight bounds), and bad input (out of step, inflight partitions,
statistics of files no longer live, record index entries pointing at replaced file groups),
which must end in a clear error or a fallback that keeps files, never a skipped match."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hudi_metadata_writer import append_log, column_stats_record, latest_commit, set_table_property

from index_store.errors import MetadataOutOfStepError, MetadataPartitionUnavailableError, MetadataTableError
from index_store.hfile import HFileReader
from index_store.hudi_log import read_log_file
from index_store.hudi_metadata import HudiMetadataTable
from index_store.hudi_metadata.routing import file_group_indexes
from index_store.hudi_metadata.source import slice_cells
from index_store.tables.hudi import HudiTable

TABLE = "v9_txns_simple_meta"


@pytest.fixture
def root(copy_table: Callable[[str], Path]) -> Path:
    return copy_table(TABLE)


def _file_group(mdt: HudiMetadataTable, partition: str, key: str | None = None) -> str:
    """The metadata file group holding ``key`` (Hudi hashes each key to one), else the first."""
    slices = mdt.layout.slices(partition)
    for piece in slices if key is not None else ():
        if any(key in cells.keys for cells in slice_cells(piece, mdt.layout.valid_instant)):
            return piece.file_id
    return slices[0].file_id


def _stats_key(mdt: HudiMetadataTable, file_name: str, column: str) -> str:
    raw = mdt._raw("column_stats", "column_stats")
    rows = raw.filter(pc.and_(pc.equal(raw["file_name"], file_name), pc.equal(raw["column_name"], column)))
    return str(rows["key"][0].as_py())


def test_a_tombstone_leaves_the_file_without_statistics(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    live = mdt.files()["file_name"].to_pylist()
    target = live[0]
    before = {r["file_name"]: r for r in mdt.column_stats(["amount", "txn_ts"]).to_pylist()}
    key = _stats_key(mdt, target, "amount")
    record = column_stats_record(key, target, "amount", None, None, deleted=True)
    append_log(root, "column_stats", _file_group(mdt, "column_stats", key), latest_commit(root), [record])
    after = {
        r["file_name"]: r for r in HudiMetadataTable(root).column_stats(["amount", "txn_ts"]).to_pylist()
    }
    assert after[target]["amount"] is None  # unknown: never prunes
    assert after[target]["txn_ts"] == before[target]["txn_ts"]
    assert {n: r for n, r in after.items() if n != target} == {n: r for n, r in before.items() if n != target}


def test_statistics_of_a_file_no_longer_live_are_left_out(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    live = set(mdt.files()["file_name"].to_pylist())
    stale = sorted(set(mdt.files(all_versions=True)["file_name"].to_pylist()) - live)[0]
    gone = "00000000-0000-0000-0000-000000000000-0_0-1-1_20260307162434124.parquet"
    records = [
        column_stats_record(f"stale-{i}", name, "amount", ("LongWrapper", 1), ("LongWrapper", 2))
        for i, name in enumerate((stale, gone))
    ]
    append_log(root, "column_stats", _file_group(mdt, "column_stats"), latest_commit(root), records)
    stats = HudiMetadataTable(root).column_stats()
    assert set(stats["file_name"].to_pylist()) == live


def test_merged_statistics_widen_until_a_tight_record(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    target = mdt.files()["file_name"][0].as_py()
    key = _stats_key(mdt, target, "txn_ts")
    group = _file_group(mdt, "column_stats", key)
    base = mdt.column_stats(["txn_ts"]).to_pylist()
    (old,) = [r["txn_ts"] for r in base if r["file_name"] == target]
    wider = column_stats_record(
        key,
        target,
        "txn_ts",
        ("LongWrapper", old["min"] - 5),
        ("LongWrapper", old["max"] - 1),
        value_type=4,
        counts=(3, 1, 10, 20),
    )
    append_log(root, "column_stats", group, latest_commit(root), [wider], version=9)
    (merged,) = [
        r["txn_ts"]
        for r in HudiMetadataTable(root).column_stats(["txn_ts"]).to_pylist()
        if r["file_name"] == target
    ]
    assert (merged["min"], merged["max"]) == (old["min"] - 5, old["max"])
    assert merged["value_count"] == old["value_count"] + 3 and merged["null_count"] == old["null_count"] + 1
    tight = column_stats_record(
        key, target, "txn_ts", ("LongWrapper", 7), ("LongWrapper", 8), value_type=4, tight=True
    )
    append_log(root, "column_stats", group, latest_commit(root), [tight], version=10)
    (replaced,) = [
        r["txn_ts"]
        for r in HudiMetadataTable(root).column_stats(["txn_ts"]).to_pylist()
        if r["file_name"] == target
    ]
    assert (replaced["min"], replaced["max"], replaced["value_count"], replaced["tight"]) == (7, 8, 1, True)


def test_a_delete_block_removes_record_index_keys(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    keys = mdt.record_index()["record_key"].to_pylist()
    gone = keys[0]
    append_log(
        root, "record_index", _file_group(mdt, "record_index", gone), latest_commit(root), deleted_keys=[gone]
    )
    after = HudiMetadataTable(root)
    assert after.record_index()["record_key"].to_pylist() == keys[1:]
    assert after.record_index(keys[:3])["record_key"].to_pylist() == keys[1:3]


def test_a_record_index_entry_in_a_replaced_file_group_is_an_error(root: Path) -> None:
    table = HudiTable(root)
    replaced = sorted(table.timeline().replaced_file_groups())
    assert replaced
    partition, file_id = replaced[0]
    mdt = HudiMetadataTable(root)
    keys = mdt.record_index()["record_key"].to_pylist()
    uuid, index = file_id.rsplit("-", 1)
    import uuid as uuid_module

    value = uuid_module.UUID(uuid).int
    high, low = value >> 64, value & ((1 << 64) - 1)
    to_signed = lambda v: v - (1 << 64) if v >= 1 << 63 else v  # noqa: E731
    record = {
        "key": keys[0],
        "type": 5,
        "recordIndexMetadata": {
            "partitionName": partition,
            "fileIdHighBits": to_signed(high),
            "fileIdLowBits": to_signed(low),
            "fileIndex": int(index),
            "fileId": "",
            "instantTime": 1772922289244,
            "fileIdEncoding": 0,
            "position": None,
        },
    }
    append_log(root, "record_index", _file_group(mdt, "record_index", keys[0]), latest_commit(root), [record])
    after = HudiMetadataTable(root)
    with pytest.raises(MetadataTableError, match=re.escape(file_id)):
        after.record_index()
    with pytest.raises(MetadataTableError, match="replaced or cleaned"):
        after.record_index([keys[0]])
    assert after.record_index(keys[1:])["record_key"].to_pylist() == keys[1:]  # other keys still answer


def test_a_secondary_index_tombstone_removes_the_entry(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    index = mdt.secondary_index("merchant_idx")
    pairs = list(zip(index["secondary_key"].to_pylist(), index["record_key"].to_pylist(), strict=True))
    secondary, record = next(p for p in pairs if p[0] is not None)
    key = f"{secondary}${record}"
    tombstone = {"key": key, "type": 7, "SecondaryIndexMetadata": {"isDeleted": True}}
    escaped = {"key": "a\\$b\\\\$K-1", "type": 7, "SecondaryIndexMetadata": {"isDeleted": False}}
    null_key = {"key": "\0$K-2", "type": 7, "SecondaryIndexMetadata": {"isDeleted": False}}
    group = _file_group(mdt, "secondary_index_merchant_idx", key)
    append_log(
        root, "secondary_index_merchant_idx", group, latest_commit(root), [tombstone, escaped, null_key]
    )
    after = HudiMetadataTable(root).secondary_index("merchant_idx")
    got = set(zip(after["secondary_key"].to_pylist(), after["record_key"].to_pylist(), strict=True))
    assert got == (set(pairs) - {(secondary, record)}) | {("a$b\\", "K-1"), (None, "K-2")}
    assert any(s is None for s, _ in pairs)  # the real index holds a null merchant_name: "\0"


def _drop_instant(folder: Path, instant: str, completed_only: bool = True) -> None:
    names = [p for p in folder.iterdir() if p.name.startswith(instant)]
    for p in names:
        if not completed_only or re.fullmatch(r"\d+_\d+\.\w+", p.name):
            p.unlink()


def test_a_metadata_table_behind_its_data_table_is_refused(root: Path) -> None:
    latest = latest_commit(root)
    _drop_instant(root / ".hoodie" / "metadata" / ".hoodie" / "timeline", latest)
    mdt = HudiMetadataTable(root)
    assert not mdt.in_step_with(HudiTable(root))
    with pytest.raises(MetadataOutOfStepError, match=latest):
        mdt.files()
    with pytest.raises(MetadataOutOfStepError):
        mdt.record_index(["TXN-001"])
    assert HudiMetadataTable(root, require_in_step=False).files().num_rows  # read anyway, on request


def test_a_metadata_table_ahead_of_its_data_table_reads_as_hudi_does(root: Path) -> None:
    latest = latest_commit(root)
    _drop_instant(root / ".hoodie" / "timeline", latest)  # the data commit is now inflight
    mdt = HudiMetadataTable(root)
    table = HudiTable(root)
    assert not mdt.in_step_with(table)
    assert mdt.layout.step()[0] == "ahead"
    live = sorted((f.path, f.size) for f in table.list_files())
    files = mdt.files()
    assert list(zip(files["path"].to_pylist(), files["size"].to_pylist(), strict=True)) == live
    assert set(mdt.column_stats()["file_name"].to_pylist()) == {Path(p).name for p, _ in live}


def test_an_inflight_partition_is_not_read(root: Path) -> None:
    set_table_property(root, "hoodie.table.metadata.partitions.inflight", "column_stats")
    mdt = HudiMetadataTable(root)
    assert mdt.partitions().inflight == ("column_stats",)
    assert "column_stats" not in mdt.partitions().available
    with pytest.raises(MetadataPartitionUnavailableError, match="inflight"):
        mdt.column_stats()
    assert mdt.files().num_rows  # the other partitions still read
    with pytest.raises(MetadataPartitionUnavailableError, match="bloom_filters"):
        mdt.bloom_filters()


def test_no_metadata_table(root: Path) -> None:
    import shutil

    shutil.rmtree(root / ".hoodie" / "metadata")
    with pytest.raises(MetadataTableError, match="no metadata table"):
        HudiMetadataTable(root)


def test_bloom_filters_found_by_file(root: Path) -> None:
    import base64
    import hashlib

    import pyarrow.parquet as pq

    from index_store.hudi_bloom.filter import HudiBloomFilter

    mdt = HudiMetadataTable(root)
    live = mdt.files().to_pylist()
    partition_hash = base64.b64encode(b"\x01" * 8).decode()  # any 64-bit partition hash: found by file

    def key(name: str) -> str:
        return partition_hash + base64.b64encode(hashlib.md5(name.encode()).digest()).decode()

    records, keys_of = [], {}
    for f in live:
        keys = pq.read_table(root / f["path"], columns=["_hoodie_record_key"])["_hoodie_record_key"]
        bloom = HudiBloomFilter.create(100, 0.01)
        bloom.add_all(keys)
        keys_of[f["file_name"]] = keys
        records.append(
            {
                "key": key(f["file_name"]),
                "type": 4,
                "BloomFilterMetadata": {
                    "type": bloom.type_code,
                    "timestamp": latest_commit(root),
                    "bloomFilter": bloom.to_serialized().encode(),  # Hudi stores the base64 text
                    "isDeleted": False,
                },
            }
        )
    records.append({**records[0], "key": key("not-live.parquet")})
    tombstone = {
        **records[1],
        "BloomFilterMetadata": {**records[1]["BloomFilterMetadata"], "isDeleted": True},
    }
    folder = root / ".hoodie" / "metadata" / "bloom_filters"
    folder.mkdir()
    append_log(root, "bloom_filters", "bloom-filters-0000-0", latest_commit(root), records)
    append_log(root, "bloom_filters", "bloom-filters-0000-0", latest_commit(root), [tombstone], version=10)
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    assert "hoodie.table.metadata.partitions=column_stats," in text
    props.write_text(
        text.replace("hoodie.table.metadata.partitions=", "hoodie.table.metadata.partitions=bloom_filters,")
    )

    blooms = HudiMetadataTable(root).bloom_filters()
    names = [f["file_name"] for f in live]
    assert sorted(blooms["file_name"].to_pylist()) == sorted(names[:1] + names[2:])
    for row in blooms.to_pylist():
        assert row["partition"] == next(f["partition"] for f in live if f["file_name"] == row["file_name"])
        bloom = HudiBloomFilter.from_serialized(row["bloom_filter"], row["bloom_type"])
        assert bloom.might_contain(keys_of[row["file_name"]]).all()


def _ri_record(key: str, partition: str, file_id: str, position: int) -> dict[str, object]:
    return {
        "key": key,
        "type": 5,
        "recordIndexMetadata": {
            "partitionName": partition,
            "fileIdHighBits": None,
            "fileIdLowBits": None,
            "fileIndex": None,
            "fileId": file_id,
            "instantTime": 1772922289244,
            "fileIdEncoding": 1,  # the file id kept as a string
            "position": position,
        },
    }


def test_point_lookups_through_many_hfile_blocks(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    live = mdt.files().to_pylist()[0]
    file_id = live["file_name"].split("_")[0]
    # Keys Hudi's hash sends to the first file group (where they are written), as Hudi writes them.
    count = len(mdt.layout.slices("record_index"))
    candidates = pa.array([f"extra-{i:06d}" for i in range(count * 4000)])
    names = candidates.filter(pa.array(file_group_indexes(candidates, count) == 0)).to_pylist()[:3001]
    records = [_ri_record(k, live["partition"], file_id, i) for i, k in enumerate(names[:3000])]
    group = mdt.layout.slices("record_index")[0].file_id
    before = mdt.record_index().num_rows
    path = append_log(root, "record_index", group, latest_commit(root), records, block_size=2048)
    (block,) = read_log_file(str(path))
    assert HFileReader(block.content).trailer.data_index_levels > 1  # many blocks, a multi-level index
    append_log(root, "record_index", group, latest_commit(root), deleted_keys=[names[7]], version=10)
    after = HudiMetadataTable(root)
    full = after.record_index()
    assert full.num_rows == before + 2999
    wanted = [names[0], names[7], names[1500], names[2999], names[3000], "TXN-001"]
    got = {r["record_key"]: r for r in after.record_index(wanted).to_pylist()}
    assert sorted(got) == sorted(["TXN-001", names[0], names[1500], names[2999]])
    assert got[names[1500]] == {
        "record_key": names[1500],
        "partition": live["partition"],
        "file_id": file_id,
        "instant": "20260307162449244",
        "position": 1500,
    }


def test_a_rollback_block_undoes_a_metadata_block(root: Path) -> None:
    mdt = HudiMetadataTable(root)
    before = mdt.record_index()
    live = mdt.files().to_pylist()[0]
    file_id = live["file_name"].split("_")[0]
    group = _file_group(mdt, "record_index")
    latest = latest_commit(root)
    append_log(root, "record_index", group, latest, [_ri_record("extra-1", live["partition"], file_id, 1)])
    assert HudiMetadataTable(root).record_index(["extra-1"]).num_rows == 1
    append_log(root, "record_index", group, latest, rollback=latest, version=10)
    after = HudiMetadataTable(root).record_index()
    # the rollback undoes every block of that instant in the file group, the real ones too
    assert "extra-1" not in after["record_key"].to_pylist()
    assert after.num_rows <= before.num_rows
