"""Merge-on-read tables written by index_store.datagen.hudi_mor, read back by hudi-rs (the Hudi
project's own Rust reader, ``hudi.HudiTable``) and by this project's log reader
(``index_store.hudi_log``): the snapshot each returns must equal the one the writer computed from
its inputs, and the file slices hudi-rs lists the ones the writer says it wrote.

The project's reader rebuilds the snapshot from the base files and the log records its scan
keeps, merged here by the rule of ``hudi_merge.py`` written out plainly, one key at a time."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store.datagen.hudi_merge import AmbiguousMergeError
from index_store.datagen.hudi_mor import DeltaCommit, MorTable, write_mor_table
from index_store.hudi_bloom import HudiBloomFilter, footer_key_bounds
from index_store.hudi_log import (
    INSTANT,
    IS_DELETE,
    ORDERING_VALUE,
    RECORD_KEY,
    SEQUENCE,
    BlockFate,
    BlockType,
    DataRows,
    DeleteKeys,
    LogBlock,
    decode_block,
    read_log_file,
    scan_log_files,
    valid_instants,
)
from index_store.record_key import RecordKeySpec
from index_store.tables.hudi_timeline import HudiTimeline, read_properties

START = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
REGIONS = ("eu", "us", "apac")
VERSIONS = (6, 8, 9)


def rows(ids: list[int], version: int = 0, *, ts: int | None = None) -> pa.Table:
    """Rows of every type the writer takes, each column with nulls; ``version`` changes the
    values (an update), ``ts`` is the ordering value (default: ``version``)."""

    def pick(i: int, value: Any, every: int) -> Any:
        return None if (i + version) % every == 0 else value

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array([REGIONS[i % 3] for i in ids]),
            "ts": pa.array([version if ts is None else ts] * len(ids), pa.int64()),
            "qty": pa.array([pick(i, i * 10 + version, 4) for i in ids], pa.int32()),
            "price": pa.array([pick(i, i * 1.25 + version, 5) for i in ids], pa.float64()),
            "name": pa.array([pick(i, f"item {i} v{version}", 3) for i in ids], pa.string()),
            "day": pa.array([pick(i, EPOCH.date() + dt.timedelta(i + version), 6) for i in ids], pa.date32()),
            "at": pa.array(
                [pick(i, EPOCH + dt.timedelta(hours=i, seconds=version), 7) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "amount": pa.array(
                [pick(i, decimal.Decimal(f"{i}.{version:03d}"), 4) for i in ids], pa.decimal128(12, 3)
            ),
            "flag": pa.array([pick(i, (i + version) % 2 == 0, 5) for i in ids], pa.bool_()),
        }
    )


def by_id(table: pa.Table, column: str) -> dict[int, Any]:
    return dict(zip(table.column("id").to_pylist(), table.column(column).to_pylist(), strict=True))


# ----------------------------------------------------------------------------------- readers


def hudi_rs_rows(table: MorTable) -> pa.Table:
    batches = hudi.HudiTable(str(table.root)).read()
    if not batches:
        return table.schema.empty_table()
    return pa.Table.from_batches(batches).select(table.schema.names).sort_by(table.record_key)


def hudi_rs_slices(table: MorTable) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {
        (s.partition_path, s.file_id, s.base_file_name, tuple(sorted(s.log_file_names)))
        for s in hudi.HudiTable(str(table.root)).get_file_slices()
    }


def written_slices(table: MorTable) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {(s.partition, s.file_id, s.base_file or "", tuple(sorted(s.log_files))) for s in table.slices()}


def own_rows(table: MorTable) -> pa.Table:
    """The snapshot from the base files and the log records ``scan_log_files`` keeps, merged
    key by key: the greatest (ordering value, write position) wins (the base file's rows come
    first; without an ordering field, the last written), unless a delete comes after it."""
    field = table.ordering_field
    valid = valid_instants(HudiTimeline.load(str(table.timeline)))
    out: list[dict[str, Any]] = []
    for s in table.slices():
        folder = table.root / s.partition
        candidates: dict[str, tuple[Any, int, dict[str, Any]]] = {}
        last_delete: dict[str, int] = {}
        if s.base_file:
            for row in pq.read_table(folder / s.base_file).to_pylist():
                candidates[row["_hoodie_record_key"]] = (row[field] if field else 0, -1, row)
        scan = scan_log_files(
            [folder / name for name in s.log_files], valid, ordering_field=table.ordering_field
        )
        for record in scan.records.to_pylist():
            key, seq = record[RECORD_KEY], record[SEQUENCE]
            if record[IS_DELETE]:
                last_delete[key] = seq
                continue
            rank = (record[ORDERING_VALUE] if field else 0, seq, record)
            if key not in candidates or rank[:2] >= candidates[key][:2]:
                candidates[key] = rank
        for key, (_, seq, row) in candidates.items():
            if last_delete.get(key, -2) < seq:
                out.append({name: row[name] for name in table.schema.names})
    return pa.Table.from_pylist(out, schema=table.schema).sort_by(table.record_key)


def check(table: MorTable) -> None:
    """Both readers return the expected snapshot, and hudi-rs lists the slices written."""
    expected = table.expected
    assert expected.num_rows > 0
    assert own_rows(table).equals(expected)
    got = hudi_rs_rows(table)
    assert got.schema == expected.schema
    assert got.equals(expected)
    assert hudi_rs_slices(table) == written_slices(table)


def log_contents(table: MorTable, instant: str) -> tuple[list[tuple[int, int]], set[str]]:
    """The (id, ts) of the rows and the keys of the deletes in the log blocks of ``instant``,
    over every log file on disk, decoded one block at a time."""
    upserted: list[tuple[int, int]] = []
    deleted: set[str] = set()
    for group in table.file_groups:
        for log in group.log_files:
            for block in read_log_file(table.root / group.partition / log.name):
                assert isinstance(block, LogBlock)
                if block.instant != instant or block.type_code == BlockType.COMMAND:
                    continue
                content = decode_block(block)
                if isinstance(content, DataRows):
                    assert block.type_code == BlockType.AVRO_DATA
                    assert set(content.rows.column("_hoodie_file_name").to_pylist()) == {group.file_id}
                    upserted += by_id(content.rows, "ts").items()
                else:
                    assert isinstance(content, DeleteKeys)
                    assert set(content.deletes.column("partition_path").to_pylist()) == {group.partition}
                    deleted |= set(content.deletes.column("record_key").to_pylist())
    return sorted(upserted), deleted


# ----------------------------------------------------------------------------------- tables


def scenario(root: Path, version: int, hive_style: bool, partitioned: bool = True) -> MorTable:
    """Base files of 60 keys in 6 groups, then delta commits touching overlapping groups: updates,
    inserts to new base files and to existing logs, deletes of base keys and of keys inserted in
    logs, and a re-insert after a delete."""
    return write_mor_table(
        root,
        rows(list(range(60))),
        record_key="id",
        partition_by="region" if partitioned else None,
        ordering_field="ts",
        file_groups=6,
        cluster_by="qty",
        hive_style=hive_style,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(
                updates=rows(list(range(0, 60, 4)), 1), inserts=rows([100, 101, 102], 1), deletes=[5, 6]
            ),
            DeltaCommit(
                updates=rows(list(range(0, 60, 6)), 2), inserts=rows([103, 104, 105], 2), insert_into="logs"
            ),
            DeltaCommit(updates=rows([100, 7], 3), deletes=[103, 8, 0]),
            # re-inserts of deleted keys; 12 loses on its ordering value, 24 wins the tie
            DeltaCommit(
                inserts=rows([5, 103], 4),
                updates=pa.concat_tables([rows([12], 7, ts=1), rows([24], 8, ts=2)]),
            ),
        ],
    )


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("hive_style", [True, False])
def test_partitioned_tables_read_as_written(tmp_path: Path, version: int, hive_style: bool) -> None:
    table = scenario(tmp_path / "t", version, hive_style)
    check(table)
    live = set(table.expected.column("id").to_pylist())
    # 5 and 103 re-inserted, 6 written again by an update; 8 and 0 deleted after their updates
    assert {5, 6, 103, 100, 104} <= live and not {8, 0} & live
    price = by_id(table.expected, "price")  # i * 1.25 + version
    assert (price[12], price[24], price[100], price[5]) == (15 + 2, 30 + 8, 125 + 3, 6.25 + 4)
    folders = {p.name for p in table.root.iterdir() if p.is_dir() and p.name != ".hoodie"}
    assert folders == ({f"region={r}" for r in REGIONS} if hive_style else set(REGIONS))


@pytest.mark.parametrize("version", VERSIONS)
def test_non_partitioned_table(tmp_path: Path, version: int) -> None:
    table = scenario(tmp_path / "t", version, True, partitioned=False)
    check(table)
    assert {g.partition for g in table.file_groups} == {""}
    props = read_properties(str(table.root / ".hoodie"))
    assert "hoodie.table.partition.fields" not in props
    assert hudi.HudiTable(str(table.root)).get_partition_schema().names == []


@pytest.mark.parametrize("version", VERSIONS)
def test_log_blocks_hold_each_commits_changes(tmp_path: Path, version: int) -> None:
    table = scenario(tmp_path / "t", version, True)
    commits = [i.requested for i in table.instants if i.action == "deltacommit"]
    # commit 1: the updates go to logs, the new keys to new base files
    upserted, deleted = log_contents(table, commits[1])
    assert upserted == [(i, 1) for i in range(0, 60, 4)] and deleted == {"5", "6"}
    # commit 2: updates and inserts (into existing groups) all in logs
    upserted, deleted = log_contents(table, commits[2])
    assert upserted == sorted([(i, 2) for i in range(0, 60, 6)] + [(i, 2) for i in (103, 104, 105)])
    assert deleted == set()
    # commit 3 deletes a base key, a key inserted in a log (103) and one updated in logs (0)
    upserted, deleted = log_contents(table, commits[3])
    assert upserted == [(7, 3), (100, 3)] and deleted == {"103", "8", "0"}
    # commit 4 re-inserts deleted keys into the groups that held them
    upserted, _ = log_contents(table, commits[4])
    assert upserted == [(5, 4), (12, 1), (24, 2), (103, 4)]
    # every key stays in one file group, the re-inserted ones included
    holders: dict[str, set[int]] = {}
    for group in table.file_groups:
        files = [table.root / group.partition / log.name for log in group.log_files]
        keys = scan_log_files(files, lambda _instant: True).records.column(RECORD_KEY).to_pylist()
        if group.base_file:
            keys += pq.read_table(table.root / group.partition / group.base_file).column(2).to_pylist()
        for key in keys:
            holders.setdefault(key, set()).add(group.index)
    assert len(holders) == 66 and all(len(groups) == 1 for groups in holders.values())
    # the base files carry Hudi's footer: key bounds and a bloom filter holding every key
    for group in table.file_groups:
        if group.base_file:
            path = table.root / group.partition / group.base_file
            metadata = pq.read_metadata(path).metadata
            keys = pq.read_table(path, columns=["_hoodie_record_key"]).column(0)
            bounds = footer_key_bounds(metadata)
            assert bounds is not None and bounds[0] in keys.to_pylist() and bounds[1] in keys.to_pylist()
            bloom = HudiBloomFilter.from_footer(metadata)
            assert bloom is not None and bloom.might_contain(keys).all()


@pytest.mark.parametrize("version", VERSIONS)
def test_timeline_and_commit_metadata_as_hudi_rs_reads_them(tmp_path: Path, version: int) -> None:
    table = scenario(tmp_path / "t", version, True)
    hudi_table = hudi.HudiTable(str(table.root))
    assert hudi_table.is_mor
    timeline = hudi_table.get_timeline()
    completed = [i for i in table.instants if i.completed]
    assert [i.timestamp for i in timeline.get_completed_deltacommits()] == [i.requested for i in completed]
    for instant, ours in zip(timeline.get_completed_deltacommits(), completed, strict=True):
        metadata = json.loads(timeline.get_instant_metadata_in_json(instant))
        paths = {s["path"] for stats in metadata["partitionToWriteStats"].values() for s in stats}
        on_disk = {
            f"{g.partition}/{name}".lstrip("/")
            for g in table.file_groups
            for name in [g.base_file if g.base_instant == ours.requested else None]
            + [f.name for f in g.log_files if f.instant == ours.requested]
            if name
        }
        assert paths == on_disk
    assert json.loads(timeline.get_latest_avro_schema())["fields"][0]["name"] == "id"
    # the project's own readers of .hoodie/
    props = read_properties(str(table.root / ".hoodie"))
    assert props["hoodie.table.type"] == "MERGE_ON_READ" and props["hoodie.table.version"] == str(version)
    spec = RecordKeySpec.from_hudi_properties(props, None)
    assert spec is not None and spec.fields == ("id",)
    ours_timeline = HudiTimeline.load(str(table.timeline))
    assert sorted(ours_timeline.completed) == [i.requested for i in completed]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_pending_delta_commit_is_ignored(tmp_path: Path, version: int) -> None:
    table = scenario(tmp_path / "t", version, True)
    before = table.expected
    pending = table.append(
        DeltaCommit(updates=rows([1, 2, 100], 9), inserts=rows([200], 9), deletes=[3], state="pending")
    )
    assert pending.completed is None
    assert table.expected.equals(before)
    check(table)
    # its log files are on disk; version 6 slices list them (their blocks are skipped), 8+ do not
    pending_logs = [log for g in table.file_groups for log in g.log_files if log.instant == pending.requested]
    assert len(pending_logs) >= 2
    listed = {name for s in hudi_rs_slices(table) for name in s[3]}
    assert all((log.name in listed) == (version == 6) for log in pending_logs)
    valid = valid_instants(HudiTimeline.load(str(table.timeline)))
    for group in table.file_groups:
        for log in group.log_files:
            if log.instant == pending.requested:
                scan = scan_log_files([table.root / group.partition / log.name], valid, ordering_field="ts")
                assert {fate for _, _, fate in scan.fates()} == {BlockFate.NOT_VALID}
    with pytest.raises(ValueError, match="pending"):
        table.append(DeltaCommit(updates=rows([1], 10)))


@pytest.mark.parametrize("version", VERSIONS)
def test_a_rolled_back_delta_commit_is_undone(tmp_path: Path, version: int) -> None:
    table = write_mor_table(
        tmp_path / "t",
        rows(list(range(30))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        file_groups=3,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows([1, 2], 1)),
            DeltaCommit(
                updates=rows([1, 4], 5), inserts=rows([50, 51], 5), deletes=[2, 7], state="rolled_back"
            ),
            DeltaCommit(updates=rows([4], 2), inserts=rows([52], 2), insert_into="log_only"),
        ],
    )
    failed = next(i for i in table.instants if i.state == "rolled_back")
    rollback = next(i for i in table.instants if i.action == "rollback")
    assert failed.requested < rollback.requested
    live = table.expected
    assert {2, 7} <= set(live.column("id").to_pylist()) and not {50, 51} & set(live.column("id").to_pylist())
    check(table)
    assert HudiTimeline.load(str(table.timeline)).rolled_back() == {failed.requested}
    names = {p.name for p in table.timeline.iterdir()}
    assert not any(name.startswith(failed.requested) for name in names)  # its instant files went
    failed_logs = [(g, f) for g in table.file_groups for f in g.log_files if f.instant == failed.requested]
    if version >= 8:  # its log files are deleted
        assert failed_logs == []
        assert not any(failed.requested in p.name for p in table.root.rglob(".*.log.*"))
    else:  # they stay, undone by a rollback block in each slice's next log file
        assert failed_logs
        for group, _ in failed_logs:
            paths = [table.root / group.partition / log.name for log in group.log_files]
            scan = scan_log_files(paths, lambda _instant: True, ordering_field="ts")
            fates = [fate for _, _, fate in scan.fates()]
            assert BlockFate.ROLLED_BACK in fates and BlockFate.COMMAND in fates
            assert failed.requested not in scan.records.column(INSTANT).to_pylist()


@pytest.mark.parametrize("version", VERSIONS)
def test_a_file_group_of_log_files_only(tmp_path: Path, version: int) -> None:
    """Groups without a base file (inserts into log files, as the bucket index writes them):
    hudi-rs lists them with an empty base file name and reads their logs."""
    table = write_mor_table(
        tmp_path / "t",
        rows(list(range(12))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        file_groups=3,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(inserts=rows([20, 21, 22, 23], 1), insert_into="log_only"),
            DeltaCommit(updates=rows([20, 1], 2), deletes=[21]),
        ],
    )
    log_only = [g for g in table.file_groups if g.base_file is None]
    assert len(log_only) == 3 and sum(len(g.log_files) for g in log_only) == 5
    check(table)
    assert {20, 22, 23} <= set(table.expected.column("id").to_pylist())
    assert {s[1] for s in hudi_rs_slices(table) if not s[2]} == {g.file_id for g in log_only}


@pytest.mark.parametrize("version", VERSIONS)
def test_a_first_commit_of_log_files_only(tmp_path: Path, version: int) -> None:
    """``insert_into="log_only"``: the first delta commit writes its rows as one group of log
    files per partition, so no file group has a base file; later commits add to them."""
    table = write_mor_table(
        tmp_path / "t",
        rows(list(range(12))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        insert_into="log_only",
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows([1, 2], 1), deletes=[3], inserts=rows([20], 1), insert_into="logs")
        ],
    )
    assert [g.base_file for g in table.file_groups] == [None] * 3
    assert {g.base_instant for g in table.file_groups} == {table.instants[0].requested}
    assert not list(table.root.rglob("*.parquet"))
    check(table)
    assert set(table.expected.column("id").to_pylist()) == set(range(12)) - {3} | {20}
    with pytest.raises(ValueError, match="one file group of log files per partition"):
        write_mor_table(tmp_path / "u", rows([1]), record_key="id", insert_into="log_only", file_groups=2)
    with pytest.raises(ValueError, match="'base' or 'log_only'"):
        write_mor_table(tmp_path / "u", rows([1]), record_key="id", insert_into="logs")  # type: ignore[arg-type]
    assert not (tmp_path / "u").exists()


@pytest.mark.parametrize("version", VERSIONS)
def test_inserts_into_existing_groups_logs(tmp_path: Path, version: int) -> None:
    table = write_mor_table(
        tmp_path / "t",
        rows(list(range(60))),
        record_key="id",
        partition_by="region",
        ordering_field="ts",
        file_groups=12,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(inserts=rows(list(range(100, 130)), 1), insert_into="logs", file_groups=0.5),
            DeltaCommit(inserts=rows([130, 131, 132], 1), insert_into="logs", file_groups=[0, 4, 8]),
        ],
    )
    check(table)
    assert len(table.file_groups) == 12  # no new group
    first, second = (i.requested for i in table.instants[1:3])
    touched = {g.index for g in table.file_groups for f in g.log_files if f.instant == first}
    assert len(touched) == 6  # half of each partition's four groups
    assert {g.index for g in table.file_groups for f in g.log_files if f.instant == second} <= {0, 4, 8}


@pytest.mark.parametrize("version", VERSIONS)
def test_without_an_ordering_field_the_later_commit_wins(tmp_path: Path, version: int) -> None:
    table = write_mor_table(
        tmp_path / "t",
        rows(list(range(30))),
        record_key="id",
        partition_by="region",
        file_groups=3,
        table_version=version,
        start=START,
        commits=[
            DeltaCommit(updates=rows([1, 2, 3], 5), deletes=[4]),
            DeltaCommit(updates=rows([1], 2), inserts=rows([4], 2)),  # 1 goes back to version 2
            DeltaCommit(updates=rows([2], 3), state="rolled_back"),
        ],
    )
    assert "hoodie.table.precombine.field" not in read_properties(str(table.root / ".hoodie"))
    check(table)
    price = by_id(table.expected, "price")
    assert (price[1], price[2], price[4]) == (1.25 + 2, 2.5 + 5, 5 + 2)


def test_what_the_writer_refuses(tmp_path: Path) -> None:
    table = scenario(tmp_path / "t", 9, True)
    files = sorted(p for p in table.root.rglob("*") if p.is_file())
    with pytest.raises(AmbiguousMergeError, match="written again after a delete"):
        # key 8 was updated at ts 1 then deleted; a re-insert at ts 0 reads differently in readers
        table.append(DeltaCommit(inserts=rows([8], ts=0)))
    with pytest.raises(ValueError, match="never written"):
        table.append(DeltaCommit(updates=rows([999], 1)))
    moved = rows([1], 1).set_column(1, "region", pa.array(["apac"]))  # key 1 is in "us"
    with pytest.raises(ValueError, match="another partition"):
        table.append(DeltaCommit(updates=moved))
    with pytest.raises(ValueError, match="both upserted and deleted"):
        table.append(DeltaCommit(updates=rows([1], 1), deletes=[1]))
    assert sorted(p for p in table.root.rglob("*") if p.is_file()) == files  # nothing was written
    with pytest.raises(FileExistsError):
        write_mor_table(table.root, rows([1]), record_key="id")
