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

import pyarrow as pa
import pytest
from hudi_data import MOR_TABLES
from mor_oracle import START, hudi_rs_holders, rows, scenario, written_keys

from index_store import DuplicateKeyError, IndexedTable, IndexStaleError, open_table
from index_store.datagen.hudi_mor import DeltaCommit, write_mor_table
from index_store.tagging import tag_stats

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
    # The record index holds no key of the new log file: the slices of log files of the key's
    # partition are read, their logs only, since the index names no base file for the key.
    stats = tag_stats(t.tag(["300"], ["eu"], using="record"))
    assert (stats.updates, stats.files_opened, stats.files_read) == (1, 0, 0)
    assert stats.slices_read == len(
        [g for g in written.file_groups if g.partition == "region=eu" and g.log_files]
    )
