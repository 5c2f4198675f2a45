"""Binding gathers ``a = 1 OR a = 2`` into ``a IN (1, 2)`` and ``a <> 1 AND a <> 2`` into NOT IN.

The rewrite (``hudi_expr.binding.merge_equalities``) must keep exactly the rows where the original
is TRUE under three-valued logic, with NULL rows, NaN (NaN = NaN is TRUE, as in Spark and DuckDB),
-0.0 = 0.0 and literals the column type cannot hold. DuckDB is the oracle: it evaluates the unbound
expression's SQL text on random rows, and the bound (merged) tree must select the same rows, through
the pyarrow row filter and through its own SQL text; ``~expr`` must select the rows of
``NOT (expr)``. Pruning with the merged tree is checked sound and strict against the same rows.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest

import hudi_expr as hx
from hudi_expr import And, BloomFilter, EqualTo, In, Not, NotEqualTo, NotIn, Or, bind, col, rewrite_not
from hudi_expr.binding import merge_equalities
from hudi_expr.visitors import transform_leaves
from property_tests.checks import check_sound_and_strict
from property_tests.oracle import evaluate, rows_where

SCHEMA = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
NAN = math.nan

# Row values, NULL included, and the literals the expressions use: values of the rows and others,
# of the column's own kind (an IN list of mixed kinds means something else to DuckDB, which casts
# the list to one type) or of a kind binding folds: 1.5 and 2**70 are no int64.
POOLS: dict[str, list[Any]] = {
    "i": [None, -1, 0, 1, 2, 3, 2**62],
    "f": [None, NAN, 0.0, -0.0, 0.5, 1.0, 2.0, math.inf, -math.inf],
    "s": [None, "", "a", "b", "ab", "é"],
}
LITERALS: dict[str, list[Any]] = {
    "i": [-1, 0, 1, 2, 3, 4, 2**62],
    "f": [NAN, 0.0, -0.0, 0.5, 1.0, 3.0, math.inf, -math.inf],
    "s": ["", "a", "b", "ab", "é", "zz"],
}
ODD_LITERALS: dict[str, list[Any]] = {"i": [1.5, 2**70], "f": [1, 2], "s": []}

NUM_FILES = 8
ROWS_PER_FILE = 30


@contextmanager
def low_recursion_limit(limit: int = 1000) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def leaf_count(expr: hx.Expression) -> int:
    return sum(1 for _ in expr.leaves())


# ------------------------------------------------------------------------------- the rewrite itself


def test_equalities_on_one_column_become_one_in() -> None:
    a, b = col("a"), col("b")
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    merged = bind((a == 1) | (a == 2) | (b == 3), schema)
    assert merged == bind(a.isin([1, 2]) | (b == 3), schema)
    assert isinstance(merged, Or) and isinstance(merged.operands()[0], In)
    # Wherever the other equalities stand: the list takes the place of the column's first one.
    assert merge_equalities((b == 3) | (a == 1) | (b == 4) | (a == 2)) == Or(b.isin([3, 4]), a.isin([1, 2]))
    # IN with =, IN with IN, duplicates once.
    assert merge_equalities(a.isin([1, 2]) | (a == 3) | a.isin([2, 4])) == a.isin([1, 2, 3, 4])
    # NOT IN with <>, NOT IN with NOT IN: the AND side.
    assert merge_equalities((a != 1) & (a != 2)) == a.notin([1, 2])
    assert merge_equalities(a.notin([1, 2]) & (a != 3) & (b != 1) & a.notin([5])) == And(
        a.notin([1, 2, 3, 5]), b != 1
    )
    assert bind((a != 1) & (a != 2), schema) == bind(a.notin([1, 2]), schema)
    # Nested: every maximal OR (AND) on its own.
    nested = ((a == 1) | (a == 2)) & ((b != 1) & (b != 2) | (a == 3) | (a == 4))
    assert merge_equalities(nested) == And(a.isin([1, 2]), Or(b.notin([1, 2]), a.isin([3, 4])))
    # The rewrite under NOT too (binding pushes NOT down first, so it never meets one there).
    assert merge_equalities(Not((a == 1) | (a == 2))) == Not(a.isin([1, 2]))


def test_what_is_not_gathered() -> None:
    a, b = col("a"), col("b")
    # = under AND and <> under OR mean something else; other comparisons are left alone.
    for expr in [
        (a == 1) & (a == 2) | (b == 1),
        (a != 1) | (a != 2),
        (a < 1) | (a > 5),
        (a == 1) | (b == 1),
        a.isin([1, 2]) | (a != 3),
    ]:
        assert merge_equalities(expr) is expr
    # Bound leaves and IN lists held as arrow arrays keep their own forms.
    ref = hx.resolve(pa.schema([("a", pa.int64())]), "a")
    bound = Or(EqualTo(ref, pa.scalar(1)), EqualTo(ref, pa.scalar(2)))
    assert merge_equalities(bound) is bound
    arrays = In(a.ref, pa.array([1, 2])) | (a == 3)
    assert merge_equalities(arrays) is arrays


def test_unbound_trees_and_their_text_are_untouched() -> None:
    # The constructors do not merge: an OR of equalities prints, serializes and compares as written.
    a = col("a")
    expr = (a == 1) | (a == 2)
    assert isinstance(expr, Or) and str(expr) == "a = 1 OR a = 2"
    assert expr != a.isin([1, 2])
    assert hx.from_json(expr.to_json()) == expr
    assert str(~expr) == "a <> 1 AND a <> 2"


def test_binding_folds_each_value_as_its_comparison() -> None:
    # A value the type cannot hold leaves the list, as its = is FALSE and its <> IS NOT NULL.
    i = col("i")
    assert bind((i == 1) | (i == 1.5) | (i == 2**70), SCHEMA) == bind(i == 1, SCHEMA)
    assert bind((i == 1.5) | (i == 2**70), SCHEMA) == hx.AlwaysFalse()
    assert bind((i != 1) & (i != 1.5) & (i != 2**70), SCHEMA) == bind(i != 1, SCHEMA)
    assert bind((i != 1.5) & (i != 2**70), SCHEMA) == hx.IsNotNull(hx.resolve(SCHEMA, "i"))
    # NaN equals NaN: = NaN is isnan, and so is NaN in the list; -0.0 = 0.0 either way.
    f = col("f")
    got = bind((f == NAN) | (f == 0.0) | (f == 1.0), SCHEMA)
    assert got == bind(f.isin([NAN, 0.0, 1.0]), SCHEMA)
    assert isinstance(got, Or) and {type(x) for x in got.operands()} == {In, hx.IsNaN}
    assert bind((f != NAN) & (f != 1.0), SCHEMA) == bind(f.notin([NAN, 1.0]), SCHEMA)


def test_invert_stays_exact() -> None:
    a, b = col("a"), col("b")
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    expr = (a == 1) | (a == 2) | (b == "x") | a.isin([3, 4])
    # ~ of the unbound tree is De Morgan leaf by leaf; bound, its NOT IN is the IN's negation.
    assert ~expr == (a != 1) & (a != 2) & (b != "x") & a.notin([3, 4])
    assert ~~expr == expr
    assert bind(~expr, schema) == ~bind(expr, schema)
    assert bind(Not(expr), schema) == bind(~expr, schema)
    assert bind(~expr, schema) == bind(a.notin([1, 2, 3, 4]) & (b != "x"), schema)


# ---------------------------------------------------------------------- DuckDB as the oracle


def random_table(rng: random.Random) -> tuple[pa.Table, list[list[dict[str, Any]]]]:
    """Rows split into files (``__file``, ``__row`` as the oracle wants), and each file's rows."""
    files = [
        [
            {name: rng.choice(pool) for name, pool in POOLS.items()}
            for _ in range(rng.randint(0, ROWS_PER_FILE))
        ]
        for _ in range(NUM_FILES)
    ]
    rows = [dict(r, __file=f) for f, rows in enumerate(files) for r in rows]
    table = pa.Table.from_pylist(rows, schema=SCHEMA.append(pa.field("__file", pa.int32())))
    return table.append_column("__row", pa.array(range(len(rows)), pa.int64())), files


def exact_stats(files: list[list[dict[str, Any]]], bloom_on: str | None) -> hx.FileStats:
    records = []
    for f, rows in enumerate(files):
        stats: dict[str, Any] = {}
        for name in POOLS:
            values = [r[name] for r in rows]
            present = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
            stats[name] = {
                "min": min(present) if present else None,
                "max": max(present) if present else None,
                "null_count": sum(v is None for v in values),
                "nan_count": sum(isinstance(v, float) and math.isnan(v) for v in values),
            }
            if name == bloom_on:
                # A small, lossy filter, so false positives happen and show in the comparison below.
                bloom = BloomFilter.for_entries(4, 0.3)
                kept = [v for v in values if v is not None]
                if kept:
                    bloom.add_all(pa.array(kept, SCHEMA.field(name).type))
                stats[name]["bloom"] = bloom
        records.append({"file": f"f{f}", "row_count": len(rows), "stats": stats})
    return hx.FileStats.from_pylist(records, SCHEMA)


def random_leaf(rng: random.Random, within: type[hx.Expression] = Or) -> hx.Expression:
    """A leaf on a random column, most often what ``within`` (an Or or an And) would gather."""
    name = rng.choice(list(POOLS))
    c = col(name)
    literals = LITERALS[name] + ODD_LITERALS[name] if rng.random() < 0.2 else LITERALS[name]
    gathered = ["eq", "eq", "eq", "in"] if within is Or else ["ne", "ne", "ne", "not_in"]
    kind = rng.choice([*gathered, "eq", "ne", "in", "not_in", "lt", "is_null"])
    if kind == "in" or kind == "not_in":
        values = rng.sample(LITERALS[name], rng.randint(0, 3))  # one kind per list
        return c.isin(values) if kind == "in" else c.notin(values)
    if kind == "is_null":
        return c.is_null()
    v = rng.choice(literals)
    return {"eq": lambda: c == v, "ne": lambda: c != v, "lt": lambda: c < v}[kind]()


def random_expression(rng: random.Random, depth: int = 3) -> hx.Expression:
    """An And/Or of several leaves and subtrees, so one junction often holds several = on a column."""
    junction = Or if rng.random() < 0.5 else And
    if depth == 0 or rng.random() < 0.1:
        return random_leaf(rng, junction)
    parts = [
        random_expression(rng, depth - 1) if rng.random() < 0.3 else random_leaf(rng, junction)
        for _ in range(rng.randint(2, 6))
    ]
    expr = junction(*parts)
    return ~expr if rng.random() < 0.2 else expr


def unmerged_bind(expr: hx.Expression) -> hx.Expression:
    """``expr`` bound leaf by leaf, nothing gathered: what binding gave before the rewrite."""
    return transform_leaves(rewrite_not(expr), lambda leaf: bind(leaf, SCHEMA))


def masks(expr: hx.Expression, stats: hx.FileStats) -> tuple[list[Any], list[Any]]:
    return hx.might_match(expr, stats).to_pylist(), hx.all_match(expr, stats).to_pylist()


@pytest.mark.parametrize("seed", range(6))
def test_merged_trees_select_duckdbs_rows(seed: int) -> None:
    rng = random.Random(seed)
    table, files = random_table(rng)
    bloom_on = rng.choice([None, "i", "s"])
    stats = exact_stats(files, bloom_on)
    exprs = [random_expression(rng) for _ in range(80)]
    bound = [bind(e, SCHEMA) for e in exprs]
    negated = [bind(~e, SCHEMA) for e in exprs]
    sql = [str(e) for e in exprs]
    texts = sql + [f"NOT ({s})" for s in sql] + [str(b) for b in bound] + [str(n) for n in negated]
    row_files, truths = evaluate(table, texts)
    n = len(exprs)
    merges = 0
    for k, expr in enumerate(exprs):
        truth, not_truth, bound_truth, negated_truth = truths[k::n]
        selected = rows_where(truth)
        merged = leaf_count(merge_equalities(rewrite_not(expr))) < leaf_count(rewrite_not(expr))
        merges += merged
        context = f"expr: {expr}\nbound: {bound[k]}"
        assert rows_where(bound_truth) == selected, context
        filtered = table.filter(bound[k].to_pyarrow(SCHEMA)).column("__row").to_pylist()
        assert set(filtered) == selected, context
        # ~ is exact: the rows where NOT (expr) is TRUE, NULL rows of either excluded.
        assert rows_where(negated_truth) == rows_where(not_truth), f"{context}\n~: {negated[k]}"
        negated_rows = table.filter(negated[k].to_pyarrow(SCHEMA)).column("__row").to_pylist()
        assert set(negated_rows) == rows_where(not_truth), context
        # Pruning with the merged tree is sound and strict, and prunes what the comparisons one by
        # one pruned (all_match alike), except with bloom filters: an IN list asks them about all
        # its values at once, not only those within a file's bounds, so a false positive for a
        # value outside the bounds may keep a file the comparisons one by one ruled out.
        might, every = check_sound_and_strict(stats, expr, row_files, truth, NUM_FILES)
        before_might, before_every = masks(unmerged_bind(expr), stats)
        assert all(e or not b for e, b in zip(every, before_every, strict=True)), context
        if bloom_on is None:
            assert all(b or not m for m, b in zip(might, before_might, strict=True)), context
    assert merges >= n // 3, f"only {merges} of {n} expressions had equalities to gather"


# ---------------------------------------------------------------------------------- wide trees


def test_ten_thousand_equalities_are_one_in() -> None:
    n = 10_000
    i = col("i")
    chain = i == 0
    for v in range(1, n):  # left-deep: a 10,000-deep tree
        chain = chain | (i == v) | (col("s") == str(v))
    balanced = Or(*(i == v for v in range(n)), col("f") == 0.5)
    with low_recursion_limit():
        bound = bind(chain, SCHEMA)
        assert isinstance(bound, Or) and [type(x) for x in bound.operands()] == [In, In]
        assert [len(x.values) for x in bound.operands()] == [n, n - 1]  # type: ignore[attr-defined]
        got = bind(balanced, SCHEMA)
        assert isinstance(got, Or) and len(got.operands()) == 2
        negated = bind(~balanced, SCHEMA)
        assert isinstance(negated, And) and isinstance(negated.operands()[0], NotIn)
        assert [type(x) for x in negated.operands()] == [NotIn, NotEqualTo]
        stats = hx.FileStats.from_pylist(
            [
                {"file": "low", "row_count": 2, "stats": {"i": {"min": 5, "max": 9, "null_count": 0}}},
                {"file": "high", "row_count": 2, "stats": {"i": {"min": n, "max": 2 * n, "null_count": 0}}},
                {"file": "pinned", "row_count": 2, "stats": {"i": {"min": 7, "max": 7, "null_count": 0}}},
            ],
            SCHEMA,
        )
        # f has no statistics: its = 0.5 keeps every file.
        assert hx.might_match(Or(*(i == v for v in range(n))), stats).to_pylist() == [True, False, True]
        assert hx.all_match(Or(*(i == v for v in range(n))), stats).to_pylist() == [False, False, True]
        assert hx.might_match(And(*(i != v for v in range(n))), stats).to_pylist() == [True, True, False]
        rows = pa.table({"i": pa.array([1, n, None, n - 1], pa.int64()), "f": [0.0] * 4, "s": ["x"] * 4})
        kept = rows.filter(bound.to_pyarrow(SCHEMA)).column("i").to_pylist()
        assert kept == [1, n - 1]


def test_a_hundred_thousand_terms() -> None:
    n = 100_000
    expr = Or(*(col("i") == v for v in range(n)), *(col("s") == str(v) for v in range(0, n, 10)))
    with low_recursion_limit():
        bound = bind(expr, SCHEMA)
        assert [len(x.values) for x in bound.operands()] == [n, n // 10]  # type: ignore[attr-defined]
        assert bind(~expr, SCHEMA) == ~bound
