"""``all_match``: every row of the file surely makes the predicate TRUE (strict evaluation)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    BoundReference,
    Contains,
    ContainsTerm,
    Expression,
    FileStats,
    NotContains,
    NotContainsTerm,
    all_match,
    col,
    might_match,
)


@dataclass(frozen=True)
class Column:
    label: str
    type: pa.DataType
    ladder: tuple[Any, ...]

    @property
    def is_float(self) -> bool:
        return pa.types.is_floating(self.type)


COLUMNS = [
    Column("int64", pa.int64(), (-10, -1, 0, 1, 10)),
    Column("float64", pa.float64(), (-10.0, -1.0, 0.5, 1.0, 10.0)),
    Column("string", pa.string(), ("a", "b", "c", "d", "é")),
    Column("date32", pa.date32(), tuple(np.datetime64("2024-01-01") + np.arange(5) * 7)),
]

SITUATIONS = [
    "mid",
    "pinned",
    "some_nulls",
    "all_null",
    "empty",
    "absent",
    "rows_unknown",
    "nan",
    "nan_unknown",
    "only_nan",
]


def situations(c: Column) -> list[str]:
    return SITUATIONS if c.is_float else SITUATIONS[:7]


@cache
def stats_for(c: Column) -> FileStats:
    v = [x.item() if isinstance(x, np.generic) else x for x in c.ladder]
    nan0 = 0 if c.is_float else None
    mid = {"min": v[1], "max": v[3], "null_count": 0, "nan_count": nan0}
    per_file: dict[str, dict[str, Any] | None] = {
        "mid": mid,
        "pinned": {**mid, "max": v[1]},
        "some_nulls": {**mid, "null_count": 3},
        "all_null": {"null_count": 10, "nan_count": nan0},
        "empty": {"null_count": 0, "nan_count": nan0},
        "absent": None,
        "rows_unknown": mid,
        "nan": {**mid, "nan_count": 2},
        "nan_unknown": {**mid, "nan_count": None},
        "only_nan": {"null_count": 0, "nan_count": 10},
    }
    rows = {"empty": 0, "rows_unknown": None}
    records = [
        {"file": s, "row_count": rows.get(s, 10), "stats": {} if per_file[s] is None else {"x": per_file[s]}}
        for s in situations(c)
    ]
    return FileStats.from_pylist(records, pa.schema([("x", c.type)]))


# Per predicate: the situations in which every row is TRUE. Reasons, in short:
#   NULL rows make no comparison TRUE; NaN is above every number and differs from each;
#   an empty file matches vacuously; unknown stats (absent) are never "surely"; a file whose
#   every row is NaN (only_nan: counts known, bounds unknown) matches what NaN rows match.
EVERY_ROW: dict[str, tuple[Any, set[str]]] = {
    "eq_pinned": (lambda v: col("x") == v[1], {"pinned", "empty"}),
    "eq_inside": (lambda v: col("x") == v[2], {"empty"}),
    "ne_outside": (
        lambda v: col("x") != v[4],
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "ne_inside": (lambda v: col("x") != v[2], {"pinned", "empty", "only_nan"}),
    "lt_above": (lambda v: col("x") < v[4], {"mid", "pinned", "empty", "rows_unknown"}),
    "le_max": (lambda v: col("x") <= v[3], {"mid", "pinned", "empty", "rows_unknown"}),
    "lt_max": (lambda v: col("x") < v[3], {"pinned", "empty"}),
    "gt_below": (
        lambda v: col("x") > v[0],
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "ge_min": (
        lambda v: col("x") >= v[1],
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "gt_min": (lambda v: col("x") > v[1], {"empty", "only_nan"}),
    "in_pinned": (lambda v: col("x").isin([v[1], v[2]]), {"pinned", "empty"}),
    "in_all": (lambda v: col("x").isin([v[0], v[4]]), {"empty"}),
    "notin_outside": (
        lambda v: col("x").notin([v[0], v[4]]),
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "notin_inside": (lambda v: col("x").notin([v[0], v[2]]), {"pinned", "empty", "only_nan"}),
    "not_lt": (
        lambda v: ~(col("x") < v[1]),
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "not_eq": (lambda v: ~(col("x") == v[2]), {"pinned", "empty", "only_nan"}),
    "between": (lambda v: col("x").between(v[0], v[3]), {"mid", "pinned", "empty", "rows_unknown"}),
    "and_one_fails": (lambda v: (col("x") > v[0]) & (col("x") < v[3]), {"pinned", "empty"}),
    "or_one_side": (
        lambda v: (col("x") < v[0]) | (col("x") >= v[1]),
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "is_null": (lambda v: col("x").is_null(), {"all_null", "empty"}),
    "is_not_null": (
        lambda v: col("x").is_not_null(),
        {"mid", "pinned", "empty", "rows_unknown", "nan", "nan_unknown", "only_nan"},
    ),
    "true": (lambda v: AlwaysTrue(), set(SITUATIONS)),
    "false": (lambda v: AlwaysFalse(), {"empty"}),
}

# isnan on floats; elsewhere isnan is FALSE and NOT isnan is IS NOT NULL.
NAN_EVERY_ROW = {
    "is_nan": (lambda: col("x").is_nan(), {"only_nan", "empty"}, {"empty"}),
    # NOT isnan(NULL) is NULL in DuckDB: NULL rows fail it.
    "is_not_nan": (
        lambda: col("x").is_not_nan(),
        {"mid", "pinned", "empty", "rows_unknown"},
        {"mid", "pinned", "empty", "rows_unknown"},
    ),
}


@pytest.mark.parametrize("name", list(EVERY_ROW))
@pytest.mark.parametrize("c", COLUMNS, ids=lambda c: c.label)
def test_all_match(c: Column, name: str) -> None:
    build, every_row = EVERY_ROW[name]
    v = [x.item() if isinstance(x, np.generic) else x for x in c.ladder]
    got = all_match(build(v), stats_for(c)).to_pylist()
    assert dict(zip(situations(c), got, strict=True)) == {s: s in every_row for s in situations(c)}


@pytest.mark.parametrize("name", list(NAN_EVERY_ROW))
@pytest.mark.parametrize("c", COLUMNS, ids=lambda c: c.label)
def test_all_match_nan(c: Column, name: str) -> None:
    build, floats, others = NAN_EVERY_ROW[name]
    every_row = floats if c.is_float else others
    got = all_match(build(), stats_for(c)).to_pylist()
    assert dict(zip(situations(c), got, strict=True)) == {s: s in every_row for s in situations(c)}


def test_is_not_nan_with_nulls_is_not_all() -> None:
    stats = FileStats.from_pylist(
        [
            {
                "file": "nulls",
                "row_count": 3,
                "stats": {"x": {"min": 1.0, "max": 2.0, "null_count": 1, "nan_count": 0}},
            },
            {
                "file": "clean",
                "row_count": 3,
                "stats": {"x": {"min": 1.0, "max": 2.0, "null_count": 0, "nan_count": 0}},
            },
        ],
        pa.schema([("x", pa.float32())]),
    )
    assert all_match(col("x").is_not_nan(), stats).to_pylist() == [False, True]
    assert all_match(col("x") != float("nan"), stats).to_pylist() == [False, True]
    assert all_match(col("x") <= float("nan"), stats).to_pylist() == [False, True]


# --------------------------------------------------------------- consistency with might_match


def random_stats(rng: np.random.Generator, n: int) -> FileStats:
    records = []
    for i in range(n):
        rows = int(rng.choice([0, 5, 5, 5]))
        lo = float(rng.integers(-5, 5))
        hi = lo + float(rng.integers(0, 3))
        nulls = int(rng.integers(0, rows + 1)) if rows else 0
        nans = int(rng.integers(0, rows - nulls + 1)) if rows else 0
        column: dict[str, Any] = {"min": lo, "max": hi, "null_count": nulls, "nan_count": nans}
        if nulls + nans == rows:
            column.update(min=None, max=None)
        for key in ("min", "null_count", "nan_count"):
            if rng.random() < 0.1:
                column[key] = None
        records.append({"file": f"f{i}", "row_count": rows, "stats": {"x": column}})
    return FileStats.from_pylist(records, pa.schema([("x", pa.float64())]))


def random_leaf(rng: np.random.Generator) -> Expression:
    v = float(rng.integers(-6, 6))
    w = float(rng.integers(-6, 6))
    return [
        col("x") == v,
        col("x") != v,
        col("x") < v,
        col("x") <= v,
        col("x") > v,
        col("x") >= v,
        col("x").isin([v, w, v + 0.5]),
        col("x").notin([v, w]),
        col("x").is_null(),
        col("x").is_not_null(),
        col("x").is_nan(),
        col("x").is_not_nan(),
        col("x") == float("nan"),
    ][int(rng.integers(13))]


def test_all_match_implies_might_match_and_excludes_the_negation() -> None:
    rng = np.random.default_rng(99)
    stats = random_stats(rng, 400)
    nonempty = np.array(stats.row_count.fill_null(1).to_pylist()) > 0
    for _ in range(60):
        expr = random_leaf(rng)
        if rng.random() < 0.5:
            expr = expr & random_leaf(rng) if rng.random() < 0.5 else expr | random_leaf(rng)
        every = np.array(all_match(expr, stats).to_pylist())
        some = np.array(might_match(expr, stats).to_pylist())
        negated_some = np.array(might_match(~expr, stats).to_pylist())
        # A non-empty file whose every row matches holds a matching row...
        assert not (every & nonempty & ~some).any(), expr
        # ...and no row that matches the negation.
        assert not (every & negated_some).any(), expr
    assert every[~nonempty].all()


def test_text_search_bound_by_hand_with_empty_text() -> None:
    # Binding folds contains(s, '') to IS NOT NULL; a leaf bound by hand may still hold '', and the
    # rules read it the same way.
    (c,) = [c for c in COLUMNS if c.label == "string"]
    stats = stats_for(c)
    ref = BoundReference("x", ("x",), pa.string())
    empty = pa.scalar("")
    assert all_match(Contains(ref, empty), stats) == all_match(col("x").is_not_null(), stats)
    assert might_match(Contains(ref, empty), stats) == might_match(col("x").is_not_null(), stats)
    assert might_match(NotContains(ref, empty), stats).to_pylist() == [False] * len(situations(c))
    assert all_match(NotContains(ref, empty), stats).to_pylist() == [s == "empty" for s in situations(c)]
    for leaf in (Contains, NotContains, ContainsTerm, NotContainsTerm):
        assert all_match(leaf(ref, pa.scalar("b")), stats).to_pylist() == [
            s == "empty" for s in situations(c)
        ]
