"""An index source defined only here joins file pruning: one class and one ``register_source``.

It knows each data file's exact set of ``k`` values (read from the files themselves; a real source
would keep them in the index). Its answers are intersected with the built-in sources', and
``explain()`` names it for the files only it ruled out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import FileStats, col
from index_store import open_table
from index_store.sources import (
    IndexSource,
    SourceQuery,
    index_sources,
    register_source,
    unregister_source,
)


@dataclass(frozen=True)
class ExactValues:
    """Membership of each file's exact set of values (a Python set per file: it is a test)."""

    values: tuple[frozenset[int], ...]

    def __len__(self) -> int:
        return len(self.values)

    def take(self, indices: np.ndarray) -> ExactValues:
        return ExactValues(tuple(self.values[int(i)] for i in indices))

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        wanted = {v for v in values.to_pylist() if v is not None}
        return pa.array([bool(wanted & held) for held in self.values], pa.bool_())


@dataclass(frozen=True)
class DistinctValuesSource:
    """The test source: available when a predicate uses ``k``; answers = and IN on it."""

    table_root: str
    name: str = "exact values (test)"

    def available(self, query: SourceQuery) -> bool:
        return "k" in query.columns

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        paths = query.loaded.paths.to_pylist()
        held = tuple(
            frozenset(pq.read_table(os.path.join(self.table_root, p), columns=["k"])["k"].to_pylist())
            for p in paths
        )
        return stats.with_membership("k", ExactValues(held))


@pytest.fixture
def table_root(tmp_path: Path) -> Path:
    root = tmp_path / "t"
    root.mkdir()
    # Ranges overlap 3 in files 0 and 1; only file 0's range is ruled out by statistics alone.
    pq.write_table(pa.table({"k": [0, 10], "v": ["a", "b"]}), root / "f0.parquet")
    pq.write_table(pa.table({"k": [1, 2, 4, 9], "v": ["c", "d", "e", "f"]}), root / "f1.parquet")
    pq.write_table(pa.table({"k": [20, 30], "v": ["g", "h"]}), root / "f2.parquet")
    return root


@pytest.fixture
def registered(table_root: Path) -> Iterator[IndexSource]:
    source = register_source(DistinctValuesSource(str(table_root)))
    yield source
    unregister_source(source.name)


def test_the_source_is_listed_and_protocol_checked(registered: IndexSource) -> None:
    assert isinstance(registered, IndexSource)
    assert index_sources()[-1] is registered
    assert [s.name for s in index_sources()[:4]] == [
        "column statistics",
        "bloom filters",
        "secondary indexes",
        "record keys",
    ]
    with pytest.raises(ValueError, match="registered already"):
        register_source(registered)
    with pytest.raises(TypeError):
        register_source(object())  # type: ignore[arg-type]


def test_prune_intersects_its_answer_and_explain_names_it(registered: IndexSource, table_root: Path) -> None:
    t = open_table(table_root)
    t.build()
    result = t.prune(col("k") == 3)
    # Statistics keep f0 (0..10) and f1 (1..9); the exact values rule both out.
    assert result.files == []
    assert result.removed_by_source == {"column statistics": 1, "exact values (test)": 2}
    assert "exact values (test) 2" in result.explain()
    kept = t.prune(col("k").isin([4, 20]))
    assert sorted(os.path.basename(f) for f in kept.files) == ["f1.parquet", "f2.parquet"]
    assert kept.removed_by_source == {"exact values (test)": 1}
    # A predicate not on ``k``: the source is not available, nothing changes.
    other = t.prune(col("v") == "z")
    assert "exact values (test)" not in other.removed_by_source


def test_without_the_source_statistics_alone_keep_more(table_root: Path) -> None:
    t = open_table(table_root)
    t.build()
    result = t.prune(col("k") == 3)
    assert sorted(os.path.basename(f) for f in result.files) == ["f0.parquet", "f1.parquet"]
    assert result.removed_by_source == {"column statistics": 1}
    assert pc.sum(t.stats(["k"]).row_count).as_py() == 8
