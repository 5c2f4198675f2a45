"""Expression nodes: builders, immutability, equality and hashing, simplification, exact negation."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import pickle

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Contains,
    ContainsTerm,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNaN,
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
    Reference,
    StartsWith,
    col,
    contains_term,
    rewrite_not,
)

A = Reference("a")


def depth(expr: Expression) -> int:
    """Height of the tree (a leaf is 1), computed without recursion."""
    best = 0
    stack = [(expr, 1)]
    while stack:
        node, d = stack.pop()
        best = max(best, d)
        stack.extend((child, d + 1) for child in node.children)
    return best


# ------------------------------------------------------------------------------------ builders


@pytest.mark.parametrize(
    ("built", "kind", "literal"),
    [
        (col("a") == 5, EqualTo, 5),
        (col("a") != 5, NotEqualTo, 5),
        (col("a") < 5, LessThan, 5),
        (col("a") <= 5, LessThanOrEqual, 5),
        (col("a") > 5, GreaterThan, 5),
        (col("a") >= 5, GreaterThanOrEqual, 5),
        # Reflected: Python turns 5 < col into col > 5.
        (col("a") > 5, GreaterThan, 5),
        (col("a") >= 5, GreaterThanOrEqual, 5),
        (col("a") < 5, LessThan, 5),
        (col("a") <= 5, LessThanOrEqual, 5),
        (col("a") == 5, EqualTo, 5),
        (col("a").starts_with("ab"), StartsWith, "ab"),
        (col("a").not_starts_with(b"ab"), NotStartsWith, b"ab"),
        (col("a").contains("b c"), Contains, "b c"),
        (col("a").not_contains("b"), NotContains, "b"),
        (col("a").contains_term("Word"), ContainsTerm, "Word"),  # lower-cased when bound
        (col("a").not_contains_term("word"), NotContainsTerm, "word"),
        (contains_term("a", "word"), ContainsTerm, "word"),
    ],
)
def test_comparison_builders(built: Expression, kind: type, literal: object) -> None:
    assert type(built) is kind
    assert built.term == A
    assert built.literal == literal
    assert type(built.literal) is type(literal)


def test_unary_and_set_builders() -> None:
    assert col("a").is_null() == IsNull(A)
    assert col("a").is_not_null() == IsNotNull(A)
    assert col("a").is_nan() == IsNaN(A)
    assert col("a").is_not_nan() == IsNotNaN(A)
    built = col("a").isin([3, 1, 2])
    assert type(built) is In and built.values == (3, 1, 2)
    assert type(col("a").notin([1, 2])) is NotIn
    assert col("a").between(1, 9) == And(GreaterThanOrEqual(A, 1), LessThanOrEqual(A, 9))


def test_connectives() -> None:
    p, q = col("a") > 1, col("b") < 2
    assert type(p & q) is And and (p & q).children == (p, q)
    assert type(p | q) is Or and (p | q).children == (p, q)
    assert ~p == LessThanOrEqual(A, 1)
    # Python booleans are accepted as constants on either side.
    assert (True & p) == p and (p & True) == p
    assert (False | p) == p and (p | True) == AlwaysTrue()
    assert (p & False) == AlwaysFalse()


def test_struct_path_and_numpy_literals() -> None:
    e = col("s.x") == np.int64(3)
    assert e.term.name == "s.x"
    assert type(e.literal) is int and e.literal == 3
    assert type((col("f") > np.float32(0.5)).literal) is float


def test_references_and_walk() -> None:
    e = (col("a") > 1) & ((col("b") == 2) | Not(col("a") < 0))
    assert e.references() == ["a", "b"]
    assert [type(n).__name__ for n in e.walk()] == ["And", "GreaterThan", "Or", "EqualTo", "Not", "LessThan"]
    assert [type(leaf).__name__ for leaf in e.leaves()] == ["GreaterThan", "EqualTo", "LessThan"]
    assert not e.is_bound


# -------------------------------------------------------------------------------- immutability


@pytest.mark.parametrize(
    "expr",
    [
        col("a") > 1,
        col("a").isin([1, 2]),
        col("a").is_null(),
        (col("a") > 1) & (col("b") > 1),
        Not(col("a") > 1),
    ],
)
def test_nodes_are_immutable(expr: Expression) -> None:
    with pytest.raises(AttributeError):
        expr.term = Reference("zzz")  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        expr.anything = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del expr._hash


def test_reference_is_immutable_and_validated() -> None:
    with pytest.raises(AttributeError):
        A.name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Reference("")
    with pytest.raises(TypeError):
        EqualTo(5, 1)  # a term must be a column name or reference


# ---------------------------------------------------------------------------- equality and hash


def test_equal_trees_are_equal_and_hash_alike() -> None:
    def build() -> Expression:
        return (col("a") > 5) & (col("b").isin(["x", "y"]) | col("c").is_null())

    x, y = build(), build()
    assert x is not y
    assert x == y and hash(x) == hash(y)
    assert len({x, y}) == 1


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (col("a") == 1, col("a") == 1.0),  # int and float literals differ
        (col("a") == 1, col("a") == True),  # noqa: E712  # and so do int and bool
        (col("a") == 1, col("b") == 1),
        (col("a") == 1, col("a") != 1),
        (col("a") < 1, col("a") <= 1),
        (col("a").isin([1, 2]), col("a").notin([1, 2])),
        (col("a").isin([1, 2]), col("a").isin([1, 3])),
        (col("a") == "1", col("a") == b"1"),
        ((col("a") > 1) & (col("b") > 1), (col("a") > 1) | (col("b") > 1)),
        (Not(col("a") > 1), col("a") <= 1),  # equivalent, but not the same tree
        (IsNull(A), IsNotNull(A)),
        (IsNaN(A), IsNull(A)),
    ],
)
def test_different_trees_differ(left: Expression, right: Expression) -> None:
    assert left != right
    assert not left.__eq__(right)


def test_and_or_are_associative() -> None:
    a, b, c, d = (col(n) > 0 for n in "abcd")
    assert (a & b) & c == a & (b & c)
    assert hash((a & b) & c) == hash(a & (b & c))
    assert (a | b) | c == a | (b | c)
    assert hash((a | b) | c) == hash(a | (b | c))
    assert ((a & b) & c) & d == And(a, b, c, d) == a & (b & (c & d))
    assert (a & b) & c != a & (b | c)
    assert (a & b) & c != (a & b) & d
    # The operand sequence counts: And is not commutative as a tree.
    assert a & b != b & a
    assert ((a & b) & c).operands() == [a, b, c]


def test_pickle_round_trip() -> None:
    e = (col("a") > 5) & ~col("s").starts_with("x") | col("d").isin(
        [dt.date(2024, 1, 2), dt.date(2024, 1, 3)]
    )
    assert pickle.loads(pickle.dumps(e)) == e
    assert pickle.loads(pickle.dumps(AlwaysTrue())) is AlwaysTrue()


def test_constants_are_singletons() -> None:
    assert AlwaysTrue() is AlwaysTrue() and AlwaysFalse() is AlwaysFalse()
    assert AlwaysTrue() != AlwaysFalse()
    assert str(AlwaysTrue()) == "TRUE" and str(AlwaysFalse()) == "FALSE"


# ------------------------------------------------------------------------------ simplification


def test_constants_fold() -> None:
    p, q = col("a") > 1, col("b") > 1
    assert And(p, AlwaysTrue()) == p
    assert And(AlwaysTrue(), p, AlwaysTrue(), q) == And(p, q)
    assert And(p, AlwaysFalse(), q) is AlwaysFalse()
    assert Or(p, AlwaysFalse()) == p
    assert Or(p, AlwaysTrue(), q) is AlwaysTrue()
    assert And() is AlwaysTrue() and Or() is AlwaysFalse()
    assert And(p) is p and Or(q) is q
    assert Not(AlwaysTrue()) is AlwaysFalse() and Not(AlwaysFalse()) is AlwaysTrue()
    assert And(p, p, q, p) == And(p, q)
    assert Or(q, q) is q


def test_in_simplification() -> None:
    assert col("a").isin([7]) == EqualTo(A, 7)
    assert col("a").notin([7]) == NotEqualTo(A, 7)
    assert col("a").isin([7, 7, 7]) == EqualTo(A, 7)
    assert col("a").isin([]) is AlwaysFalse()
    assert col("a").notin([]) is AlwaysTrue()
    assert col("a").isin([3, 1, 3, 2, 1]).values == (3, 1, 2)
    # 1, 1.0 and True are different literals (they coerce differently), so all three stay.
    assert col("a").isin([1, 1.0, True]).values == (1, 1.0, True)
    # All NaNs are one value.
    assert col("a").isin([math.nan, float("nan")]) == EqualTo(A, math.nan)
    assert In(A, pa.array([5, 5])) == EqualTo(A, pa.scalar(5))
    assert In(A, pa.array([], pa.int64())) is AlwaysFalse()
    assert len(In(A, pa.array([1, 2, 2, 1, 3])).values) == 3


def test_double_not_is_the_child() -> None:
    p = col("a") > 1
    assert Not(Not(p)) is p
    assert Not(Not(Not(p))) == Not(p)


def test_bool_raises() -> None:
    e = col("a") > 5
    with pytest.raises(TypeError, match="no truth value"):
        bool(e)
    with pytest.raises(TypeError):
        if e:  # pragma: no cover - the condition raises
            pass
    with pytest.raises(TypeError):
        1 < col("a") < 5  # noqa: B015  # a chained comparison needs bool()
    with pytest.raises(TypeError):
        e and e  # noqa: B018


@pytest.mark.parametrize(
    "make",
    [
        lambda: col("a") == None,  # noqa: E711
        lambda: col("a") < None,  # type: ignore[operator]
        lambda: col("a").isin([1, None]),
        lambda: col("a").notin([None]),
        lambda: col("a") == pa.scalar(None, pa.int64()),
        lambda: In(A, pa.array([1, None])),
        lambda: col("a").starts_with(None),  # type: ignore[arg-type]
        lambda: col("a").contains(None),  # type: ignore[arg-type]
        lambda: contains_term("a", None),  # type: ignore[arg-type]
    ],
)
def test_null_literal_raises(make: object) -> None:
    with pytest.raises(ValueError, match="NULL"):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    "make",
    [
        lambda: col("a") == [1],
        lambda: col("a") == object(),
        lambda: col("a").isin("abc"),
        lambda: col("a").isin(5),
    ],
)
def test_unsupported_literals_raise(make: object) -> None:
    with pytest.raises(TypeError):
        make()  # type: ignore[operator]


def test_accepted_literal_types() -> None:
    for value in (
        True,
        1,
        1.5,
        decimal.Decimal("1.5"),
        "x",
        b"x",
        dt.date(2024, 1, 2),
        dt.datetime(2024, 1, 2),
    ):
        assert (col("a") == value).literal == value
    assert (col("a") == pa.scalar(5, pa.int8())).literal.type == pa.int8()


# ---------------------------------------------------------------------------------- negation

B = Reference("b")


@pytest.mark.parametrize(
    ("expr", "negated"),
    [
        (col("a") > 5, LessThanOrEqual(A, 5)),
        (col("a") >= 5, LessThan(A, 5)),
        (col("a") < 5, GreaterThanOrEqual(A, 5)),
        (col("a") <= 5, GreaterThan(A, 5)),
        (col("a") == 5, NotEqualTo(A, 5)),
        (col("a") != 5, EqualTo(A, 5)),
        (col("a").isin([1, 2]), NotIn(A, [1, 2])),
        (col("a").notin([1, 2]), In(A, [1, 2])),
        (col("a").is_null(), IsNotNull(A)),
        (col("a").is_not_null(), IsNull(A)),
        (col("a").is_nan(), IsNotNaN(A)),
        (col("a").is_not_nan(), IsNaN(A)),
        (col("a").starts_with("p"), NotStartsWith(A, "p")),
        (col("a").not_starts_with("p"), StartsWith(A, "p")),
        (col("a").contains("p"), NotContains(A, "p")),
        (col("a").not_contains("p"), Contains(A, "p")),
        (col("a").contains_term("p"), NotContainsTerm(A, "p")),
        (col("a").not_contains_term("p"), ContainsTerm(A, "p")),
        (AlwaysTrue(), AlwaysFalse()),
        (AlwaysFalse(), AlwaysTrue()),
        (Not(col("a") > 5), GreaterThan(A, 5)),
        ((col("a") > 5) & (col("b") < 1), Or(LessThanOrEqual(A, 5), GreaterThanOrEqual(B, 1))),
        ((col("a") > 5) | col("b").is_null(), And(LessThanOrEqual(A, 5), IsNotNull(B))),
        (
            (col("a") > 5) & ((col("b") == 1) | ~col("a").isin([7, 8])),
            Or(LessThanOrEqual(A, 5), And(NotEqualTo(B, 1), In(A, [7, 8]))),
        ),
    ],
)
def test_exact_negation(expr: Expression, negated: Expression) -> None:
    assert ~expr == negated
    # ~ never builds a Not node, so twice gives back a NOT-free tree equal to the original's.
    assert ~~expr == rewrite_not(expr)
    assert ~~expr == expr or isinstance(expr, Not)


def test_double_negation_of_a_large_tree() -> None:
    rng = np.random.default_rng(7)
    leaves = [
        col("a") > 1,
        col("b").isin([1, 2, 3]),
        col("c").is_nan(),
        col("d").starts_with("x"),
        col("d").contains("x"),
        col("d").contains_term("x"),
        col("e").is_null(),
        col("f") != 2.5,
    ]
    expr: Expression = leaves[0]
    for i in range(200):
        leaf = leaves[int(rng.integers(len(leaves)))]
        expr = expr & leaf if rng.random() < 0.5 else expr | (leaf if i % 7 else ~leaf)
    assert ~~expr == expr
    assert ~expr != expr


def test_balanced_tree_depth_is_logarithmic() -> None:
    n = 100_000
    leaves = [col("a") == i for i in range(n)]
    tree = And(*leaves)
    assert depth(tree) == math.ceil(math.log2(n)) + 1
    assert tree.operands() == leaves
    assert depth(Or(*leaves[:1000])) == 11


def test_nan_literals_are_equal_to_themselves() -> None:
    # NaN != NaN as a number, but as a literal it is one value: trees with it compare equal.
    assert (col("f") == math.nan) == (col("f") == float("nan"))
    assert EqualTo(A, pa.scalar(math.nan)) == EqualTo(A, pa.scalar(math.nan))
    assert EqualTo(A, pa.scalar(math.nan)) != EqualTo(A, pa.scalar(math.nan, pa.float32()))
    assert In(A, pa.array([1.0, math.nan, 2.0])) == In(A, pa.array([1.0, math.nan, 2.0]))
    assert In(A, pa.array([1.0, math.nan, 2.0])) != In(A, pa.array([1.0, math.nan, 3.0]))
    assert In(A, pa.array([1.0, math.nan])) != In(A, pa.array([math.nan, 1.0]))
