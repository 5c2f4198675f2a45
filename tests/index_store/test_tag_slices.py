"""Which merge-on-read file slice holds each key's latest live record
(``index_store.tagging.slices``), against hudi-rs (``hudi.HudiTable(root).read()``: the live keys
and the file group of each) on every real merge-on-read table of tests/data/hudi and on tables
written by ``index_store.datagen.hudi_mor``: updates and deletes in logs, re-inserts after a
delete, a file group of log files only, a pending and a rolled-back delta commit, event and commit
time ordering, table versions 6, 8 and 9.

Every key ever written (base files and every log block, counted or not) and keys never written
are asked of every slice of their partition, and of every slice of the table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import MOR_TABLES
from mor_oracle import START, Holders, hudi_rs_holders, rows, scenario, written_keys

from index_store.datagen.hudi_mor import DeltaCommit, write_mor_table
from index_store.errors import UnsupportedTableError
from index_store.hudi_log import (
    block_header,
    encode_delete_block,
    valid_instants,
)
from index_store.tables.hudi import HudiTable
from index_store.tagging.merge_rule import MergeRule, latest_records
from index_store.tagging.slices import SliceTable, locate_in_slices, slice_locations


def slice_table(table: HudiTable) -> SliceTable:
    spec = table.record_key_spec()
    assert spec is not None
    rule = MergeRule.of(table.properties, table.root)
    return SliceTable(table.root, spec, rule, valid_instants(table.timeline()))


def check_against_hudi_rs(root: Path) -> tuple[Holders, set[tuple[str, str]]]:
    """Every written key and a few never written, asked of every slice of their partition and of
    every slice: the live (key, slice) pairs are hudi-rs's. Returns hudi-rs's holders and the
    written keys."""
    table = HudiTable(root)
    slices = table.file_slices()
    expected = hudi_rs_holders(root, slice_table(table).spec)
    written = written_keys(root, table)
    assert set(expected) <= written
    asked = sorted(written) + [(f"never-{i}", s.partition) for i, s in enumerate(slices)]
    keys = pa.array([k for k, _ in asked], pa.string())
    parts = np.array([p for _, p in asked], dtype=object)
    st = slice_table(table)
    located = slice_locations(slices)

    # per partition: each key against the slices of its partition
    slice_parts = np.array([s.partition for s in slices], dtype=object)
    key_idx, slice_pos = np.nonzero(parts[:, None] == slice_parts[None, :])
    found = locate_in_slices(st, slices, keys, key_idx, slice_pos)
    got: Holders = {}
    for k, p in zip(found.key_idx.tolist(), found.slice_pos.tolist(), strict=True):
        got.setdefault(asked[k], set()).add(slices[p].file_id)
        assert located.file_ids is not None and located.file_ids[p].as_py() == slices[p].file_id
    assert got == expected
    assert found.slices_read == len({int(p) for p in slice_pos})

    # globally: each key against every slice (a key is found in its own partition's group only)
    key_idx, slice_pos = (a.ravel() for a in np.indices((len(asked), len(slices))))
    found = locate_in_slices(st, slices, keys, key_idx, slice_pos, workers=3)
    pairs = zip(found.key_idx.tolist(), found.slice_pos.tolist(), strict=True)
    globally = {(asked[k][0], slices[p].partition, slices[p].file_id) for k, p in pairs}
    assert globally == {(k, p, f) for (k, p), ids in expected.items() for f in ids}
    return expected, written


@pytest.mark.parametrize("name", MOR_TABLES)
def test_every_real_mor_table_against_hudi_rs(name: str, hudi_tables: dict[str, Path]) -> None:
    expected, written = check_against_hudi_rs(hudi_tables[name])
    if "empty" not in name:
        assert expected
    # its log file deletes a key: written, not live
    if name == "mor_avro_v9_timebasedkeygen_nonhivestyle":
        assert set(expected) < written


def test_the_reported_file_is_the_base_file_or_the_latest_log_file(hudi_tables: dict[str, Path]) -> None:
    table = HudiTable(hudi_tables["mor_avro_v9_timebasedkeygen_nonhivestyle"])
    slices = table.file_slices()
    located = slice_locations(slices)
    assert located.paths.to_pylist() == [s.base.path if s.base else s.logs[-1].path for s in slices]
    assert located.partitions.to_pylist() == [s.partition for s in slices]


# ---------------------------------------------------------------------------- written tables


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("ordering_field", ["ts", None])
def test_written_tables_against_hudi_rs(tmp_path: Path, version: int, ordering_field: str | None) -> None:
    written = scenario(tmp_path / "t", version, ordering_field)
    expected, _ = check_against_hudi_rs(written.root)
    live = {int(k) for k, _ in expected}
    assert live == set(written.expected.column("id").to_pylist())
    # deleted: absent; re-inserted after a delete: back; the pending commit's deletes don't count
    assert not {6, 8, 0} & live and {5, 103, 202, 14, 201} <= live
    group_of = {g.file_id: g for g in written.file_groups}
    holders = {int(k): ids for (k, _), ids in expected.items()}
    assert all(len(ids) == 1 for ids in holders.values())
    # keys inserted into groups of log files only are found there
    assert all(group_of[i].base_file is None for k in (200, 201, 203) for i in holders[k])
    # a key updated in a log (12 by a record that loses on its ordering value) stays in its group
    in_base = {}
    for g in written.file_groups:
        if g.base_file is not None and g.base_instant == written.instants[0].requested:
            ids = pq.read_table(written.root / g.partition / g.base_file, columns=["id"]).column(0)
            in_base.update(dict.fromkeys(ids.to_pylist(), g.file_id))
    updated = [k for k in [*range(0, 60, 4), 12] if k in live]
    assert len(updated) == 14 and all(holders[k] == {in_base[k]} for k in updated)


def test_event_time_ordering_rules() -> None:
    """The fold without folding: greatest ordering value with ties to the later record, a record
    without a value replacing and being replaced in write order; commit time: the last."""
    codes = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    positions = np.array([-1, 0, 1, -1, 0, 1, 0, 1, 0])
    ordering = pa.array([5, 3, 5, 5, None, 2, None, None, 4])
    winner = latest_records(codes, positions, ordering, 5)
    # key 0: a tie goes to the later; key 1: the record after the valueless one wins (2 < 5);
    # key 2: the last valueless one; key 3: its only record; key 4: none
    assert winner.tolist() == [2, 5, 7, 8, -1]
    assert latest_records(codes, positions, None, 5).tolist() == [2, 5, 7, 8, -1]
    shuffled = np.random.default_rng(1).permutation(codes.size)
    again = latest_records(codes[shuffled], positions[shuffled], ordering.take(pa.array(shuffled)), 5)
    assert shuffled[again[:4]].tolist() == [2, 5, 7, 8]


def test_merge_modes_from_table_properties() -> None:
    v9 = {"hoodie.record.merge.mode": "EVENT_TIME_ORDERING", "hoodie.table.ordering.fields": "ts"}
    assert MergeRule.of(v9, "t") == MergeRule("ts")
    assert MergeRule.of({**v9, "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}, "t") == MergeRule(None)
    v6 = {"hoodie.table.precombine.field": "ts"}
    assert MergeRule.of(v6, "t") == MergeRule(None)  # OverwriteWithLatestAvroPayload, the default
    event = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
    assert MergeRule.of({**v6, "hoodie.compaction.payload.class": event}, "t") == MergeRule("ts")
    with pytest.raises(UnsupportedTableError, match="merge mode CUSTOM"):
        MergeRule.of({"hoodie.record.merge.mode": "CUSTOM"}, "t")
    partial = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
    with pytest.raises(UnsupportedTableError, match="PartialUpdateAvroPayload"):
        MergeRule.of({"hoodie.table.payload.class": partial}, "t")
    with pytest.raises(UnsupportedTableError, match="several fields"):
        MergeRule.of({**v9, "hoodie.table.ordering.fields": "a,b"}, "t")


def test_only_candidate_slices_are_read(tmp_path: Path) -> None:
    """Keys asked of one slice read that slice only: its base file's key column and its logs."""
    written = write_mor_table(
        tmp_path / "t",
        rows(list(range(3000))),
        record_key="id",
        file_groups=3,
        start=START,
        commits=[DeltaCommit(updates=rows([1, 2], 1))],
    )
    table = HudiTable(written.root)
    slices = table.file_slices()
    with_logs = next(i for i, s in enumerate(slices) if s.logs)
    base = slices[with_logs].base
    assert base is not None and len(slices) == 3
    ids = pq.read_table(written.root / base.path, columns=["id"]).column(0).to_pylist()
    keys = pa.array([str(ids[0]), str(ids[-1]), "1", "2", "99999"], pa.string())
    found = locate_in_slices(slice_table(table), slices, keys, np.arange(5), np.full(5, with_logs))
    assert found.slices_read == 1 and found.log_files_read == len(slices[with_logs].logs)
    assert found.base_files_read == 1 and found.row_groups_read >= 1 and found.bytes_read > 0
    assert found.log_records == 2  # keys 1 and 2 are both in this group, the only one with logs
    held = [i for i, k in enumerate(keys.to_pylist()) if k.isdigit() and int(k) in ids]
    assert found.key_idx.tolist() == held and set(found.slice_pos.tolist()) <= {with_logs}


@pytest.mark.parametrize("ordering_field", ["ts", None])
def test_deletes_with_ordering_values(tmp_path: Path, ordering_field: str | None) -> None:
    """A delete carrying an ordering value (a delete block's ``orderingVal``, as Hudi writes for a
    deleted record with a precombine value) competes by it under event time ordering: one below
    the live record's value loses (the key stays), one at or above it wins; under commit time
    ordering both delete. Appended to a log file as a second block of its own delta commit."""
    written = write_mor_table(
        tmp_path / "t",
        rows(list(range(12)), 5),
        record_key="id",
        ordering_field=ordering_field,
        file_groups=2,
        start=START,
        commits=[DeltaCommit(updates=rows([0, 1, 2, 3, 6, 7], 6))],
    )
    group = next(g for g in written.file_groups if g.log_files)
    log = group.log_files[-1]
    ids = [int(k) for k in pq.read_table(written.root / group.base_file, columns=["id"])[0].to_pylist()]
    low, high, unset = ids[0], ids[1], ids[2]
    deletes = pa.table(
        {
            "record_key": [str(low), str(high), str(unset)],
            "partition_path": ["", "", ""],
            "ordering_value": pa.array([1, 9, None], pa.int64()),
        }
    )
    with open(written.root / group.partition / log.name, "ab") as f:
        f.write(encode_delete_block(deletes, block_header(log.instant)))
    expected, _ = check_against_hudi_rs(written.root)
    live = {int(k) for k, _ in expected}
    assert unset not in live and high not in live
    assert (low in live) == (ordering_field is not None)
