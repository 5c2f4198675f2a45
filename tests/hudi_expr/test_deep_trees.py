"""Deep and wide trees: 10,000-deep AND/OR chains and 100,000-term IN lists work with no recursion.

Everything runs under ``sys.setrecursionlimit(1000)``: a recursive implementation would fail.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import (
    And,
    Expression,
    FileStats,
    In,
    Not,
    NotIn,
    Or,
    all_match,
    col,
    explain,
    from_json,
    might_match,
    rewrite_not,
    to_json,
)

N = 10_000
SCHEMA = pa.schema([("a", pa.int64())])
STATS = FileStats.from_pylist(
    [
        {"file": "pinned_5", "row_count": 3, "stats": {"a": {"min": 5, "max": 5, "null_count": 0}}},
        {"file": "beyond", "row_count": 3, "stats": {"a": {"min": 20_000, "max": 20_010, "null_count": 0}}},
        {"file": "spread", "row_count": 3, "stats": {"a": {"min": 3, "max": 8, "null_count": 0}}},
        {"file": "nulls", "row_count": 3, "stats": {"a": {"min": 20_000, "max": 20_000, "null_count": 1}}},
    ],
    SCHEMA,
)
TABLE = pa.table({"a": pa.array([*range(0, 20_001, 7), None], pa.int64())})


@contextmanager
def low_recursion_limit(limit: int = 1000) -> Iterator[None]:
    """Run the body with a small recursion limit, restored afterwards."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def depth(expr: Expression) -> int:
    best, stack = 0, [(expr, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((c, d + 1) for c in node.children)
    return best


@pytest.fixture(scope="module")
def and_chain() -> Expression:
    """a <> 0 AND a <> 1 AND ... AND a <> 9999, built left-leaning with &."""
    e = col("a") != 0
    for i in range(1, N):
        e = e & (col("a") != i)
    return e


@pytest.fixture(scope="module")
def or_chain() -> Expression:
    """a = 0 OR a = 1 OR ... OR a = 9999, built left-leaning with |."""
    e = col("a") == 0
    for i in range(1, N):
        e = e | (col("a") == i)
    return e


def test_chains_are_really_deep(and_chain: Expression, or_chain: Expression) -> None:
    assert depth(and_chain) == N
    assert depth(or_chain) == N
    assert isinstance(and_chain, And) and isinstance(or_chain, Or)


def test_equality_hash_and_negation(and_chain: Expression, or_chain: Expression) -> None:
    with low_recursion_limit():
        balanced = And(*(col("a") != i for i in range(N)))
        assert depth(balanced) == 15  # ceil(log2(10,000)) + 1
        assert and_chain == balanced and hash(and_chain) == hash(balanced)
        assert and_chain != or_chain
        assert ~and_chain == or_chain
        assert ~or_chain == and_chain
        assert ~~and_chain == and_chain
        assert rewrite_not(Not(and_chain)) == or_chain
        assert not any(isinstance(n, Not) for n in rewrite_not(Not(or_chain)).walk())
        assert len(and_chain.operands()) == N
        assert and_chain.references() == ["a"]


def test_sql_text(and_chain: Expression, or_chain: Expression) -> None:
    with low_recursion_limit():
        text = str(and_chain)
        assert text.startswith("a <> 0 AND a <> 1 AND a <> 2")
        assert text.endswith("AND a <> 9999")
        assert text.count(" AND ") == N - 1 and "(" not in text
        negated = str(Not(or_chain))
        assert negated.startswith("NOT (a = 0 OR a = 1") and negated.endswith("a = 9999)")


def test_json_round_trip(and_chain: Expression, or_chain: Expression) -> None:
    with low_recursion_limit():
        for chain, key in ((and_chain, "and"), (or_chain, "or")):
            text = to_json(chain)
            assert len(json.loads(text)[key]) == N  # written flat
            assert from_json(text) == chain
        assert from_json(to_json(Not(and_chain))) == Not(and_chain)


def test_bind_and_evaluate(and_chain: Expression, or_chain: Expression) -> None:
    with low_recursion_limit():
        bound = and_chain.bind(SCHEMA)
        # Binding gathers the 10,000 inequalities on one column into one NOT IN list.
        assert bound.is_bound and isinstance(bound, NotIn) and len(bound.values) == N
        # a <> i for every i < 10,000: only the file pinned to 5 is ruled out; strict needs
        # every value outside 0..9999 and no NULL.
        assert might_match(and_chain, STATS).to_pylist() == [False, True, True, True]
        assert all_match(and_chain, STATS).to_pylist() == [False, True, False, False]
        # a = i for some i < 10,000.
        assert might_match(or_chain, STATS).to_pylist() == [True, False, True, False]
        assert all_match(or_chain, STATS).to_pylist() == [True, False, False, False]
        assert might_match(~or_chain, STATS).to_pylist() == [False, True, True, True]
        assert might_match(Not(and_chain), STATS).to_pylist() == [True, False, True, False]
        assert explain(and_chain, STATS).kept_files == ["beyond", "spread", "nulls"]


def test_row_filter(and_chain: Expression, or_chain: Expression) -> None:
    values = np.arange(0, 20_001, 7)
    with low_recursion_limit():
        kept_and = TABLE.filter(and_chain.to_pyarrow(SCHEMA)).column("a").to_pylist()
        kept_or = TABLE.filter(or_chain.to_pyarrow(SCHEMA)).column("a").to_pylist()
        kept_not = TABLE.filter(Not(or_chain).to_pyarrow(SCHEMA)).column("a").to_pylist()
    assert kept_and == values[values >= N].tolist()
    assert kept_or == values[values < N].tolist()
    assert kept_not == kept_and


def test_alternating_nesting() -> None:
    # AND and OR alternate, so nothing flattens: depth 3,000 for the visitors to walk.
    e = col("a") == 0
    for i in range(1, 3000):
        e = (e & (col("a") != i)) if i % 2 else (e | (col("a") == i))
    assert depth(e) == 3000
    with low_recursion_limit():
        assert ~~e == e
        assert e.bind(SCHEMA).is_bound
        # The last step is "AND a <> 2999": the value 2998 (even) satisfies the OR before it.
        assert str(e).endswith("OR a = 2998) AND a <> 2999")
        assert might_match(e, STATS).to_pylist() == [False, False, True, False]
        kept = TABLE.filter(e.to_pyarrow(SCHEMA)).column("a").to_pylist()
    assert kept == [v for v in range(0, 2999, 7) if v % 2 == 0]


# --------------------------------------------------------------------------------- wide IN


def test_100k_in_list() -> None:
    values = list(range(0, 300_000, 3))  # 100,000 multiples of 3
    stats = FileStats.from_pylist(
        [
            {
                "file": "miss",
                "row_count": 5,
                "stats": {"a": {"min": 10, "max": 11, "null_count": 0}},
            },  # 9 < 10, 12 > 11
            {"file": "hit", "row_count": 5, "stats": {"a": {"min": 10, "max": 12, "null_count": 0}}},  # 12
            {
                "file": "beyond",
                "row_count": 5,
                "stats": {"a": {"min": 300_000, "max": 400_000, "null_count": 0}},
            },
            {"file": "pinned", "row_count": 5, "stats": {"a": {"min": 99, "max": 99, "null_count": 0}}},
            {"file": "unknown", "row_count": 5},
        ],
        SCHEMA,
    )
    with low_recursion_limit():
        expr = col("a").isin(values)
        assert isinstance(expr, In) and len(expr.values) == len(values)
        bound = expr.bind(SCHEMA)
        assert len(bound.values) == len(values)
        assert might_match(expr, stats).to_pylist() == [False, True, False, True, True]
        assert all_match(expr, stats).to_pylist() == [False, False, False, True, False]
        assert might_match(~expr, stats).to_pylist() == [True, True, True, False, True]
        assert all_match(~expr, stats).to_pylist() == [True, False, True, False, False]
        assert from_json(to_json(expr)) == expr
        text = str(expr)
        assert text.startswith("a IN (0, 3, 6, ") and text.endswith(", 299997)")
        kept = TABLE.filter(expr.to_pyarrow(SCHEMA)).column("a").to_pylist()
    assert kept == [v for v in range(0, 20_001, 7) if v % 3 == 0]


def test_many_in_lists_in_one_tree() -> None:
    rng = np.random.default_rng(0)
    lists = [rng.integers(30_000, 10**6, size=50).tolist() for _ in range(2000)]
    lists[700].append(5)
    lists[1500].append(20_005)
    with low_recursion_limit():
        expr = Or(*(col("a").isin(values) for values in lists))
        assert depth(expr) == 12  # ceil(log2(2000)) + 1
        # 5 is in the pinned and spread files, 20,005 in the 'beyond' one, nothing else is.
        assert might_match(expr, STATS).to_pylist() == [True, True, True, False]
        assert all_match(expr, STATS).to_pylist() == [True, False, False, False]
