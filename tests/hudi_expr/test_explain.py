"""``explain``: which conjunct removed which files, with counts and per-file reasons."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import AlwaysFalse, AlwaysTrue, Expression, FileStats, col, explain, might_match

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.string())])


def file(name: str, a: tuple[int, int] | None, b: tuple[str, str] | None, rows: int | None = 10) -> dict:
    stats = {}
    if a is not None:
        stats["a"] = {"min": a[0], "max": a[1], "null_count": 0}
    if b is not None:
        stats["b"] = {"min": b[0], "max": b[1], "null_count": 0}
    return {"file": name, "row_count": rows, "stats": stats}


STATS = FileStats.from_pylist(
    [
        file("f1", (0, 4), ("x", "y")),  # fails a > 4
        file("f2", (5, 9), ("a", "c")),  # passes a > 4, fails b >= 'x'
        file("f3", (5, 9), ("x", "z")),  # passes both
        file("f4", None, None, rows=0),  # empty
        file("f5", (0, 1), ("a", "b")),  # fails both: a > 4 comes first
        file("f6", None, ("a", "b")),  # a unknown, fails b >= 'x'
    ],
    SCHEMA,
)


def test_counts_per_step() -> None:
    x = explain((col("a") > 4) & (col("b") >= "x"), STATS)
    assert x.total == 6
    assert x.kept == 1
    assert x.kept_files == ["f3"]
    assert [(s.predicate, s.rules_out, s.removed) for s in x.steps] == [
        ("a > 4", 2, 2),  # f1, f5
        ("b >= 'x'", 3, 2),  # f2, f5, f6; f5 was already removed
    ]
    assert x.predicate == "a > 4 AND b >= 'x'"


def test_reasons() -> None:
    x = explain((col("a") > 4) & (col("b") >= "x"), STATS)
    assert x.reason("f1") == "f1: skipped by a > 4"
    assert x.reason("f2") == "f2: skipped by b >= 'x'"
    assert x.reason("f3") == "f3: kept (may hold matching rows)"
    assert x.reason("f4") == "f4: skipped (it holds no rows)"
    assert x.reason("f5") == "f5: skipped by a > 4"
    assert x.reason("f6") == "f6: skipped by b >= 'x'"
    assert x.reason("nope") == "nope: not known to the statistics (kept: unknown files may match)"


def test_text() -> None:
    x = explain((col("a") > 4) & (col("b") >= "x"), STATS, not_used=["my_udf(c) > 1"])
    lines = str(x).splitlines()
    assert lines[0] == "kept 1 of 6 files (5 skipped) for: a > 4 AND b >= 'x'"
    assert lines[1].split() == ["2", "skipped", "by", "a", ">", "4", "(alone", "it", "rules", "out", "2)"]
    assert lines[2].split()[:3] == ["2", "skipped", "by"] and "b >= 'x'" in lines[2]
    assert lines[3].split() == ["1", "skipped", "as", "empty", "files"]
    assert lines[4] == "  not used for pruning: my_udf(c) > 1"
    assert x.not_used == ("my_udf(c) > 1",)


def test_steps_are_the_bound_conjuncts() -> None:
    # Binding folds and rewrites first: the steps show what was really used.
    x = explain(~((col("a") <= 4.5) | (col("b") < "x")), STATS)
    assert [s.predicate for s in x.steps] == ["a >= 5", "b >= 'x'"]
    assert x.kept_files == ["f3"]


@pytest.mark.parametrize(
    ("expr", "kept"),
    [
        (AlwaysTrue(), ["f1", "f2", "f3", "f5", "f6"]),
        (AlwaysFalse(), []),
        (col("a") > 100, ["f6"]),
        ((col("a") > 100) | (col("b") == "y"), ["f1", "f3", "f6"]),  # f6: a unknown
        (col("b").starts_with("x"), ["f1", "f3"]),
    ],
)
def test_kept_files_agree_with_might_match(expr: Expression, kept: list[str]) -> None:
    x = explain(expr, STATS)
    assert x.kept_files == kept
    mask = np.asarray(might_match(expr, STATS).to_pylist())
    assert STATS.files.filter(pa.array(mask)).to_pylist() == kept
    assert sum(s.removed for s in x.steps) + 1 == x.total - x.kept  # the rest: one empty file


def test_single_leaf_is_one_step() -> None:
    x = explain(col("a") > 100, STATS)
    assert len(x.steps) == 1
    assert (x.steps[0].rules_out, x.steps[0].removed) == (4, 4)
    assert x.reason("f6") == "f6: kept (may hold matching rows)"
