"""Pruning soundness against DuckDB: might_match, all_match, NOT-rewrite, binding and the row filter.

For a random table split into files (stats possibly degraded, bloom filters on some column) and a
random predicate, DuckDB evaluates ``str(expr)`` on every row, and:

1. soundness: a file with a row where the predicate is TRUE is kept by ``might_match``;
2. strictness: where ``all_match`` says every row matches, DuckDB agrees;
3. ``rewrite_not(expr)`` and ``expr.bind(schema)`` select the same rows as ``expr``, and ``~expr``
   the rows where ``NOT (expr)`` is TRUE;
4. ``table.filter(expr.to_pyarrow(schema))`` selects exactly DuckDB's rows;
5. non-vacuity: simple comparisons on exact int/string stats do prune what they certainly can, and
   over the run a fair share of examples prunes some file.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
from hypothesis import event, given, settings

import hudi_expr as hx
from hudi_expr import col
from property_tests.checks import case_and_expression, check_sound_and_strict, describe
from property_tests.oracle import evaluate, rows_where
from property_tests.strategies import Case

COMPARISONS = (hx.EqualTo, hx.LessThan, hx.LessThanOrEqual, hx.GreaterThan, hx.GreaterThanOrEqual)


def certainly_excluded(case: Case, leaf: hx.Predicate, f: int) -> bool:
    """Exact stats of file ``f`` prove that the simple leaf holds for no row (int/string only)."""
    path = leaf.term.name
    n = case.row_counts[f]
    vals = case.values[path][f]
    nulls = sum(v is None for v in vals)
    if n == 0:
        return True
    if isinstance(leaf, hx.IsNull):
        return nulls == 0
    if nulls == n:
        return True
    if isinstance(leaf, hx.IsNotNull):
        return False
    present = [v for v in vals if v is not None]
    lo, hi, v = min(present), max(present), leaf.literal  # type: ignore[attr-defined]
    return {
        hx.EqualTo: lambda: v < lo or v > hi,
        hx.LessThan: lambda: lo >= v,
        hx.LessThanOrEqual: lambda: lo > v,
        hx.GreaterThan: lambda: hi <= v,
        hx.GreaterThanOrEqual: lambda: hi < v,
    }[type(leaf)]()


def simple_leaves(case: Case, expr: hx.Expression) -> list[hx.Predicate]:
    """Comparisons and null tests with a same-kind literal on int/string columns."""
    out = []
    for leaf in expr.leaves():
        kind = case.leaf(leaf.term.name).kind
        if isinstance(leaf, (hx.IsNull, hx.IsNotNull)):
            out.append(leaf)
        elif isinstance(leaf, COMPARISONS):
            lit = leaf.literal
            if (kind == "int" and type(lit) is int) or (kind == "string" and isinstance(lit, str)):
                out.append(leaf)
    return out


def check_completeness(case: Case, expr: hx.Expression, counts: Counter[str]) -> None:
    """On exact stats, a simple leaf must prune every file its stats certainly exclude."""
    for leaf in simple_leaves(case, expr):
        might = hx.might_match(leaf, case.stats).to_pylist()
        for f in range(case.num_files):
            if case.exact[leaf.term.name][f] and certainly_excluded(case, leaf, f):
                counts["completeness checks"] += 1
                assert might[f] is False, f"{leaf} should prune file {f} on its exact stats"


def run_all_properties(case: Case, expr: hx.Expression, counts: Counter[str]) -> None:
    """Properties 1-4 (and 5's completeness part) for one example."""
    describe(case, expr)
    sql = str(expr)
    bound = expr.bind(case.schema)
    nnf = hx.rewrite_not(expr)
    files, (truth, not_truth, neg_truth, nnf_truth, bound_truth) = evaluate(
        case.table, [sql, f"NOT ({sql})", str(~expr), str(nnf), str(bound)]
    )
    # 1, 2
    might, every = check_sound_and_strict(case.stats, expr, files, truth, case.num_files)
    # An expression bound beforehand prunes alike (the evaluators take bound trees as they are).
    assert hx.might_match(bound, case.stats).to_pylist() == might
    assert hx.all_match(bound, case.stats).to_pylist() == every
    # 3
    selected = rows_where(truth)
    assert rows_where(nnf_truth) == selected, f"rewrite_not changed the rows: {nnf}"
    assert rows_where(bound_truth) == selected, f"binding changed the rows: {bound}"
    assert rows_where(neg_truth) == rows_where(not_truth), f"~expr is not NOT (expr): {~expr}"
    # 4
    filtered = case.table.filter(expr.to_pyarrow(case.schema))
    assert set(filtered.column("__row").to_pylist()) == selected, "the row filter disagrees with DuckDB"
    # 5
    check_completeness(case, expr, counts)
    counts["examples"] += 1
    nonempty = [f for f in range(case.num_files) if case.row_counts[f] > 0]
    if any(not might[f] for f in nonempty):
        counts["pruned a non-empty file"] += 1
        event("pruned a non-empty file")
    if any(every[f] for f in nonempty):
        counts["all_match on a non-empty file"] += 1
    if selected:
        counts["some row matches"] += 1


def test_pruning_matches_duckdb() -> None:
    """The main property (full profile budget), then the run's non-vacuity statistics."""
    counts: Counter[str] = Counter()

    @given(example=case_and_expression())
    def prop(example: tuple[Case, hx.Expression]) -> None:
        run_all_properties(*example, counts)

    prop()
    print(dict(counts))
    n = counts["examples"]
    if n >= 200:
        assert counts["pruned a non-empty file"] >= n // 10, counts
        assert counts["all_match on a non-empty file"] >= n // 20, counts
        assert counts["completeness checks"] >= n // 10, counts
        assert counts["some row matches"] >= n // 5, counts


@settings(max_examples=max(settings().max_examples // 2, 10))
@given(example=case_and_expression(degraded=False, max_files=3))
def test_exact_stats_and_explain(example: tuple[Case, hx.Expression]) -> None:
    """Undegraded stats: the same properties, plus explain agrees with might_match."""
    case, expr = example
    run_all_properties(case, expr, Counter())
    explanation = hx.explain(expr, case.stats)
    assert explanation is not None
    assert str(explanation)


def test_obvious_prune() -> None:
    """A deterministic prune: the suite fails if might_match kept everything."""
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    stats = hx.FileStats.from_pylist(
        [
            {"file": "f0", "row_count": 3, "stats": {"a": {"min": 1, "max": 5, "null_count": 0}}},
            {"file": "f1", "row_count": 3, "stats": {"a": {"min": 10, "max": 20, "null_count": 1}}},
            {"file": "f2", "row_count": 2, "stats": {"a": {"null_count": 2}}},
        ],
        schema,
    )
    assert hx.might_match(col("a") > 7, stats).to_pylist() == [False, True, False]
    assert hx.might_match(col("a") == 3, stats).to_pylist() == [True, False, False]
    assert hx.might_match(~(col("a") >= 1), stats).to_pylist() == [False, False, False]
    assert hx.all_match(col("a") < 7, stats).to_pylist() == [True, False, False]
    assert hx.might_match(col("s") == "x", stats).to_pylist() == [True, True, True]
