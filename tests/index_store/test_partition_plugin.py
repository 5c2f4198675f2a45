"""A partition defined only here plugs into the index: one class and one ``REGISTRY.register``.

It records each data file's path length (anything per file would do). Every commit offers it the
new files, compaction asks what it keeps, cleaning deletes its unused files, and readers of the
other partitions never notice it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import col
from index_store import open_table
from index_store.partitions import REGISTRY, Batch, LiveIndex
from index_store.partitions.base import positions_of, read_index_file, scatter, write_index_file

SCHEMA = pa.schema([("file_idx", pa.int64()), ("path_length", pa.int64())])


class PathLengths:
    """The test partition: ``file_idx -> len(path)``."""

    name = "path_lengths"
    schema = SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        if not len(batch.files):
            return None
        lengths = pa.array([len(f.path) for f in batch.files], pa.int64())
        rows = pa.table({"file_idx": pa.array(batch.file_idx, pa.int64()), "path_length": lengths})
        return write_index_file(root, self.name, [rows], SCHEMA)

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        lengths = read_path_lengths(root, index.live.get(self.name, ()), index.file_idx)
        rows = pa.table({"file_idx": pa.array(index.file_idx, pa.int64()), "path_length": lengths})
        return write_index_file(root, self.name, [rows], SCHEMA)


def read_path_lengths(root: Path, live: Sequence[str], file_idx: np.ndarray) -> pa.Array:
    """The recorded length for each of ``file_idx`` (null: not recorded)."""
    tables = [read_index_file(root, rel, SCHEMA) for rel in live]
    if not tables:
        return pa.nulls(len(file_idx), pa.int64())
    rows = pa.concat_tables(tables)
    return scatter(rows["path_length"], positions_of(file_idx, rows["file_idx"].to_numpy()))


@pytest.fixture
def registered() -> Iterator[None]:
    REGISTRY.register(PathLengths())
    yield
    REGISTRY.unregister("path_lengths")


def _write(path: Path, k: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"k": [k, k + 1]}), path)


def _lengths(root: Path) -> dict[str, int | None]:
    t = open_table(root)
    snap = t.snapshot()
    loaded = t.stats(columns=[])
    idx = t._load().file_idx
    lengths = read_path_lengths(t.index_root, snap.live["path_lengths"], idx)
    return dict(zip(loaded.files.to_pylist(), lengths.to_pylist(), strict=True))


def test_a_registered_partition_follows_every_commit(registered: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    for i in range(3):
        _write(root / f"f{i}.parquet", i * 10)
    t = open_table(root)
    t.build()
    assert _lengths(root) == {"f0.parquet": 10, "f1.parquet": 10, "f2.parquet": 10}
    _write(root / "sub" / "longer_name.parquet", 100)
    (root / "f1.parquet").unlink()
    t.update(added=["sub/longer_name.parquet"], removed=["f1.parquet"])
    assert _lengths(root) == {"f0.parquet": 10, "f2.parquet": 10, "sub/longer_name.parquet": 23}
    before = t.snapshot().live["path_lengths"]
    assert len(before) == 2  # the build's file and the update's
    t.compact()
    after = t.snapshot().live["path_lengths"]
    assert len(after) == 1 and _lengths(root) == {
        "f0.parquet": 10,
        "f2.parquet": 10,
        "sub/longer_name.parquet": 23,
    }
    deleted = t.clean(retention_seconds=0)
    assert set(before) <= set(deleted)
    assert not any((t.index_root / rel).exists() for rel in before)
    # The other partitions are as they would be without it.
    assert t.prune(col("k") == 100).files == [str(root / "sub" / "longer_name.parquet")]


def test_an_index_built_without_the_partition_still_reads(registered: None, tmp_path: Path) -> None:
    root = tmp_path / "t"
    _write(root / "f0.parquet", 1)
    REGISTRY.unregister("path_lengths")
    try:
        open_table(root).build()
    finally:
        REGISTRY.register(PathLengths())
    assert _lengths(root) == {"f0.parquet": None}  # nothing recorded: unknown, not an error
    assert pc.sum(open_table(root).stats(["k"]).row_count).as_py() == 2


def test_a_partition_name_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered already"):
        REGISTRY.register(_Files())


class _Files:
    name = "files"
    schema = SCHEMA

    def write(self, root: Path, batch: Batch) -> str | None:
        return None

    def compact(self, root: Path, index: LiveIndex) -> str | None:
        return None
