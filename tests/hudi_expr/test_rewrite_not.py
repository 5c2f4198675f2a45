"""NOT rewrite: De Morgan and exact leaf negation under three-valued logic; no Not node survives."""

from __future__ import annotations

import numpy as np
import pytest

from hudi_expr import (
    And,
    Contains,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotContains,
    NotContainsTerm,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    StartsWith,
    col,
    rewrite_not,
)

A, B, C = Reference("a"), Reference("b"), Reference("c")


def has_not(expr: Expression) -> bool:
    return any(isinstance(node, Not) for node in expr.walk())


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (Not(col("a") > 5), LessThanOrEqual(A, 5)),
        (Not((col("a") > 5) & (col("b") < 3)), Or(LessThanOrEqual(A, 5), GreaterThanOrEqual(B, 3))),
        (Not((col("a") > 5) | (col("b") < 3)), And(LessThanOrEqual(A, 5), GreaterThanOrEqual(B, 3))),
        (Not(col("a").isin([1, 2])), NotIn(A, [1, 2])),
        (Not(col("a").notin([1, 2])), In(A, [1, 2])),
        (Not(col("a").is_null()), IsNotNull(A)),
        (Not(col("a").is_not_null()), IsNull(A)),
        (Not(col("a").starts_with("x")), NotStartsWith(A, "x")),
        (Not(col("a").contains("x")), NotContains(A, "x")),
        (Not(col("a").not_contains("x")), Contains(A, "x")),
        (Not(col("a").contains_term("x")), NotContainsTerm(A, "x")),
        (
            Not(col("a").contains_term("x") | Not(col("b").not_contains_term("y"))),
            And(NotContainsTerm(A, "x"), NotContainsTerm(B, "y")),
        ),
        (Not(Not(col("a") == 1) & col("b").is_null()), Or(EqualTo(A, 1), IsNotNull(B))),
        (
            # NOT (NOT (a OR b) AND c) = (a OR b) OR NOT c
            Not(And(Not(Or(col("a") < 1, col("b") >= 2)), col("c") != 0)),
            Or(LessThan(A, 1), GreaterThanOrEqual(B, 2), EqualTo(C, 0)),
        ),
        (
            (col("a") > 1) & Not((col("b") == 1) | Not(col("c").starts_with("p"))),
            And(GreaterThan(A, 1), NotEqualTo(B, 1), StartsWith(C, "p")),
        ),
    ],
)
def test_rewrite_not(expr: Expression, expected: Expression) -> None:
    out = rewrite_not(expr)
    assert out == expected
    assert not has_not(out)


def test_invert_never_builds_not_nodes() -> None:
    e = ((col("a") > 1) | col("b").isin([1, 2])) & ~(col("c").is_nan() | col("a").starts_with("x"))
    assert not has_not(~e)
    assert not has_not(e)


def test_not_free_tree_is_returned_as_is() -> None:
    e = (col("a") > 1) & ((col("b") == 2) | col("c").is_null())
    assert rewrite_not(e) is e


# --------------------------------------------------------------- three-valued oracle over rows

Row = dict[str, int | None]


def kleene(expr: Expression, row: Row) -> bool | None:
    """SQL truth value of ``expr`` on ``row`` (None is NULL), evaluated by hand."""
    if isinstance(expr, Not):
        v = kleene(expr.child, row)
        return None if v is None else not v
    if isinstance(expr, And):
        parts = [kleene(c, row) for c in expr.children]
        return False if False in parts else (None if None in parts else True)
    if isinstance(expr, Or):
        parts = [kleene(c, row) for c in expr.children]
        return True if True in parts else (None if None in parts else False)
    assert isinstance(expr, Predicate)
    x = row[expr.term.name]
    if isinstance(expr, IsNull):
        return x is None
    if isinstance(expr, IsNotNull):
        return x is not None
    if x is None:
        return None
    if isinstance(expr, (In, NotIn)):
        found = x in expr.values
        return found if isinstance(expr, In) else not found
    v = expr.literal  # type: ignore[attr-defined]
    ops = {
        EqualTo: x == v,
        NotEqualTo: x != v,
        LessThan: x < v,
        LessThanOrEqual: x <= v,
        GreaterThan: x > v,
        GreaterThanOrEqual: x >= v,
    }
    return ops[type(expr)]


def random_tree(rng: np.random.Generator, size: int) -> Expression:
    def leaf() -> Expression:
        name = "abc"[int(rng.integers(3))]
        v = int(rng.integers(0, 4))
        kind = int(rng.integers(8))
        return [
            col(name) == v,
            col(name) != v,
            col(name) < v,
            col(name) >= v,
            col(name).isin([v, v + 1]),
            col(name).notin([v, 3 - v]),
            col(name).is_null(),
            col(name).is_not_null(),
        ][kind]

    nodes = [leaf() for _ in range(size)]
    while len(nodes) > 1:
        i = int(rng.integers(len(nodes) - 1))
        left, right = nodes[i], nodes.pop(i + 1)
        joined = And(left, right) if rng.random() < 0.5 else Or(left, right)
        nodes[i] = Not(joined) if rng.random() < 0.4 else joined
    return Not(nodes[0]) if rng.random() < 0.5 else nodes[0]


def test_rewrite_keeps_three_valued_meaning() -> None:
    rng = np.random.default_rng(2024)
    values = [None, 0, 1, 2, 3]
    rows = [{"a": a, "b": b, "c": c} for a in values for b in values for c in values]
    for _ in range(150):
        expr = random_tree(rng, int(rng.integers(1, 8)))
        out = rewrite_not(expr)
        assert not has_not(out)
        for row in rows:
            assert kleene(out, row) == kleene(expr, row), (expr, out, row)
            # ~ is the exact SQL NOT: TRUE where the original is FALSE, NULL where it is NULL.
            original = kleene(expr, row)
            assert kleene(~expr, row) == (None if original is None else not original)
