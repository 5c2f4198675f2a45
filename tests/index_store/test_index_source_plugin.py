"""An index source defined only here joins every question an index answers: one class and one
``register_source``.

It answers from a side table the test writes (each data file's rows: file, row position, ``k``
and the record key ``k`` makes), as a real source would from its own index: files by each file's
exact set of ``k`` values, rows of a predicate on ``k``, and which file holds each record key.
Its answers are intersected with the built-in sources', and ``explain()`` (and ``TagStats``)
names it.
"""

from __future__ import annotations

import functools
import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hudi_expr import And, FileStats, Predicate, col
from index_store import IndexSourceError, open_table
from index_store.secondary import FileRows, IndexUse
from index_store.sources import (
    IndexSource,
    KeyAnswer,
    KeyQuery,
    LocatesKeys,
    PrunesFiles,
    RowAnswer,
    RowQuery,
    SelectsRows,
    SourceQuery,
    index_sources,
    key_sources,
    register_source,
    row_sources,
    unregister_source,
)
from index_store.tagging import tag_stats

NAME = "exact values (test)"


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
    """The test source: files and rows for predicates on ``k``, and where each record key is."""

    side: str  # the side table's path
    name: str = NAME

    def _side(self) -> pa.Table:
        return pq.read_table(self.side)

    # ---- files: = and IN on ``k``
    def available(self, query: SourceQuery) -> bool:
        return "k" in query.columns

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        per_file = self._side().group_by("file").aggregate([("k", "distinct")])
        where = pc.index_in(query.loaded.paths, value_set=per_file["file"])
        held = tuple(frozenset(v or ()) for v in per_file["k_distinct"].take(where).to_pylist())
        return stats.with_membership("k", ExactValues(held))

    # ---- rows: the conjuncts on ``k``, evaluated over the side table
    def row_positions(self, query: RowQuery) -> RowAnswer | None:
        conjuncts = query.bound.children if isinstance(query.bound, And) else (query.bound,)
        on_k = [c for c in conjuncts if isinstance(c, Predicate) and c.term.name == "k"]
        if not on_k:
            return None
        paths = pa.array(query.paths, pa.string())
        wanted = functools.reduce(operator.and_, (c.to_pyarrow() for c in on_k))
        found = self._side().filter(pc.field("file").isin(paths) & wanted)
        pos = pc.index_in(found["file"], value_set=paths).to_numpy()
        offsets = np.concatenate([[0], np.cumsum(query.row_counts)])
        flat = np.zeros(int(offsets[-1]), dtype=bool)
        flat[offsets[pos] + found["row"].to_numpy()] = True
        exact = len(on_k) == len(conjuncts)
        masks = np.split(flat, offsets[1:-1]) if len(paths) else []
        rows = [
            FileRows(None, False) if changed else FileRows(mask, exact)  # a rewritten file: unknown
            for mask, changed in zip(masks, query.changed, strict=True)
        ]
        use = IndexUse(True, f"{len(on_k)} predicate(s) on k read from the side table", source=self.name)
        return RowAnswer(rows, use)

    # ---- keys: the record key's file, exactly
    def key_locations(self, query: KeyQuery) -> KeyAnswer | None:
        side = self._side().select(["key", "file"]).group_by(["key", "file"]).aggregate([])
        wanted = pa.table({"key": query.keys, "key_idx": pa.array(np.arange(len(query.keys)))})
        pairs = wanted.join(side, "key")
        file_pos = pc.index_in(pairs["file"], value_set=query.context.paths)
        live = pc.is_valid(file_pos)
        key_idx = pairs["key_idx"].filter(live).to_numpy()
        positions = file_pos.filter(live).to_numpy()
        keep = query.in_scope(key_idx, positions)
        return KeyAnswer(key_idx[keep], positions[keep], exact=True)


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
def side_table(table_root: Path) -> Path:
    """Each data file's rows, written next to the table (not in it): what the source knows."""
    parts = []
    for name in sorted(os.listdir(table_root)):
        k = pq.read_table(table_root / name, columns=["k"])["k"]
        parts.append(
            pa.table(
                {
                    "file": pa.array([name] * len(k), pa.string()),
                    "row": pa.array(np.arange(len(k)), pa.int64()),
                    "k": k,
                    "key": pc.cast(k, pa.string()),  # the simple key generator's key of ``k``
                }
            )
        )
    path = table_root.parent / "side.parquet"
    pq.write_table(pa.concat_tables(parts), path)
    return path


@pytest.fixture
def registered(side_table: Path) -> Iterator[IndexSource]:
    source = register_source(DistinctValuesSource(str(side_table)))
    yield source
    unregister_source(source.name)


def _names(files: dict[str, pa.Array]) -> dict[str, list[int]]:
    return {os.path.basename(f): ids.to_pylist() for f, ids in files.items()}


def test_the_source_is_listed_and_protocol_checked(registered: IndexSource) -> None:
    assert isinstance(registered, IndexSource)
    assert index_sources()[-1] is registered
    assert [s.name for s in index_sources()[:7]] == [
        "column statistics",
        "Hudi metadata table (partition_stats)",
        "Hudi metadata table (column_stats)",
        "Hudi metadata table (bloom_filters)",
        "bloom filters",
        "secondary indexes",
        "record keys",
    ]
    with pytest.raises(ValueError, match="registered already"):
        register_source(registered)
    with pytest.raises(TypeError):
        register_source(object())  # type: ignore[arg-type]


def test_each_question_asks_the_sources_that_answer_it(registered: IndexSource) -> None:
    assert isinstance(registered, PrunesFiles | SelectsRows | LocatesKeys)
    assert [s.name for s in row_sources()] == ["secondary indexes", NAME]
    assert [s.name for s in key_sources()] == ["record keys", "record index", NAME]
    with pytest.raises(IndexSourceError, match="registered already"):
        register_source(DistinctValuesSource("elsewhere"))

    @dataclass(frozen=True)
    class NamedOnly:
        name: str = "answers nothing"

    with pytest.raises(TypeError, match="at least one of"):
        register_source(NamedOnly())


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


def test_select_read_and_count_use_its_rows(registered: IndexSource, table_root: Path) -> None:
    t = open_table(table_root)
    t.build()  # no secondary index: only the test source knows rows
    expr = col("k").isin([2, 9, 20])
    selection = t.select(expr)
    assert selection.use.used and selection.use.source == NAME
    assert selection.exact  # the whole predicate is on ``k``: its rows are the matching ones
    assert _names(selection.row_ids()) == {"f1.parquet": [1, 3], "f2.parquet": [0]}
    explained = selection.explain()
    assert f"{NAME} used: 1 predicate(s) on k" in explained
    assert "secondary index not used: no predicate on an indexed column" in explained
    assert t.read(expr, ["v"])["v"].to_pylist() == ["d", "f", "g"]
    assert t.count(expr) == 3 and t.exists(expr)
    assert not t.exists(col("k") == 3)
    # A predicate not on ``k``: the source cannot say, and every candidate row stays.
    other = t.select(col("v") == "c")
    assert not other.use.used and NAME not in other.explain()


def test_without_the_source_select_keeps_every_row(table_root: Path) -> None:
    t = open_table(table_root)
    t.build()
    selection = t.select(col("k").isin([2, 9, 20]))
    assert not selection.use.used
    assert _names(selection.row_ids()) == {
        "f0.parquet": [0, 1],
        "f1.parquet": [0, 1, 2, 3],
        "f2.parquet": [0, 1],
    }


def test_its_rows_are_intersected_with_the_secondary_index(registered: IndexSource, table_root: Path) -> None:
    t = open_table(table_root)
    t.build()
    t.create_index("v")
    t.build_index()
    expr = col("k").isin([1, 4, 20, 30]) & col("v").isin(["c", "d", "e", "h"])
    selection = t.select(expr)
    # The value index alone keeps f1's rows 0-2 and f2's row 1; the side table alone f1's rows
    # 0 and 2 and f2's rows 0-1. Each answered one conjunct: the intersection is not exact.
    assert _names(selection.row_ids()) == {"f1.parquet": [0, 2], "f2.parquet": [1]}
    assert not selection.exact
    assert [u.source for u in selection.uses] == ["secondary index", NAME]
    explained = selection.explain()
    assert "secondary index used" in explained and f"{NAME} used" in explained
    assert t.read(expr, ["k", "v"]).to_pydict() == {"k": [1, 4, 30], "v": ["c", "e", "h"]}
    assert t.count(expr) == 3


def test_tag_uses_its_exact_key_locations(registered: IndexSource, table_root: Path) -> None:
    t = open_table(table_root)
    t.build(record_key="k")
    keys = ["1", "20", "5", "30", "9"]
    expected = ["f1.parquet", "f2.parquet", None, "f2.parquet", "f1.parquet"]
    result = t.tag(keys, using="bloom")
    assert [f and os.path.basename(f) for f in result["file"].to_pylist()] == expected
    stats = tag_stats(result)
    # Its answer is exact, so the candidates of the key ranges and blooms need no reading.
    assert set(stats.pairs_by_source) == {"record keys", NAME}
    assert stats.pairs_by_source[NAME] == 4
    assert stats.files_read == 0 and "verify" not in stats.seconds

    unregister_source(registered.name)
    alone = t.tag(keys, using="bloom")
    assert alone["file"].to_pylist() == result["file"].to_pylist()
    stats = tag_stats(alone)
    assert set(stats.pairs_by_source) == {"record keys"}
    assert stats.files_read > 0 and "verify" in stats.seconds


def test_tag_intersects_it_with_the_record_index(registered: IndexSource, table_root: Path) -> None:
    t = open_table(table_root)
    t.build(record_key="k", record_index=True)
    keys = ["0", "2", "7", "30", "2"]
    result = t.tag(keys)
    assert [f and os.path.basename(f) for f in result["file"].to_pylist()] == [
        "f0.parquet",
        "f1.parquet",
        None,
        "f2.parquet",
        "f1.parquet",
    ]
    stats = tag_stats(result)
    assert stats.method == "record"
    assert stats.pairs_by_source == {"record index": 4, NAME: 4}


@contextmanager
def _without(name: str) -> Iterator[None]:
    """The registry without the source ``name``, restored in its order afterwards."""
    saved = index_sources()
    unregister_source(name)
    try:
        yield
    finally:
        for source in index_sources():
            unregister_source(source.name)
        for source in saved:
            register_source(source)


def test_tag_with_no_source_answering_is_refused(table_root: Path) -> None:
    t = open_table(table_root)
    t.build(record_key="k")
    with (
        _without("record keys"),
        pytest.raises(IndexSourceError, match="no index source locates record keys"),
    ):
        t.tag(["1"], using="bloom")
    assert [s.name for s in key_sources()] == ["record keys", "record index"]
    assert tag_stats(t.tag(["1"], using="bloom")).updates == 1
