"""The file slices of merge-on-read Hudi tables, against hudi-rs (``hudi.HudiTable.get_file_slices``).

Every real table of tests/data/hudi/mor_*.zip is compared whole. Timeline cases the real tables lack
are made by editing copies: instants written as Hudi writes them, log files copied from real ones
under new names (slicing reads names and the timeline only). hudi-rs lists these copies from storage
(none of the edited tables has a metadata table). Where hudi-rs and Hudi's Java file-system view
differ, the slice expected is Hudi's and the difference is asserted and named.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro
import hudi
import pytest
from hudi_data import MOR_TABLES

from index_store.tables import DataFile, FileSlice, HudiTable
from index_store.tables.hudi_files import parse_log_file_name

Slice = tuple[str, str, str | None, tuple[str, ...]]  # partition, file id, base file name, log file names

V6 = "mor_parquet_v6_simplekeygen_nonhivestyle"
V6_GROUP = ("10", "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0")  # a base file and one log file
V6_BASE = "26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_1-13-25_20250121000547796.parquet"
V6_LOG = ".26e33b7b-aa9f-4f2e-b683-a90ef0d5861d-0_20250121000547796.log.1_0-33-47"
V6_LAST = "20250121000557095"  # the latest delta commit

V9 = "mor_avro_v9_txns_simple_nometa"
V9_GROUP = ("region=eu", "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0")  # a base file, no log file
V9_BASE = "c1690aed-ab5b-4e4a-aa70-d8de21cdf5df-0_0-70-148_20260307135840975.parquet"


def rs_slices(root: Path) -> list[Slice]:
    """The latest slices as hudi-rs lists them."""
    return sorted(
        (s.partition_path, s.file_id, s.base_file_name or None, tuple(s.log_file_names))
        for s in hudi.HudiTable(str(root)).get_file_slices()
    )


def our_slices(root: Path) -> list[Slice]:
    return [
        (
            s.partition,
            s.file_id,
            os.path.basename(s.base.path) if s.base else None,
            tuple(os.path.basename(f.path) for f in s.logs),
        )
        for s in HudiTable(root).file_slices()
    ]


def slice_of(slices: list[Slice], group: tuple[str, str]) -> Slice | None:
    return next((s for s in slices if s[:2] == group), None)


def log_name(group: tuple[str, str], instant: str, version: int = 1, token: str = "0-1-1") -> str:
    return f".{group[1]}_{instant}.log.{version}_{token}"


def add_log(root: Path, group: tuple[str, str], instant: str, version: int = 1, token: str = "0-1-1") -> str:
    """A log file of ``group`` named for ``instant``, holding a real log file's bytes."""
    name = log_name(group, instant, version, token)
    source = next(p for p in root.rglob(".*.log.*") if ".hoodie" not in p.parts)
    shutil.copy(source, root / group[0] / name)
    return name


def add_base(root: Path, group: tuple[str, str], instant: str, model: str) -> str:
    name = f"{group[1]}_0-9-9_{instant}.parquet"
    shutil.copy(root / group[0] / model, root / group[0] / name)
    return name


# --- instants, as Hudi writes them ------------------------------------------------------------------


def v9_instant(root: Path, requested: str, completed: str | None, action: str = "deltacommit") -> None:
    """A v9 instant: requested and inflight files; completed ones named ``<requested>_<completed>``,
    holding the latest delta commit's metadata (hudi-rs reads the table schema from it)."""
    timeline = root / ".hoodie" / "timeline"
    (timeline / f"{requested}.{action}.requested").write_bytes(b"")
    (timeline / f"{requested}.{action}.inflight").write_bytes(b"")
    if completed is not None:
        latest = sorted(timeline.glob("*_*.deltacommit"))[-1]
        (timeline / f"{requested}_{completed}.{action}").write_bytes(latest.read_bytes())


def v6_instant(root: Path, requested: str, completed: bool, action: str = "deltacommit") -> None:
    timeline = root / ".hoodie"
    (timeline / f"{requested}.{action}.requested").write_bytes(b"")
    (timeline / f"{requested}.{action}.inflight").write_bytes(b"")
    if completed:
        latest = sorted(timeline.glob("*.deltacommit"))[-1]
        (timeline / f"{requested}.{action}").write_bytes(latest.read_bytes())


def _avro_like(example: Path, record: dict[str, Any], target: Path) -> None:
    """``record`` written with the Avro schema of the real instant file ``example``."""
    with open(example, "rb") as f:
        schema = fastavro.reader(f).writer_schema
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [record])
    target.write_bytes(out.getvalue())


def compaction_plan(
    hudi_tables: dict[str, Path], timeline: Path, instant: str, group: tuple[str, str], base: str
) -> None:
    """``<instant>.compaction.requested``: a plan compacting ``group`` from base instant ``base``."""
    example = next(
        (hudi_tables["mor_avro_v9_txns_simple_meta"] / ".hoodie/timeline").glob("*.compaction.requested")
    )
    operation = {"baseInstantTime": base, "fileId": group[1], "partitionPath": group[0], "deltaFilePaths": []}
    _avro_like(
        example, {"operations": [operation], "version": 2}, timeline / f"{instant}.compaction.requested"
    )


def v9_replacecommit(root: Path, requested: str, completed: str, replaced: dict[str, list[str]]) -> None:
    """A completed insert overwrite replacing ``replaced`` (partition -> file ids)."""
    timeline = root / ".hoodie" / "timeline"
    example = next(timeline.glob("*_*.replacecommit"))
    with open(example, "rb") as f:
        record = next(iter(fastavro.reader(f)))
    record.update(partitionToReplaceFileIds=replaced, partitionToWriteStats={})
    (timeline / f"{requested}.replacecommit.requested").write_bytes(b"")
    (timeline / f"{requested}.replacecommit.inflight").write_bytes(b"")
    _avro_like(example, record, timeline / f"{requested}_{completed}.replacecommit")


# --- every real merge-on-read table -------------------------------------------------------------------


@pytest.mark.parametrize("name", MOR_TABLES)
def test_real_tables_slice_as_hudi_rs_does(hudi_tables: dict[str, Path], name: str) -> None:
    root = hudi_tables[name]
    assert our_slices(root) == rs_slices(root)


def test_the_real_tables_hold_the_cases_they_are_chosen_for(hudi_tables: dict[str, Path]) -> None:
    slices = {name: our_slices(hudi_tables[name]) for name in MOR_TABLES}
    assert sum(len(s[3]) for name in slices for s in slices[name]) == 7  # live log files
    (rollback,) = slices["mor_parquet_v6_nonpartitioned_rollback"]
    # The failed commit's log file, the rollback's command block, the next delta commit's log file.
    assert [parse_log_file_name(n).version for n in rollback[3]] == [1, 2, 3]  # type: ignore[union-attr]
    assert slices["mor_parquet_v6_empty"] == []
    # insert overwrite replaced the group holding a log file, and two more
    assert [s[1][:8] for s in slices["mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable"]] == [
        "1c6b76d7"
    ]


@pytest.mark.parametrize("name", MOR_TABLES)
def test_listed_files_are_the_slices_files(hudi_tables: dict[str, Path], name: str) -> None:
    root = hudi_tables[name]
    reader = HudiTable(root)
    slices = reader.file_slices()
    files = reader.list_files()
    assert files == sorted((f for s in slices for f in s.files), key=lambda f: f.path)
    for s in slices:
        for f in s.files:
            assert (f.file_group, f.partition) == (s.file_id, s.partition)
            assert f.size == os.path.getsize(root / f.path) and f.mtime_ns is not None
            assert f.path == (f"{s.partition}/" if s.partition else "") + os.path.basename(f.path)
        for log in s.logs:
            parsed = parse_log_file_name(os.path.basename(log.path))
            assert parsed is not None and log.instant == parsed.instant
    assert reader.latest_instant() == HudiTable(root).timeline().latest_completed()


def test_log_files_carry_partition_values(hudi_tables: dict[str, Path]) -> None:
    (eu,) = [
        s for s in HudiTable(hudi_tables["mor_parquet_v6_simplekeygen_nonhivestyle"]).file_slices() if s.logs
    ]
    assert eu.base is not None and eu.base.partition_values == {"byteField": 10}
    assert [f.partition_values for f in eu.logs] == [{"byteField": 10}]


# --- timeline cases the real tables lack ------------------------------------------------------------


def test_v9_log_files_of_uncommitted_delta_commits_are_dropped(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V9)
    done = add_log(root, V9_GROUP, "20260307140000000")
    v9_instant(root, "20260307140000000", "20260307140001000")
    add_log(root, V9_GROUP, "20260307140100000")  # inflight
    v9_instant(root, "20260307140100000", None)
    add_log(root, V9_GROUP, "20260307140200000")  # failed: its instant files are gone
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) == (*V9_GROUP, V9_BASE, (done,))
    assert ours == rs_slices(root)


def test_v6_log_files_name_their_base_instant_not_their_writer(copy_table: Callable[[str], Path]) -> None:
    """A table version 6 log file of an inflight delta commit carries the committed base instant:
    neither Hudi nor hudi-rs can drop it by name (the log reader skips its blocks)."""
    root = copy_table(V6)
    v6_instant(root, "20250121000600000", completed=False)
    extra = add_log(root, V6_GROUP, "20250121000547796", version=2, token="0-2-2")
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == (*V6_GROUP, V6_BASE, (V6_LOG, extra))
    assert ours == rs_slices(root)


def test_v6_base_files_of_failed_commits_are_dropped(copy_table: Callable[[str], Path]) -> None:
    """Also when the failed commit is older than the latest one (the snapshot's instant)."""
    root = copy_table(V6)
    failed = "20250121000550000"  # between the two delta commits; requested and inflight only
    v6_instant(root, failed, completed=False)
    group = ("20", "0fa11ed0-0000-4000-8000-000000000000-0")
    add_base(root, group, failed, "b2506c0e-8ddb-48c0-a683-a1d7d13cae0f-0_0-13-24_20250121000547796.parquet")
    ours = our_slices(root)
    assert slice_of(ours, group) is None
    assert ours == rs_slices(root)


def test_v6_pending_compaction_merges_its_logs_onto_the_slice_before(
    hudi_tables: dict[str, Path], copy_table: Callable[[str], Path]
) -> None:
    """Log files written against a pending compaction's instant belong with the slice before it."""
    root = copy_table(V6)
    compaction = "20250121000600000"
    compaction_plan(hudi_tables, root / ".hoodie", compaction, V6_GROUP, "20250121000547796")
    after = add_log(root, V6_GROUP, compaction)  # written against the compaction instant
    v6_instant(root, "20250121000700000", completed=True)
    expected = (*V6_GROUP, V6_BASE, (V6_LOG, after))
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == expected
    # hudi-rs drops a log file named for an instant that is no completed commit, so it loses the
    # delta commit written against the pending compaction (Hudi's Java view keeps it, merged).
    without = [(*s[:3], tuple(n for n in s[3] if n != after)) for s in ours]
    assert without == rs_slices(root)
    # The compaction starts writing its base file: no reader may read it yet.
    (root / ".hoodie" / f"{compaction}.compaction.inflight").write_bytes(b"")
    partial = add_base(root, V6_GROUP, compaction, V6_BASE)
    assert our_slices(root) == ours
    assert without == rs_slices(root)
    # Completed, the compaction's base file starts the latest slice with the log written after it.
    shutil.copy(root / ".hoodie" / f"{V6_LAST}.deltacommit", root / ".hoodie" / f"{compaction}.commit")
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == (*V6_GROUP, partial, (after,))
    assert ours == rs_slices(root)


def test_v6_log_files_of_a_compaction_requested_after_the_last_commit_are_not_read(
    hudi_tables: dict[str, Path], copy_table: Callable[[str], Path]
) -> None:
    """No delta commit written against it has completed: only an inflight one."""
    root = copy_table(V6)
    compaction = "20250121000600000"
    compaction_plan(hudi_tables, root / ".hoodie", compaction, V6_GROUP, "20250121000547796")
    add_log(root, V6_GROUP, compaction)
    v6_instant(root, "20250121000700000", completed=False)
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == (*V6_GROUP, V6_BASE, (V6_LOG,))
    assert ours == rs_slices(root)


def test_v9_pending_compaction_merges_later_logs_onto_the_slice_before(
    hudi_tables: dict[str, Path], copy_table: Callable[[str], Path]
) -> None:
    root = copy_table(V9)
    before = add_log(root, V9_GROUP, "20260307140000000")
    v9_instant(root, "20260307140000000", "20260307140001000")
    compaction = "20260307140100000"
    compaction_plan(hudi_tables, root / ".hoodie" / "timeline", compaction, V9_GROUP, "20260307135840975")
    (root / ".hoodie" / "timeline" / f"{compaction}.compaction.inflight").write_bytes(b"")
    partial = add_base(root, V9_GROUP, compaction, V9_BASE)
    # requested before the compaction, completed after it was requested: it joins the compaction's slice
    during = add_log(root, V9_GROUP, "20260307140050000")
    v9_instant(root, "20260307140050000", "20260307140150000")
    after = add_log(root, V9_GROUP, "20260307140200000")
    v9_instant(root, "20260307140200000", "20260307140201000")
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) == (*V9_GROUP, V9_BASE, (before, during, after))
    assert ours == rs_slices(root)
    # once the compaction completes, its base file takes the logs completed after it was requested
    timeline = root / ".hoodie" / "timeline"
    shutil.copy(
        next(timeline.glob("20260307140200000_*.deltacommit")),
        timeline / f"{compaction}_20260307140300000.commit",
    )
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) == (*V9_GROUP, partial, (during, after))
    assert ours == rs_slices(root)


def test_replaced_file_groups_with_logs_are_dropped(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V9)
    add_log(root, V9_GROUP, "20260307140000000")
    v9_instant(root, "20260307140000000", "20260307140001000")
    assert slice_of(our_slices(root), V9_GROUP) is not None
    v9_replacecommit(root, "20260307140100000", "20260307140101000", {V9_GROUP[0]: [V9_GROUP[1]]})
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) is None and len(ours) == 4
    assert ours == rs_slices(root)


def test_v9_file_group_of_log_files_only(copy_table: Callable[[str], Path]) -> None:
    """A file group without a base file (inserts written to log files), its logs in Hudi's order."""
    root = copy_table(V9)
    group = (V9_GROUP[0], "0106cafe-0000-4000-8000-000000000000-0")
    v9_instant(root, "20260307140000000", "20260307140001000")
    v9_instant(root, "20260307140100000", "20260307140101000")
    names = [
        add_log(root, group, "20260307140100000"),
        add_log(root, group, "20260307140000000", version=10),  # versions compare as numbers
        add_log(root, group, "20260307140000000", version=2, token="1-0-1"),
        add_log(root, group, "20260307140000000", version=2, token="0-5-5"),
    ]
    ours = our_slices(root)
    assert slice_of(ours, group) == (*group, None, (names[3], names[2], names[1], names[0]))
    assert ours == rs_slices(root)


def test_v9_log_files_order_by_instant_where_hudi_rs_orders_by_completion(
    copy_table: Callable[[str], Path],
) -> None:
    """Two writers: the delta commit requested first completes last. Hudi's Java view orders log
    files by the instant in their names (``HoodieLogFile.LogFileComparator``), hudi-rs by the
    completion time (``LogFile::cmp``); both put them in the same slice."""
    root = copy_table(V9)
    first = add_log(root, V9_GROUP, "20260307140000000")
    v9_instant(root, "20260307140000000", "20260307140300000")
    second = add_log(root, V9_GROUP, "20260307140100000")
    v9_instant(root, "20260307140100000", "20260307140200000")
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) == (*V9_GROUP, V9_BASE, (first, second))
    assert slice_of(rs_slices(root), V9_GROUP) == (*V9_GROUP, V9_BASE, (second, first))
    assert [s for s in ours if s[:2] != V9_GROUP] == [s for s in rs_slices(root) if s[:2] != V9_GROUP]


def test_v6_file_group_of_log_files_only(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    group = ("30", "0106cafe-0000-4000-8000-000000000000-0")
    name = add_log(root, group, V6_LAST)
    ours = our_slices(root)
    assert slice_of(ours, group) == (*group, None, (name,))
    assert ours == rs_slices(root)


def test_a_log_file_whose_base_file_is_gone(copy_table: Callable[[str], Path]) -> None:
    """It joins the newest older base file; with none, its group is log files only."""
    root = copy_table(V6)
    older = add_base(root, V6_GROUP, "20250101000000000", V6_BASE)  # archived: before the active timeline
    (root / V6_GROUP[0] / V6_BASE).unlink()
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == (*V6_GROUP, older, (V6_LOG,))
    assert ours == rs_slices(root)
    (root / V6_GROUP[0] / older).unlink()
    ours = our_slices(root)
    assert slice_of(ours, V6_GROUP) == (*V6_GROUP, None, (V6_LOG,))
    assert ours == rs_slices(root)


def test_v9_a_log_file_whose_base_file_is_gone(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V9)
    log = add_log(root, V9_GROUP, "20260307140000000")
    v9_instant(root, "20260307140000000", "20260307140001000")
    (root / V9_GROUP[0] / V9_BASE).unlink()
    ours = our_slices(root)
    assert slice_of(ours, V9_GROUP) == (*V9_GROUP, None, (log,))
    assert ours == rs_slices(root)


def test_rolled_back_v9_files_are_dropped(copy_table: Callable[[str], Path]) -> None:
    """A rollback whose instant files are still on the timeline names what it removed."""
    root = copy_table(V9)
    rolled = "20260307140000000"
    add_log(root, V9_GROUP, rolled)
    v9_instant(root, rolled, "20260307140001000")
    assert slice_of(our_slices(root), V9_GROUP)[3] != ()  # type: ignore[index]
    schema = {
        "type": "record",
        "name": "HoodieRollbackPlan",
        "fields": [
            {
                "name": "instantToRollback",
                "type": {
                    "type": "record",
                    "name": "HoodieInstantInfo",
                    "fields": [
                        {"name": "commitTime", "type": "string"},
                        {"name": "action", "type": "string"},
                    ],
                },
            }
        ],
    }
    out = io.BytesIO()
    fastavro.writer(
        out,
        fastavro.parse_schema(schema),
        [{"instantToRollback": {"commitTime": rolled, "action": "deltacommit"}}],
    )
    (root / ".hoodie" / "timeline" / "20260307140100000.rollback.requested").write_bytes(out.getvalue())
    assert slice_of(our_slices(root), V9_GROUP) == (*V9_GROUP, V9_BASE, ())


# --- the pieces -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        (".f1-0_20250121000547796.log.1_0-33-47", ("f1-0", "20250121000547796", 1, "0-33-47", False)),
        (".f1-0_20250121000547796.log.12_1-0-1.cdc", ("f1-0", "20250121000547796", 12, "1-0-1", True)),
        (".hoodie_partition_metadata", None),
        (".f1-0_20250121000547796.log.1_0-33-47.crc", None),
        ("f1-0_20250121000547796.log.1_0-33-47", None),  # not hidden
        (".DS_Store", None),
    ],
)
def test_log_file_names(name: str, parsed: tuple | None) -> None:
    found = parse_log_file_name(name)
    got = (found.file_id, found.instant, found.version, found.write_token, found.cdc) if found else None
    assert got == parsed


def test_cdc_log_files_are_no_part_of_a_slice(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    (root / V6_GROUP[0] / f"{V6_LOG[: -len('_0-33-47')]}_0-33-48.cdc").write_bytes(b"")
    assert slice_of(our_slices(root), V6_GROUP) == (*V6_GROUP, V6_BASE, (V6_LOG,))


def test_a_file_slice_holds_a_file() -> None:
    log = DataFile(".f_1.log.1_0-1-1", 10, file_group="f", instant="1")
    assert FileSlice("f", "", None, (log,)).files == (log,)
    with pytest.raises(ValueError, match="no base file and no log files"):
        FileSlice("f", "", None, ())
