"""``IndexedTable.tag`` on merge-on-read tables: each key tagged with the file group holding it in
hudi-rs's snapshot (``hudi.HudiTable.read``), by both methods, per partition and globally, on every
real merge-on-read table of tests/data/hudi and on tables written by
``index_store.datagen.hudi_mor``. A key whose latest record is a delete is an insert, a key
updated in a log stays in its group, a key of a group of log files only is reported with the
group's latest log file; a new delta commit makes the index stale."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hudi_data import MOR_TABLES
from mor_oracle import START, hudi_rs_holders, rows, scenario, written_keys

from index_store import DuplicateKeyError, IndexedTable, IndexStaleError, open_table
from index_store.datagen.hudi_mor import DeltaCommit, write_mor_table
from index_store.hudi_log import RECORD_KEY, scan_log_files, valid_instants
from index_store.tables.hudi import HudiTable
from index_store.tagging import tag_stats
from index_store.tagging.locations import KeyQuery, TagContext
from index_store.tagging.merge_rule import MergeRule
from index_store.tagging.merged import MergedTagging
from index_store.tagging.slices import SliceTable

METHODS: list[Literal["bloom", "record"]] = ["bloom", "record"]
Located = tuple[str | None, str | None]  # (file id, absolute file)


def _tagged(result: pa.Table, by_partition: bool) -> dict[tuple[str, str | None], set[Located]]:
    out: dict[tuple[str, str | None], set[Located]] = {}
    columns = (result[c].to_pylist() for c in ("key", "partition", "file_id", "file"))
    for key, part, file_id, file in zip(*columns, strict=True):
        out.setdefault((key, part if by_partition else None), set()).add((file_id, file))
    return out


def check_tags(t: IndexedTable, method: Literal["bloom", "record"]) -> dict[str, set[Located]]:
    """Every key written to the table and one never written per partition, tagged per partition and
    globally: the file ids are hudi-rs's, the files each slice's base file (else its latest log
    file). Returns key -> its locations (globally)."""
    root = Path(t.root)
    reader = t.reader
    spec = reader.record_key_spec()
    assert spec is not None
    reported = {
        s.file_id: os.path.join(t.root, (s.base.path if s.base else s.logs[-1].path))
        for s in reader.file_slices()
    }
    holders = hudi_rs_holders(root, spec)
    asked = sorted(written_keys(root, reader)) + [
        (f"never-{i}", p) for i, p in enumerate(sorted({s.partition for s in reader.file_slices()}))
    ]
    keys, parts = [k for k, _ in asked], [p for _, p in asked]
    expected: dict[tuple[str, str | None], set[Located]] = {}
    for key, part in asked:
        ids = holders.get((key, part))
        expected[(key, part)] = {(i, reported[i]) for i in ids} if ids else {(None, None)}
    result = t.tag(keys, parts, using=method)
    assert _tagged(result, by_partition=True) == expected

    everywhere: dict[tuple[str, str | None], set[Located]] = {}
    for (key, _), located in expected.items():
        everywhere.setdefault((key, None), set()).update(located)
    for located in everywhere.values():
        if len(located) > 1:
            located.discard((None, None))  # found in another partition's group
    result = t.tag(keys, using=method)
    assert _tagged(result, by_partition=False) == everywhere
    stats = tag_stats(result)
    assert stats.updates == sum((None, None) not in v for v in everywhere.values())
    return {k: v for (k, _), v in everywhere.items()}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", MOR_TABLES)
def test_every_real_mor_table_against_hudi_rs(
    name: str, method: Literal["bloom", "record"], copy_table: Callable[[str], Path]
) -> None:
    t = open_table(copy_table(name))
    t.build(record_index=method == "record", progress=False)
    found = check_tags(t, method)
    twice = sorted(k for k, v in found.items() if len(v) > 1)
    if twice:  # Hudi's insert wrote the key into two file groups: strictness refuses it
        with pytest.raises(DuplicateKeyError, match=repr(twice[0])):
            t.tag(twice[:1], using=method, on_duplicate="error")
    once = [k for k, v in found.items() if len(v) == 1]
    strict = t.tag(once, using=method, on_duplicate="error")
    assert strict.num_rows == len(once)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("ordering_field", ["ts", None])
def test_written_tables_against_hudi_rs(
    tmp_path: Path, method: Literal["bloom", "record"], version: int, ordering_field: str | None
) -> None:
    written = scenario(tmp_path / "t", version, ordering_field)
    t = open_table(written.root)
    t.build(record_index=method == "record", progress=False)
    found = check_tags(t, method)
    group_of = {g.file_id: g for g in written.file_groups}
    # deleted after an update, deleted (8, 0, 6): inserts; the pending commit's deletes count for
    # nothing (14, 201); re-inserted after a delete (5, 103, 202): found
    assert all(found[str(k)] == {(None, None)} for k in (0, 6, 8))
    assert all(len(found[str(k)]) == 1 and (None, None) not in found[str(k)] for k in (14, 201, 5, 103))
    # updated in a log: its base file's group, the base file reported
    ((file_id, file),) = found["4"]
    assert file is not None and os.path.basename(file) == group_of[str(file_id)].base_file
    # inserted into a group of log files only: that group, the latest log file of its slice as
    # Hudi lists it reported (table version 6: the pending commit's log file too)
    ((file_id, file),) = found["201"]
    (listed,) = [s for s in written.slices() if s.file_id == file_id]
    assert listed.base_file is None and file is not None
    assert os.path.basename(file) == listed.log_files[-1]


def test_a_new_delta_commit_makes_the_index_stale(tmp_path: Path) -> None:
    """A log file appended since the index was synced may bring or delete any key: refused, and
    ``sync=True`` tags after indexing it."""
    written = write_mor_table(
        tmp_path / "t", rows(list(range(30))), record_key="id", partition_by="region", start=START
    )
    t = open_table(written.root)
    t.build(progress=False, record_index=True)
    assert t.tag(["4", "300"])["file_id"].null_count == 1
    written.append(DeltaCommit(deletes=[4], inserts=rows([300], 1), insert_into="log_only"))
    with pytest.raises(IndexStaleError):
        t.tag(["4", "300"])
    result = t.tag(["4", "300"], sync=True)
    assert result["file"].is_null().to_pylist() == [True, False]
    (log_only,) = [g for g in written.file_groups if g.base_file is None]
    assert result["file_id"].to_pylist() == [None, log_only.file_id]
    assert result["partition"].to_pylist() == [None, log_only.partition]
    # The synced log file's records are in the index (log_records): nothing is opened.
    stats = tag_stats(t.tag(["300"], ["eu"], using="record"))
    assert (stats.updates, stats.files_opened, stats.files_read) == (1, 0, 0)
    assert (stats.slices_read, stats.log_files_read) == (0, 0)


@pytest.mark.parametrize("version", [6, 9])
def test_files_whose_keys_the_index_holds_are_read_only_for_their_keys(tmp_path: Path, version: int) -> None:
    """When the index holds the keys of every file, log files too (as log files indexed from their
    records will), a key is looked for only in the slices of the files named for it, their base
    file only when it was named: the tags are still hudi-rs's, and fewer slices are read."""
    written = scenario(tmp_path / "t", version, "ts")
    reader = HudiTable(written.root)
    spec = reader.record_key_spec()
    assert spec is not None
    slices = reader.file_slices()
    files = [f for s in slices for f in s.files]
    paths = pa.array([f.path for f in files], pa.string())
    # What such an index answers: every (key, file) whose records, valid or not, hold the key.
    holding: dict[str, set[int]] = {}
    for i, f in enumerate(files):
        full = written.root / f.path
        if f.path.endswith(".parquet"):
            keys = pq.read_table(full, columns=["_hoodie_record_key"]).column(0).to_pylist()
        else:
            keys = (
                scan_log_files([full], lambda _i: True, key_spec=spec).records.column(RECORD_KEY).to_pylist()
            )
        for key in keys:
            holding.setdefault(key, set()).add(i)
    asked = [*sorted(holding), "never"]
    key_idx = np.array([k for k, key in enumerate(asked) for _ in holding.get(key, ())], dtype=np.int64)
    file_pos = np.array([i for key in asked for i in sorted(holding.get(key, ()))], dtype=np.int64)
    table = SliceTable(str(written.root), spec, MergeRule("ts"), valid_instants(reader.timeline()))
    merged = MergedTagging.of(table, slices, paths, np.ones(len(files), dtype=bool))
    assert merged.unlocated.size == 0
    context = TagContext(
        root=str(written.root),
        paths=paths,
        partitions=pa.array([f.partition for f in files], pa.string()),
        file_idx=np.arange(len(files)),
        present=np.ones(len(files), dtype=bool),
        spec=spec,
        key_filters=lambda: pytest.fail("not asked"),
        record_lookup=None,
    )
    located = merged(KeyQuery(context, pa.array(asked), None, "record"), key_idx, file_pos)
    got: dict[str, set[str]] = {}
    for k, p in zip(located.key_idx.tolist(), located.loc_pos.tolist(), strict=True):
        assert located.locations.file_ids is not None
        got.setdefault(asked[k], set()).add(located.locations.file_ids[p].as_py())
    expected = {k: ids for (k, _), ids in hudi_rs_holders(written.root, spec).items()}
    assert got == expected
    # 201, 103 and 202 are in log records only: no base file is opened for them
    only_in_logs = [asked.index(k) for k in ("201", "103", "202")]
    few = merged(
        KeyQuery(context, pa.array(asked), None, "record"), *_pairs_of(only_in_logs, key_idx, file_pos)
    )
    assert few.counters["files_opened"] == 0 and few.counters["slices_read"] == 3


def _pairs_of(keys: list[int], key_idx: np.ndarray, file_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = np.isin(key_idx, keys)
    return key_idx[keep], file_pos[keep]
