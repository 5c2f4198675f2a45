"""The timeline names what each commit did with one closed set, ``Operation``: every write path
writes one of its members (``sync`` writes ``update``), and an entry naming anything else is a
corrupt entry, not a new kind of commit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from index_store import IndexCorruptError, open_table
from index_store.timeline import IndexTimeline, Operation


def _write(root: Path, i: int) -> None:
    pq.write_table(
        pa.table({"id": np.arange(i * 10, i * 10 + 10), "s": [f"v{i}"] * 10}), root / f"f{i}.parquet"
    )


def test_every_write_path_commits_a_member_of_operation(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    for i in range(2):
        _write(root, i)
    t = open_table(root)
    t.build(progress=False)
    _write(root, 2)
    t.sync(progress=False)
    t.compact()
    t.create_index(["s"], "value", name="by_s")
    t.build_index("by_s", progress=False)
    t.drop_index("by_s")
    timeline = IndexTimeline(Path(t.index_root))
    written = [timeline.read(v).operation for v in timeline.versions()]
    assert written == ["build", "update", "compact", "create_index", "build_index", "drop_index"]
    assert all(isinstance(op, Operation) for op in written)
    assert {str(op) for op in Operation} == set(written)  # no member that nothing writes


def test_an_entry_naming_another_operation_is_corrupt(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    _write(root, 0)
    t = open_table(root)
    t.build(progress=False)
    timeline = IndexTimeline(Path(t.index_root))
    path = timeline.path(timeline.versions()[-1])
    entry = json.loads(path.read_text())
    entry["operation"] = "sync"  # listed once in the docs, never written
    path.write_text(json.dumps(entry))
    with pytest.raises(IndexCorruptError, match="not a valid timeline entry"):
        IndexTimeline(Path(t.index_root)).read(timeline.versions()[-1])
