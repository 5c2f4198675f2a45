"""Tagging a merge-on-read table from the log records the index stores (the ``log_records``
partition): which records count is decided at tag time from the timeline, so a delta commit
completing, or a rollback block written, after the build changes the answer without a rebuild; no
log file is opened when every candidate slice's log files are stored; a log file that does not
decode is read instead; a damaged partition is a typed error. On the real table version 6 table
(commit time ordering; event time by its payload changed) with crafted log files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_prune_mor import V6, V6_BASE_INSTANT, V6_GROUP, append_log, delta_commit, snapshot

from index_store import IndexCorruptError, IndexedTable, open_table
from index_store.hudi_log import (
    BlockType,
    CommandType,
    block_header,
    encode_command_block,
    encode_delete_block,
    frame,
)
from index_store.partitions import REGISTRY
from index_store.tagging import tag_stats

INSTANT = "20250122000000000"


def _delete_of_3(ordering: int | None = None) -> bytes:
    """A delete block of id 3 (in the base file of V6_GROUP) at ``INSTANT``, with an ordering value
    (none: Hudi's "no value", the delete applies in write order)."""
    deletes = pa.table(
        {
            "record_key": ["3"],
            "partition_path": [V6_GROUP[0]],
            "ordering_value": pa.array([0 if ordering is None else ordering], pa.int64()),
            "ordering_wrapper": ["IntWrapper" if ordering is None else "LongWrapper"],
        }
    )
    return encode_delete_block(deletes, block_header(INSTANT))


def _group_of_3(t: IndexedTable, **kwargs: object) -> str | None:
    result = t.tag(["3"], **kwargs)  # type: ignore[arg-type]
    (file_id,) = result["file_id"].to_pylist()
    return file_id


@pytest.mark.parametrize("using", ["bloom", "record"])
def test_a_pending_delete_counts_once_completed_without_a_rebuild(
    copy_table: Callable[[str], Path], using: str
) -> None:
    root = copy_table(V6)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3())
    hoodie = root / ".hoodie"
    (hoodie / f"{INSTANT}.deltacommit.requested").write_bytes(b"")
    (hoodie / f"{INSTANT}.deltacommit.inflight").write_bytes(b"")
    t = open_table(root)
    t.build(progress=False, record_index=using == "record")
    assert _group_of_3(t, using=using) == V6_GROUP[1]  # pending: the delete does not count
    delta_commit(root, INSTANT)  # the commit completes; no data file changes
    assert 3 not in snapshot(root)["id"].to_pylist()  # hudi-rs: deleted
    result = t.tag(["3", "1"], using=using)
    assert result["file_id"].to_pylist() == [None, V6_GROUP[1]]
    stats = tag_stats(result)
    assert (stats.log_files_read, stats.slices_read) == (0, 0)  # decided from the index
    if using == "record":
        assert stats.files_opened == 0  # the record index is exact: no base file read either


def test_a_rollback_block_after_the_build_undoes_the_delete(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3())
    delta_commit(root, INSTANT)
    t = open_table(root)
    t.build(progress=False, record_index=True)
    assert _group_of_3(t) is None
    # A rollback block of the delete's instant, in the slice's next log file (the old log file's
    # entry, and its stored records, stay as they are).
    rollback = block_header("20250123000000000", target_instant=INSTANT, command=CommandType.ROLLBACK)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 3, encode_command_block(rollback))
    t.sync(progress=False)
    result = t.tag(["3"])
    assert result["file_id"].to_pylist() == [V6_GROUP[1]]
    assert tag_stats(result).log_files_read == 0


@pytest.mark.parametrize(("offset", "kept"), [(-1, True), (1, False)])
def test_event_time_a_delete_of_a_lower_ordering_value_loses_to_the_base_row(
    copy_table: Callable[[str], Path], offset: int, kept: bool
) -> None:
    """Ordered by ``longField``: a delete of id 3 below its base row's value loses (the key stays),
    one above it wins (the key is gone). The base row's value is read, only for that key."""
    root = copy_table(V6)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(
        props.read_text().replace("OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload")
    )
    snap = snapshot(root)
    base_value = snap.filter(pc.equal(snap["id"], 3))["longField"][0].as_py()
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3(base_value + offset))
    delta_commit(root, INSTANT)
    t = open_table(root)
    t.build(progress=False, record_index=True)
    result = t.tag(["3"])
    assert result["file_id"].to_pylist() == [V6_GROUP[1] if kept else None]
    stats = tag_stats(result)
    assert stats.log_files_read == 0 and stats.files_read == 1  # the base row's ordering value


def test_a_log_file_that_does_not_decode_is_read(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    odd = frame(int(BlockType.HFILE_DATA), block_header(INSTANT), b"\x00\x01")
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, odd)
    t = open_table(root)  # the block's instant is not on the timeline: it would not count
    t.build(progress=False, record_index=True)
    result = t.tag(["3"])
    assert result["file_id"].to_pylist() == [V6_GROUP[1]]
    stats = tag_stats(result)
    assert stats.slices_read >= 1 and stats.log_files_read == 2  # its slice's logs were read


def test_a_tag_decided_from_stored_records_opens_no_log_file(copy_table: Callable[[str], Path]) -> None:
    root = copy_table(V6)
    t = open_table(root)
    t.build(progress=False, record_index=True)
    keys = [str(i) for i in range(12)]
    result = t.tag(keys)
    stats = tag_stats(result)
    assert stats.log_files_read == 0 and stats.files_opened == 0
    holders = snapshot(root)
    live = {str(i) for i in holders["id"].to_pylist()}
    assert {k for k, f in zip(keys, result["file_id"].to_pylist(), strict=True) if f} == live & set(keys)


def test_an_index_without_the_partition_reads_the_log_files(copy_table: Callable[[str], Path]) -> None:
    """An index built before ``log_records`` existed (built here with it unregistered): the same
    tags, from the log files read."""
    root = copy_table(V6)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3())
    delta_commit(root, INSTANT)
    partition = next(p for p in REGISTRY if p.name == "log_records")
    REGISTRY.unregister("log_records")
    try:
        t = open_table(root)
        t.build(progress=False, record_index=True)
    finally:
        REGISTRY.register(partition)
    assert not t.snapshot().live.get("log_records")
    result = open_table(root).tag(["3", "1"])
    assert result["file_id"].to_pylist() == [None, V6_GROUP[1]]
    assert tag_stats(result).log_files_read == 2


@pytest.mark.parametrize("using", ["bloom", "record"])
def test_a_key_repeated_in_the_batch_is_tagged_each_time(
    copy_table: Callable[[str], Path], using: str
) -> None:
    root = copy_table(V6)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3())
    delta_commit(root, INSTANT)
    t = open_table(root)
    t.build(progress=False, record_index=using == "record")
    result = t.tag(["1", "3", "1", "3", "1"], using=using)  # type: ignore[arg-type]
    assert result["file_id"].to_pylist() == [V6_GROUP[1], None, V6_GROUP[1], None, V6_GROUP[1]]
    assert tag_stats(result).log_files_read == 0


def test_compaction_keeps_the_live_log_files_records(copy_table: Callable[[str], Path]) -> None:
    """After a sync adds a log file (a delete of id 3) and a compaction, one ``log_records`` file
    holds both log files' rows: the tag is still decided from them, the delete counted."""
    root = copy_table(V6)
    t = open_table(root)
    t.build(progress=False, record_index=True)
    append_log(root, V6_GROUP, V6_BASE_INSTANT, 2, _delete_of_3())
    delta_commit(root, INSTANT)
    t.sync(progress=False)
    assert len(t.snapshot().live["log_records"]) == 2
    t.compact()
    assert len(t.snapshot().live["log_records"]) == 1
    result = open_table(root).tag(["3", "1"])
    assert result["file_id"].to_pylist() == [None, V6_GROUP[1]]
    assert tag_stats(result).log_files_read == 0


@pytest.mark.parametrize("damage", ["truncate", "garbage", "kind"])
def test_a_damaged_log_records_partition_is_a_typed_error(
    copy_table: Callable[[str], Path], damage: str
) -> None:
    root = copy_table(V6)
    t = open_table(root)
    t.build(progress=False, record_index=True)
    (rel,) = t.snapshot().live["log_records"]
    target = t.index_root / rel
    if damage == "kind":
        import pyarrow.parquet as pq

        rows = pq.read_table(target)
        rows = rows.set_column(1, "kind", pa.array(["nonsense"] * rows.num_rows))
        pq.write_table(rows, target)
    else:
        data = target.read_bytes()
        target.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" * 50)
    with pytest.raises(IndexCorruptError) as info:
        open_table(root).tag(["3"])
    assert os.path.basename(rel) in str(info.value) or "log_records" in str(info.value)
