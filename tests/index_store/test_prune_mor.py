"""Pruning merge-on-read Hudi tables (issue 23): log files indexed from their records, slices kept
whole, against hudi-rs (``hudi.HudiTable.read``, the Hudi project's own merged reader) as the oracle.

For every real table of tests/data/hudi/mor_*.zip, predicates on every column are filtered by DuckDB
over hudi-rs's snapshot; the file slice of each matching row (from hudi-rs's ``_hoodie_file_name``,
or by record key where the table stores none) must be among the slices pruning keeps. Crafted cases
append log files to copies of real tables with the project's own encoders (``index_store.hudi_log``)
and a completed delta commit, so that hudi-rs reads them too.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import hudi
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hudi_data import MOR_TABLES

from hudi_expr import Expression, col
from hudi_expr.stats import leaf_columns
from hudi_expr.types import is_comparable_type, is_string_like
from index_store import PruneResult, open_table
from index_store.hudi_log import (
    BlockType,
    block_header,
    decode_block,
    encode_data_block,
    encode_delete_block,
    frame,
    read_log_file,
    scan_log_files,
)
from index_store.hudi_log.decoders import DataRows
from index_store.keys import slice_keys
from index_store.log_content import ALL_INSTANTS
from index_store.partitions import read_record_index
from index_store.slices import PrunedSlice, SliceGroups
from index_store.tables import DataFile, HudiTable

Group = tuple[str, str]  # partition, file id

NON_EMPTY = [t for t in MOR_TABLES if "empty" not in t]
V6 = "mor_parquet_v6_simplekeygen_nonhivestyle"  # no metadata table: hudi-rs lists edits from storage
V6_GROUP = ("10", "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0")  # a base file (ids 1, 3) and one log file
V6_BASE_INSTANT = "20250121000547796"
ROLLBACK = "mor_parquet_v6_nonpartitioned_rollback"
ROLLED_BACK = "20250126040826878"  # the delta commit whose only block (log.1) a rollback undid


# --- the oracle -------------------------------------------------------------------------------------


def snapshot(root: Path) -> pa.Table:
    """hudi-rs's merged snapshot, with a row number."""
    batches = hudi.HudiTable(str(root)).read()
    table = pa.Table.from_batches(batches)
    return table.append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))


def groups_of_rows(root: Path, snap: pa.Table) -> list[Group]:
    """The file slice of each row of ``snap``: from ``_hoodie_file_name`` (a base file's name, or
    the bare file id of a row merged from a log), or, where the table stores no meta fields, by
    finding the row's record key in the slices' base files and log records."""
    if "_hoodie_file_name" in snap.column_names and snap["_hoodie_file_name"].null_count == 0:
        names = snap["_hoodie_file_name"].to_pylist()
        partitions = snap["_hoodie_partition_path"].to_pylist()
        return [
            (p or "", n.split("_")[0] if n.endswith(".parquet") else n)
            for n, p in zip(names, partitions, strict=True)
        ]
    reader = HudiTable(root)
    spec = reader.record_key_spec()
    assert spec is not None
    where: dict[str, set[Group]] = {}
    for s in reader.file_slices():
        keys: list[str] = []
        if s.base is not None:
            keys += spec.keys_of(pq.read_table(root / s.base.path)).to_pylist()
        logs = [str(root / f.path) for f in s.logs]
        keys += scan_log_files(logs, ALL_INSTANTS, key_spec=spec).records["_log_record_key"].to_pylist()
        for k in keys:
            where.setdefault(k, set()).add((s.partition, s.file_id))
    out = []
    for key in spec.keys_of(snap).to_pylist():
        (group,) = where[key]  # each key of these tables is in one slice
        out.append(group)
    return out


def predicates(con: duckdb.DuckDBPyConnection, column: str, t: pa.DataType) -> list[Expression]:
    """Predicates on one column: values the snapshot holds (equality, ranges, IN), one it does not,
    and null tests."""
    sql_name = ".".join(f'"{p}"' for p in column.split("."))
    values = con.sql(
        f"SELECT DISTINCT {sql_name} AS v FROM snap WHERE {sql_name} IS NOT NULL ORDER BY v"
    ).to_arrow_table()["v"]
    out: list[Expression] = [col(column).is_null(), col(column).is_not_null()]
    picked = [values[i] for i in sorted({0, len(values) // 2, len(values) - 1}) if len(values)]
    for v in picked:
        out += [col(column) == v, col(column) > v, col(column) <= v]
    if len(picked) >= 2:
        out.append(col(column).isin([picked[0], picked[-1]]))
    if len(values):
        top = values[len(values) - 1].as_py()
        if is_string_like(t):
            out.append(col(column) == top + "~absent")
        elif pa.types.is_integer(t) and top < 2**31 - 2:
            out += [col(column) == top + 1, col(column).isin([top + 1, top + 2])]
    return out


def kept_groups(result: PruneResult) -> set[Group]:
    return {(s.partition, s.file_id) for s in result.file_slices}


def assert_whole(result: PruneResult, root: Path) -> None:
    """Every kept slice is the reader's slice, every file of it in ``files``."""
    slices = {(s.partition, s.file_id): s for s in HudiTable(root).file_slices()}
    prefix = str(root) + os.sep
    for kept in result.file_slices:
        listed = slices[(kept.partition, kept.file_id)]
        assert kept.base_file == (prefix + listed.base.path if listed.base else None)
        assert kept.log_files == [prefix + f.path for f in listed.logs]  # in merge order
    assert sorted(result.files) == sorted(f for s in result.file_slices for f in s.files)


@pytest.mark.parametrize("name", NON_EMPTY)
def test_kept_slices_hold_every_matching_row_of_the_snapshot(
    name: str, copy_table: Callable[[str], Path]
) -> None:
    root = copy_table(name)
    table = open_table(root)
    table.build(progress=False)
    snap = snapshot(root)
    row_groups = groups_of_rows(root, snap)
    con = duckdb.connect()
    con.register("snap", snap)
    stats = table.stats()
    checked = pruned = 0
    for column, t in leaf_columns(stats.schema).items():
        if column.split(".")[0] not in snap.column_names or not is_comparable_type(t):
            continue
        for expr in predicates(con, column, t):
            result = table.prune(expr)
            rows = con.execute(f"SELECT __row FROM snap WHERE {expr}").fetchall()
            needed = {row_groups[r] for (r,) in rows}
            missed = needed - kept_groups(result)
            assert not missed, (name, str(expr), missed)
            assert_whole(result, root)
            checked += 1
            pruned += len(result.file_slices) < result.total_slices
    assert checked > 20
    assert pruned > 0, "some predicate should prune a slice"


# --- crafted: logs that decide --------------------------------------------------------------------


def log_block_schema(root: Path) -> tuple[str, list[str]]:
    """The Avro schema (SCHEMA header) and columns of the V6 table's real log block."""
    (path,) = glob.glob(str(root / V6_GROUP[0] / ".*.log.1_*"))
    (block,) = read_log_file(path)
    content = decode_block(block)
    assert isinstance(content, DataRows) and block.schema is not None
    return block.schema, content.rows.column_names


def delta_commit(root: Path, instant: str, action: str = "deltacommit") -> None:
    """A completed table version 6 instant (its metadata copied from the latest delta commit)."""
    hoodie = root / ".hoodie"
    latest = sorted(hoodie.glob("*.deltacommit"))[-1]
    if action == "deltacommit":
        (hoodie / f"{instant}.deltacommit.requested").write_bytes(b"")
        (hoodie / f"{instant}.deltacommit.inflight").write_bytes(b"")
    shutil.copy(latest, hoodie / f"{instant}.{action}")


def row_of(
    root: Path, record_id: int, columns: list[str], instant: str, file_id: str, **values: Any
) -> pa.Table:
    """A row of the snapshot as a log record of ``file_id`` written at ``instant``, ``values`` set."""
    snap = snapshot(root)
    row = snap.filter(pc.equal(snap["id"], record_id)).select(columns)
    changes = {"_hoodie_commit_time": instant, "_hoodie_file_name": file_id, **values}
    for name, value in changes.items():
        i = row.schema.get_field_index(name)
        row = row.set_column(i, row.schema.field(i), pa.array([value], row.schema.field(i).type))
    return row


def append_log(root: Path, group: Group, name_instant: str, version: int, data: bytes) -> Path:
    path = root / group[0] / f".{group[1]}_{name_instant}.log.{version}_0-1-1"
    path.write_bytes(data)
    return path


def update_in_a_log(root: Path, instant: str = "20250122000000000") -> Path:
    """A new delta commit updating id 3 (base file of V6_GROUP, intField 35000) to intField 999999,
    far outside the base file's range: a second log file of the slice."""
    schema, columns = log_block_schema(root)
    row = row_of(root, 3, columns, instant, V6_GROUP[1], intField=999999)
    path = append_log(
        root, V6_GROUP, V6_BASE_INSTANT, 2, encode_data_block(row, block_header(instant, schema=schema))
    )
    delta_commit(root, instant)
    return path


def test_an_update_in_a_log_keeps_its_whole_slice(copy_table: Callable[[str], Path]) -> None:
    """Fails if logs were ignored (only the base file's statistics asked) and if the slice were not
    kept whole (the base file alone is ruled out by its own statistics, yet it must be read)."""
    root = copy_table(V6)
    log = update_in_a_log(root)
    snap = snapshot(root)
    assert snap.filter(pc.equal(snap["intField"], 999999))["id"].to_pylist() == [3]  # hudi-rs merged it
    table = open_table(root)
    table.build(progress=False)
    result = table.prune(col("intField") == 999999)
    (kept,) = result.file_slices
    assert (kept.partition, kept.file_id) == V6_GROUP and kept.log_files[-1] == str(log)
    base = os.path.relpath(kept.base_file or "", root)
    assert result.explanation is not None
    assert "skipped by intField = 999999" in result.explanation.reason(base)  # its own stats rule it out
    assert kept.base_file in result.files and len(result.files) == 3  # base and both logs
    assert "kept 1 of 3 file slices (3 of 5 files)" in result.explain()
    # the old value is still in the base file's statistics: kept too (wider, sound)
    assert V6_GROUP in kept_groups(table.prune(col("intField") == 35000))


def test_a_delete_in_a_log(copy_table: Callable[[str], Path]) -> None:
    """A delete block brings no values: its log file counts no row (so it never keeps its slice on
    its own), and the base file still holding the deleted row keeps the slice, which is sound."""
    root = copy_table(V6)
    instant = "20250122000000000"
    deletes = pa.table(
        {"record_key": ["3"], "partition_path": ["10"], "ordering_value": pa.array([0], pa.int32())}
    )
    log = append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, encode_delete_block(deletes, block_header(instant)))
    delta_commit(root, instant)
    assert 3 not in snapshot(root)["id"].to_pylist()
    table = open_table(root)
    table.build(progress=False)
    stats = table.stats(["intField"])
    at = stats.files.to_pylist().index(os.path.relpath(log, root))
    assert stats.row_count[at].as_py() == 0
    assert V6_GROUP in kept_groups(table.prune(col("intField") == 35000))  # from the base file


def test_a_slice_of_log_files_only(copy_table: Callable[[str], Path]) -> None:
    """A file group written to a log file only (no base file yet): a slice of its own."""
    root = copy_table(V6)
    instant = "20250123000000000"
    group = ("30", "00000000-0000-4000-8000-000000000001-0")
    schema, columns = log_block_schema(root)
    row = row_of(root, 4, columns, instant, group[1], id=77, _hoodie_record_key="77", longField=-5)
    append_log(root, group, instant, 1, encode_data_block(row, block_header(instant, schema=schema)))
    delta_commit(root, instant)
    assert 77 in snapshot(root)["id"].to_pylist()
    table = open_table(root)
    table.build(progress=False)
    result = table.prune(col("longField") < 0)
    (kept,) = result.file_slices
    assert (kept.partition, kept.file_id, kept.base_file) == (*group, None) and len(kept.log_files) == 1
    assert table.prune(col("longField") == 987654321).file_slices[0].file_id != group[1]


def test_a_log_file_of_a_rolled_back_instant(
    hudi_tables: dict[str, Path], copy_table: Callable[[str], Path]
) -> None:
    """The real rollback: log.1's only block is of a delta commit rolled back (log.2 holds the
    rollback block). Each log file is read alone and every block counts, so log.1's values are in
    its statistics (wider than the snapshot, never narrower) and log.2 holds no row."""
    root = copy_table(ROLLBACK)
    table = open_table(root)
    table.build(progress=False)
    stats = table.stats()
    logs = sorted(p for p in stats.files.to_pylist() if ".log." in p)
    counts = dict(zip(stats.files.to_pylist(), stats.row_count.to_pylist(), strict=True))
    assert [counts[p] for p in logs] == [1, 0, 1]
    (block,) = read_log_file(str(root / logs[0]))
    assert block.instant == ROLLED_BACK
    assert ROLLED_BACK not in snapshot(root)["_hoodie_commit_time"].to_pylist()  # hudi-rs leaves it out
    result = table.prune(col("_hoodie_commit_time") == ROLLED_BACK)
    assert len(result.file_slices) == 1  # kept through log.1's statistics: wider, sound
    assert result.explanation is not None and "kept" in result.explanation.reason(logs[0])


def test_a_column_missing_from_a_block_is_unknown_for_its_file(copy_table: Callable[[str], Path]) -> None:
    """Two data blocks in one log file, the second without ``name`` (a partial update): ``name`` has
    no statistics for that file, whose slice every predicate on ``name`` keeps."""
    root = copy_table(V6)
    instant = "20250122000000000"
    schema, columns = log_block_schema(root)
    full = row_of(root, 3, columns, instant, V6_GROUP[1], intField=999999)
    partial_schema = json.loads(schema)
    partial_schema["fields"] = [f for f in partial_schema["fields"] if f["name"] != "name"]
    data = encode_data_block(full, block_header(instant, schema=schema)) + encode_data_block(
        full.drop_columns(["name"]), block_header(instant, schema=json.dumps(partial_schema))
    )
    log = append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, data)
    delta_commit(root, instant)
    table = open_table(root)
    table.build(progress=False)
    stats = table.stats(["name", "intField"])
    at = stats.files.to_pylist().index(os.path.relpath(log, root))
    assert (
        stats.column("name").min[at].as_py() is None and stats.column("name").null_count[at].as_py() is None
    )
    assert stats.column("intField").max[at].as_py() == 999999  # in both blocks: known
    assert V6_GROUP in kept_groups(table.prune(col("name") == "nobody"))


def test_a_log_file_that_does_not_decode_keeps_its_slice(copy_table: Callable[[str], Path]) -> None:
    """A block of a type not decoded here (CDC): the file's statistics are unknown (row count too),
    its keys not recorded, and its slice kept by every predicate."""
    root = copy_table(V6)
    instant = "20250122000000000"
    odd = frame(int(BlockType.CDC_DATA), block_header(instant), b"\x00\x01")
    log = append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, odd)
    delta_commit(root, instant)
    table = open_table(root)
    table.build(progress=False)
    stats = table.stats(["intField"])
    at = stats.files.to_pylist().index(os.path.relpath(log, root))
    assert stats.row_count[at].as_py() is None and stats.column("intField").max[at].as_py() is None
    assert V6_GROUP in kept_groups(table.prune(col("intField") == -1))
    assert len(table.prune(col("intField") == -1).file_slices) == 1


def test_a_merge_that_mixes_records_leaves_log_statistics_unknown(copy_table: Callable[[str], Path]) -> None:
    """A payload that keeps a base value where the log record has none (a null here): a merged
    row may mix the two, so no statistics of a log file bound it; every slice with a log is kept."""
    root = copy_table(V6)
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text().replace(
        "OverwriteWithLatestAvroPayload", "OverwriteNonDefaultsWithLatestAvroPayload"
    )
    props.write_text(text)
    table = open_table(root)
    assert not table.reader.log_records_whole
    table.build(progress=False)
    kept = table.prune(col("intField") == -1)
    assert kept_groups(kept) == {V6_GROUP}  # the one slice with a log file
    assert len(kept.files) == 2


# --- freshness: a new delta commit, a compaction ---------------------------------------------------


def test_a_new_log_file_is_kept_with_its_slice_until_sync(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    table = open_table(root)
    table.build(progress=False)
    assert table.prune(col("intField") == 999999).file_slices == []
    log = update_in_a_log(root)
    fresh = table.freshness()
    assert fresh.unknown == [os.path.relpath(log, root)] and not fresh.current
    before = table.prune(col("intField") == 999999)  # the new log is unknown: its slice is kept whole
    assert kept_groups(before) == {V6_GROUP} and len(before.files) == 3
    assert before.unknown_files == [str(log)]
    assert table.sync(progress=False) is not None
    after = table.prune(col("intField") == 999999)
    assert kept_groups(after) == {V6_GROUP} and after.unknown_files == []
    assert table.prune(col("intField") == 123).file_slices == []  # its statistics now prune


def test_update_with_a_data_file_naming_no_file_group(copy_table: Callable[[str], Path]) -> None:
    """A writer's ``update(added=[DataFile(...)])`` without a file group: the log file's name says
    it, so its slice is still kept whole (alone, the base file would be ruled out)."""
    root = copy_table(V6)
    table = open_table(root)
    table.build(progress=False)
    log = update_in_a_log(root)
    rel = os.path.relpath(log, root)
    stat = log.stat()
    table.update(added=[DataFile(rel, stat.st_size, V6_GROUP[0], mtime_ns=stat.st_mtime_ns)])
    result = table.prune(col("intField") == 999999)
    assert kept_groups(result) == {V6_GROUP} and len(result.files) == 3 and result.unknown_files == []


def test_a_compaction_replaces_the_slice(copy_table: Callable[[str], Path]) -> None:
    """A compaction writes a new base file of the merged rows (a completed commit): the old base file
    and its log files leave the latest slice, and sync drops them and indexes the new base file."""
    root = copy_table(V6)
    update_in_a_log(root)
    table = open_table(root)
    table.build(progress=False)
    instant = "20250124000000000"
    snap = snapshot(root)
    (old,) = (root / V6_GROUP[0]).glob(f"{V6_GROUP[1]}_*.parquet")
    schema = pq.read_schema(old)
    name = f"{V6_GROUP[1]}_0-9-9_{instant}.parquet"
    merged = (
        snap.filter(pc.starts_with(snap["_hoodie_file_name"], V6_GROUP[1])).select(schema.names).cast(schema)
    )
    at = schema.get_field_index("_hoodie_file_name")
    merged = merged.set_column(at, schema.field(at), pa.array([name] * merged.num_rows))
    pq.write_table(merged, root / V6_GROUP[0] / name)
    delta_commit(root, instant, action="commit")
    assert sorted(snapshot(root)["intField"].to_pylist()) == sorted(snap["intField"].to_pylist())
    before = table.prune(col("intField") == 999999)  # stale index: the new base file is unknown, kept
    assert before.unknown_files == [str(root / V6_GROUP[0] / name)]
    assert table.sync(progress=False) is not None
    after = table.prune(col("intField") == 999999)
    (kept,) = after.file_slices
    assert kept.base_file == str(root / V6_GROUP[0] / name) and kept.log_files == []
    assert after.files == [kept.base_file] and after.unknown_files == []
    assert len(table.stats().files) == 3  # three base files, no log file left


# --- what the index holds, and what results say ------------------------------------------------------


def test_one_entry_per_log_file_and_log_keys_in_the_record_index(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    update_in_a_log(root)
    table = open_table(root)
    table.build(progress=False, record_index=True)
    listed = sorted(f.path for f in table.reader.list_files())
    assert sorted(table.stats().files.to_pylist()) == listed and sum(".log." in p for p in listed) == 2
    rows = read_record_index(table.index_root, table.snapshot().live["record_index"])
    loaded = table._load()
    path_of = dict(zip(loaded.file_idx.tolist(), loaded.paths.to_pylist(), strict=True))
    in_logs = sorted(
        k
        for k, f in zip(rows["key"].to_pylist(), rows["file_idx"].to_pylist(), strict=True)
        if ".log." in path_of[f]
    )
    assert in_logs == ["1", "3"]  # the real log's update of key 1, the crafted one of key 3


def test_copy_on_write_and_plain_results_have_one_slice_per_file(
    copy_table: Callable[[str], Path], tmp_path: Path
) -> None:
    root = copy_table("v6_simplekeygen_nonhivestyle")
    table = open_table(root)
    table.build(progress=False)
    result = table.prune(col("id") >= 0)
    assert not result.whole_slices and all(s.log_files == [] for s in result.file_slices)
    assert sorted(s.base_file or "" for s in result.file_slices) == sorted(result.files)
    by_file = {f.path: f.file_group for f in table.reader.list_files()}
    assert {s.file_id for s in result.file_slices} == set(by_file.values())
    assert "file slices" not in result.explain()
    plain = tmp_path / "plain"
    (plain / "k=1").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), plain / "k=1" / "part-0.parquet")
    (plain / "k=2").mkdir()
    pq.write_table(pa.table({"a": [7]}), plain / "k=2" / "part-1.parquet")
    t = open_table(plain)
    t.build(progress=False)
    got = t.prune(col("a") > 5).file_slices
    assert got == [PrunedSlice("part-1", "k=2", str(plain / "k=2" / "part-1.parquet"))]
    assert t.prune(col("a") > 0).total_slices == 2


def test_slice_grouping_is_vectorized_and_exact() -> None:
    """``SliceGroups``: a kept file keeps its slice's other live files, a file without a slice key
    stands alone, an unknown file keeps its slice, and statistics prove nothing of a slice with a
    log file."""
    paths = pa.array(
        [
            "p/a_1-0-0_1.parquet",
            "p/.a_1.log.1_0-0-0",
            "p/b_1-0-0_1.parquet",
            "x.parquet",
            "q/a_1-0-0_1.parquet",
        ]
    )
    keys = slice_keys(pa.array(["p", "p", "p", "", "q"]), pa.array(["a", "a", "b", None, "a"]))
    assert keys[3].as_py() is None and keys[0] == keys[1] and keys[0] != keys[4]  # partition counts
    groups = SliceGroups(paths, keys)
    kept = np.array([False, True, False, False, False])
    assert groups.keep_whole(kept, None).tolist() == [True, True, False, False, False]
    live = np.array([True, True, True, True, False])
    assert groups.keep_whole(~kept & live, live).tolist() == [True, True, True, True, False]
    new = DataFile("p/.b_1.log.1_0-0-0", 1, "p", file_group="b")
    assert groups.keep_whole(np.zeros(5, bool), live, [new]).tolist() == [False, False, True, False, False]
    assert groups.with_logs().tolist() == [True, True, False, False, False]
    other = DataFile("p/.c_1.log.1_0-0-0", 1, "p", file_group="c")
    assert groups.count(live) == 3 and groups.count(live, [new, other]) == 4


def test_a_million_files_group_fast() -> None:
    """Grouping is once per index version, keeping whole slices once per prune: both vectorized."""
    n = 1_000_000
    group = np.arange(n) // 2
    paths = pa.array(np.where(group % 2 == 0, "p/f.parquet", "p/.f_1.log.1_0-0-0"))
    keys = pa.array(group * 7919, pa.int64())
    t0 = time.perf_counter()
    groups = SliceGroups(paths, keys)
    t1 = time.perf_counter()
    kept = groups.keep_whole(np.arange(n) % 1000 == 1, None)
    t2 = time.perf_counter()
    assert int(kept.sum()) == 2 * 1000 and bool(kept[0]) and bool(kept[1])
    assert t1 - t0 < 2.0 and t2 - t1 < 0.2, (t1 - t0, t2 - t1)  # about 0.15 s and 3 ms here
