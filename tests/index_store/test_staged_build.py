"""Staged builds (``IndexedTable.build(stage=...)``): index files written into a staging folder
of the index by someone else (Spark executors), then one commit by the driver."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store import IndexedTable, open_table
from index_store.builder import compute_file_keys, compute_stats
from index_store.errors import CommitConflictError, TableFormatError
from index_store.partitions import Batch
from index_store.staged import STAGING, Staged, StageRequest, write_batch


def _table(root: Path, files: int = 4) -> Path:
    root.mkdir()
    for i in range(files):
        ids = np.arange(i * 100, i * 100 + 100)
        pq.write_table(
            pa.table({"id": pa.array([f"k{v:05d}" for v in ids]), "v": ids}), root / f"f{i}.parquet"
        )
    return root


def _local_stage(request: StageRequest, duplicate: bool = False) -> Staged:
    """What a task of a distributed build does, here: the batch written under the staging folder
    (twice with ``duplicate``, as a speculative copy would; only the first is named)."""
    built = compute_stats(
        request.root,
        request.files,
        request.partition_schema,
        bloom_columns=request.config.bloom_columns,
        fpp=request.config.fpp,
    )
    assert request.spec is not None
    keys = compute_file_keys(request.root, request.files, request.spec, request.config.key_fpp, True)
    batch = Batch(
        built.files,
        np.arange(len(request.files), dtype=np.int64),
        request.version,
        built.stats,
        built.blooms,
        built.exact_columns,
        record_keys=keys,
        config=request.config,
    )
    added = write_batch(request.staging, batch)
    if duplicate:
        write_batch(request.staging, batch)
    return Staged(added, built.stats.schema)


def _index_files(t: IndexedTable) -> set[str]:
    return {str(p.relative_to(t.index_root)) for p in t.index_root.rglob("*") if p.is_file()}


def _build(t: IndexedTable, stage: Callable[[StageRequest], Staged] | None = None) -> int:
    return t.build(record_key="id", record_index=True, bloom_columns=["v"], progress=False, stage=stage)


def test_a_staged_build_is_the_local_build_and_links_only_what_it_names(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    local, staged = open_table(root, tmp_path / "local"), open_table(root, tmp_path / "staged")
    assert _build(local) == _build(staged, lambda r: _local_stage(r, duplicate=True)) == 1
    assert local.snapshot().config == staged.snapshot().config
    assert local.snapshot().schema.equals(staged.snapshot().schema)
    assert {p: len(f) for p, f in local.snapshot().live.items()} == {
        p: len(f) for p, f in staged.snapshot().live.items()
    }
    assert local.stats().columns["v"].max.equals(staged.stats().columns["v"].max)
    keys = pa.array(["k00042", "k00399", "nope"])
    assert local.tag(keys).equals(staged.tag(keys))
    # The duplicate's files were never linked, and the staging folder is gone.
    assert _index_files(staged) == {rel for files in staged.snapshot().live.values() for rel in files} | {
        "timeline/00000000000000000001.json"
    }
    assert not (staged.index_root / STAGING).exists()


def test_a_commit_landing_meanwhile_is_a_conflict_and_the_index_stays_readable(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    _build(t)

    def racing(request: StageRequest) -> Staged:
        staged = _local_stage(request)
        assert open_table(root).sync() is None and open_table(root).compact() == 2  # lands first
        return staged

    with pytest.raises(CommitConflictError, match="staged for version 2"):
        _build(t, racing)
    assert t.timeline.versions() == [1, 2]
    assert t.stats().num_files == 4 and t.snapshot().version == 2
    assert not (t.index_root / STAGING).exists()


def test_a_failing_stage_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    _build(t)
    before = _index_files(t)

    def failing(request: StageRequest) -> Staged:
        _local_stage(request)
        raise TableFormatError("a task failed")

    with pytest.raises(TableFormatError, match="a task failed"):
        _build(t, failing)
    assert t.timeline.versions() == [1]
    assert _index_files(t) == before
    assert t.stats().num_files == 4
    assert not (t.index_root / STAGING).exists()
    first = open_table(root, tmp_path / "never")
    with pytest.raises(TableFormatError, match="a task failed"):
        _build(first, failing)
    assert not first.index_root.exists()


def test_a_staged_rebuild_moves_the_old_index_aside(tmp_path: Path) -> None:
    root = _table(tmp_path / "t")
    t = open_table(root)
    _build(t)
    assert t.build(rebuild=True, progress=False, stage=_local_stage) == 1
    assert len(list(root.joinpath(".hoodie").glob(".index.broken-*"))) == 1
    assert t.stats().num_files == 4 and t.tag(["k00042"])["file"][0].as_py().endswith("f0.parquet")
    assert not (t.index_root / STAGING).exists()
