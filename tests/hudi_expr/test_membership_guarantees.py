"""The statistics interface's ``contained`` hook and literal guarantees (issue 11, item 2).

``contained`` is how equality and IN leaves ask whether values may be in a file: bloom filters
answer today, and any ``Membership`` plugged into ``FileStats`` answers beside them. Literal
guarantees say which values a TRUE row can have; they are checked against DuckDB on random rows.
"""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_expr import (
    BloomFilter,
    FileStats,
    Membership,
    bind,
    col,
    literal_guarantees,
    might_match,
    to_sql,
)
from hudi_expr.expressions import Expression

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.int32())])


class ExactSets:
    """A ``Membership`` that knows each file's exact set of values (a stand-in for a record index);
    files it has no set for are unknown."""

    def __init__(self, sets: list[set[object] | None]) -> None:
        self.sets = sets

    def __len__(self) -> int:
        return len(self.sets)

    def take(self, indices: np.ndarray) -> ExactSets:
        return ExactSets([self.sets[int(i)] for i in indices])

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        wanted = {v for v in values.to_pylist() if v is not None}
        return pa.array([None if s is None else bool(s & wanted) for s in self.sets], pa.bool_())


def _stats() -> FileStats:
    # Three files with a in [0, 100]: bounds alone keep all of them for a = 5.
    rows = [
        {"file": f"f{i}", "row_count": 3, "stats": {"a": {"min": 0, "max": 100, "null_count": 0}}}
        for i in range(3)
    ]
    return FileStats.from_pylist(rows, SCHEMA)


def test_a_plugged_in_membership_prunes_equality_and_in() -> None:
    stats = _stats().with_membership("a", ExactSets([{1, 5}, {7}, None]))
    assert isinstance(ExactSets([]), Membership)
    assert might_match(bind(col("a") == 5, SCHEMA), stats).to_pylist() == [True, False, True]
    assert might_match(bind(col("a").isin([7, 8]), SCHEMA), stats).to_pylist() == [False, True, True]
    # Range leaves do not ask it: membership says nothing about values between two others.
    assert might_match(bind(col("a") > 5, SCHEMA), stats).to_pylist() == [True, True, True]
    # A subset of files keeps its membership aligned.
    assert might_match(bind(col("a") == 7, SCHEMA), stats.take([1, 0])).to_pylist() == [True, False]


def test_bloom_filters_and_other_membership_both_prune() -> None:
    blooms = []
    for keys in ([1, 5], [7], [9]):
        bloom = BloomFilter.for_entries(10, 0.001)
        bloom.add_all(pa.array(keys, pa.int64()))
        blooms.append(bloom)
    stats = _stats().with_bloom("a", blooms).with_membership("a", ExactSets([{1, 5}, {7}, None]))
    # f2: the exact sets do not know it, the bloom filter rules 5 out.
    assert might_match(bind(col("a") == 5, SCHEMA), stats).to_pylist() == [True, False, False]
    # f2: the bloom filter may hold 9 and the exact sets do not know: unknown, so kept.
    assert stats.contained("a", pa.array([9], pa.int64())).to_pylist() == [False, False, None]
    assert might_match(bind(col("a") == 9, SCHEMA), stats).to_pylist() == [False, False, True]
    assert stats.contained("b", pa.array(["x"])) is None  # nothing can tell


def test_membership_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="membership of 2 files for 3 files"):
        _stats().with_membership("a", ExactSets([None, None]))


# ----------------------------------------------------------------------------- guarantees


def _guarantees(expr: Expression) -> dict[tuple[str, str], list[object]]:
    found = literal_guarantees(bind(expr, SCHEMA))
    return {(g.column, g.kind): sorted(g.values.to_pylist()) for g in found}


def test_guarantees_of_conjuncts_and_disjunctions() -> None:
    expr = (
        (col("a") == 1)
        & ((col("b") == "x") | col("b").isin(["y", "z"]))
        & (col("c") != 3)
        & ~col("c").isin([4])
        & col("a").isin([1, 2])
    )
    assert _guarantees(expr) == {("a", "in"): [1], ("b", "in"): ["x", "y", "z"], ("c", "not_in"): [3, 4]}


@pytest.mark.parametrize(
    "expr",
    [
        (col("a") == 1) | (col("b") == "x"),  # two columns: neither is certain
        (col("a") == 1) | (col("a") > 5),  # a range branch lets other values through
        (col("a") == 1) | (col("a") != 2),
        col("a") > 1,
        col("b").starts_with("x"),
        col("b").contains("x"),
        col("b").not_contains_term("x"),
        (col("b") == "x") | col("b").contains_term("x"),
    ],
    ids=str,
)
def test_no_guarantee_where_nothing_is_certain(expr: Expression) -> None:
    assert _guarantees(expr) == {}


def test_contradictory_conjuncts_guarantee_the_empty_set() -> None:
    assert _guarantees((col("a") == 1) & (col("a") == 2)) in ({("a", "in"): []}, {})


def _random_predicate(rng: random.Random, depth: int = 0) -> Expression:
    if depth < 3 and rng.random() < 0.5:
        parts = [_random_predicate(rng, depth + 1) for _ in range(rng.randint(2, 3))]
        if rng.random() < 0.5:
            out = parts[0]
            for p in parts[1:]:
                out = out & p
            return out
        out = parts[0]
        for p in parts[1:]:
            out = out | p
        return out if rng.random() < 0.8 else ~out
    column = rng.choice(["a", "c"])
    values = [rng.randint(0, 6) for _ in range(rng.randint(1, 3))]
    return rng.choice(
        [
            lambda: col(column) == values[0],
            lambda: col(column) != values[0],
            lambda: col(column).isin(values),
            lambda: ~col(column).isin(values),
            lambda: col(column) > values[0],
            lambda: col(column).is_null(),
        ]
    )()


def test_guarantees_hold_on_every_true_row_as_duckdb_says() -> None:
    rng = random.Random(11)
    data = pa.table(
        {
            "a": pa.array([rng.choice([None, *range(7)]) for _ in range(300)], pa.int64()),
            "b": pa.array([rng.choice(["x", "y", None]) for _ in range(300)]),
            "c": pa.array([rng.choice([None, *range(7)]) for _ in range(300)], pa.int32()),
        }
    )
    con = duckdb.connect()
    con.register("rows", data)
    checked = 0
    for _ in range(400):
        expr = bind(_random_predicate(rng), SCHEMA)
        found = literal_guarantees(expr)
        if not found:
            continue
        true_rows = con.sql(f"SELECT a, b, c FROM rows WHERE {to_sql(expr)}").fetchall()
        for g in found:
            values = set(g.values.to_pylist())
            position = SCHEMA.names.index(g.column)
            for row in true_rows:
                value = row[position]
                assert value is not None, (str(expr), g)
                assert (value in values) == (g.kind == "in"), (str(expr), g, row)
            checked += 1
    assert checked > 100


class CountingSets(ExactSets):
    """``ExactSets`` that records how many files each ``contained`` was asked about."""

    asked: list[int]

    def __init__(self, sets: list[set[object] | None], asked: list[int]) -> None:
        super().__init__(sets)
        self.asked = asked

    def take(self, indices: np.ndarray) -> CountingSets:
        return CountingSets([self.sets[int(i)] for i in indices], self.asked)

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        self.asked.append(len(self.sets))
        return super().contained(values)


def test_a_later_membership_source_is_asked_only_about_files_still_open() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 9)

        def sets(n: int) -> list[set[object] | None]:
            return [None if rng.random() < 0.25 else set(rng.sample(range(6), 2)) for _ in range(n)]

        first, second, asked = sets(n), sets(n), []
        rows = [{"file": f"f{i}", "row_count": 1, "stats": {"a": {}}} for i in range(n)]
        stats = (
            FileStats.from_pylist(rows, SCHEMA)
            .with_membership("a", ExactSets(first))
            .with_membership("a", CountingSets(second, asked))
        )
        values = pa.array(rng.sample(range(6), rng.randint(1, 2)), pa.int64())
        whole = pc.and_kleene(ExactSets(first).contained(values), ExactSets(second).contained(values))
        assert stats.contained("a", values).to_pylist() == whole.to_pylist()
        still_open = sum(v is not False for v in ExactSets(first).contained(values).to_pylist())
        assert asked == ([still_open] if still_open else [])
