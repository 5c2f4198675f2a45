"""``adapters.translation.walker``: a toy third engine gets the full translation by writing only its
accessors.

The toy engine's filters are nested Python tuples (``("<", ("col", "a"), ("lit", 5))``); its node
accessors (``TupleNodes``) are the only engine code here. Its trees are also rendered as SQL and run
by DuckDB, which checks every translation: it keeps every row DuckDB keeps, and exactly those when
nothing was left unused.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from adapters.duckdb import register_macros
from adapters.translation import walker
from adapters.translation.walker import (
    NULL,
    Between,
    BooleanColumn,
    Column,
    Comparison,
    Conjunction,
    Constant,
    Disjunction,
    DistinctFrom,
    InList,
    LikeTest,
    NanTest,
    Negation,
    NullTest,
    PrefixTest,
    Shape,
    SubstringTest,
    TermTest,
    TruthTest,
    Untranslatable,
    is_predicate,
    translate,
    translation,
    truth_kind,
)
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    ContainsTerm,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Or,
    Reference,
    col,
    is_false,
    is_not_false,
    is_not_true,
    is_not_unknown,
    is_true,
    is_unknown,
)

Node = tuple[Any, ...]

# ------------------------------------------------------------------------- the toy engine: accessors

_OPS = {
    "=": EqualTo,
    "<>": NotEqualTo,
    "<": LessThan,
    "<=": LessThanOrEqual,
    ">": GreaterThan,
    ">=": GreaterThanOrEqual,
}


class TupleNodes:
    """Node accessors of an engine whose filters are nested tuples: all it takes to translate them."""

    def shape(self, node: Node) -> Shape[Node] | None:
        kind, *args = node
        if kind == "and":
            return Conjunction(args)
        if kind == "or":
            return Disjunction(args)
        if kind == "not":
            return Negation(args[0])
        if kind in _OPS:
            return Comparison(_OPS[kind], args[0], args[1])
        if kind in ("distinct", "not distinct"):
            # p IS [NOT] DISTINCT FROM TRUE/FALSE/NULL of a predicate p is a truth test, as in SQL.
            for operand, other in ((args[0], args[1]), (args[1], args[0])):
                if other[0] in ("lit", "null") and is_predicate(self.shape(operand)):
                    test = truth_kind(self.literal(other), distinct=kind == "distinct")
                    if test is not None:
                        return TruthTest(operand, test)
            return DistinctFrom(args[0], args[1], distinct=kind == "distinct")
        if kind == "between":
            return Between(args[0], args[1], args[2])
        if kind in ("in", "not in"):
            return InList(args[0], args[1:], negated=kind == "not in")
        if kind in ("is null", "is not null"):
            if is_predicate(self.shape(args[0])):  # (a > 5) IS NULL: a truth test, not a column's
                return TruthTest(args[0], "null" if kind == "is null" else "not null")
            return NullTest(args[0], is_null=kind == "is null")
        if kind == "is":  # ("is", "not true", p): (p) IS NOT TRUE
            return TruthTest(args[1], args[0])
        if kind == "isnan":
            return NanTest(args[0])
        if kind == "starts_with":
            return PrefixTest(args[0], args[1])
        if kind == "contains":
            return SubstringTest(args[0], args[1])
        if kind == "contains_term":
            return TermTest(args[0], args[1])
        if kind in ("like", "not like"):
            return LikeTest(args[0], args[1], escape=args[2], negated=kind == "not like")
        if kind in ("lit", "null"):
            return Constant(node)
        if kind == "col":
            return BooleanColumn(node)
        return None

    def column(self, node: Node) -> Column:
        if node[0] != "col":
            raise Untranslatable
        return Column(Reference(node[1]), float_as_double=len(node) > 2 and node[2] == "as double")

    def compared(self, column: Column, operands: Sequence[Node]) -> Column:
        return column  # the toy's trees say "as double" on the column where it is compared so

    def literal(self, node: Node) -> Any:
        if node[0] == "null":
            return NULL
        if node[0] == "lit":
            return node[1]
        raise Untranslatable

    def source_text(self, node: Node) -> str:
        return sql(node)


# ------------------------------------------------------------------- the toy engine's trees as SQL


def sql(node: Node) -> str:
    """DuckDB SQL of a toy tree (recursive: only for the small trees of the checks)."""
    kind, *args = node
    s = [sql(a) if isinstance(a, tuple) else a for a in args]
    if kind in ("and", "or"):
        return "(" + f" {kind.upper()} ".join(s) + ")"
    if kind == "not":
        return f"(NOT {s[0]})"
    if kind in _OPS:
        return f"({s[0]} {kind} {s[1]})"
    if kind in ("distinct", "not distinct"):
        return f"({s[0]} IS {kind.upper()} FROM {s[1]})"
    if kind == "between":
        return f"({s[0]} BETWEEN {s[1]} AND {s[2]})"
    if kind in ("in", "not in"):
        return f"({s[0]} {kind.upper()} ({', '.join(s[1:])}))"
    if kind in ("is null", "is not null"):
        return f"({s[0]} {kind.upper()})"
    if kind == "is":
        return f"({s[1]} IS {args[0].upper()})"
    if kind in ("like", "not like"):
        escape = "" if args[2] is None else f" ESCAPE '{args[2]}'"
        return f"({s[0]} {kind.upper()} {s[1]}{escape})"
    if kind == "col":
        return f'"{args[0]}"'
    if kind == "null":
        return "NULL"
    if kind == "lit":
        return _sql_literal(args[0])
    return f"{kind}({', '.join(s)})"  # isnan, starts_with, abs, ...


def _sql_literal(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).upper()
    if isinstance(value, float):
        text = "NaN" if math.isnan(value) else {math.inf: "Infinity", -math.inf: "-Infinity"}.get(value)
        return f"CAST('{text or repr(value)}' AS DOUBLE)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def tr(node: Node, negated: bool = False) -> tuple[Expression, list[str]]:
    not_used: list[str] = []
    return translate(TupleNodes(), node, negated, not_used), not_used


a, s, f, flag = ("col", "a"), ("col", "s"), ("col", "f"), ("col", "flag")
NUL = ("null",)


def lit(value: Any) -> Node:
    return ("lit", value)


# --------------------------------------------------------------------------------- translations

EXACT = [
    # comparisons, both orientations, and NOT pushed down exactly
    ((">", a, lit(5)), col("a") > 5),
    (("<", lit(5), a), col("a") > 5),
    (("not", (">", a, lit(5))), col("a") <= 5),
    (("not", (">=", lit(5), a)), col("a") > 5),
    (("not", ("and", (">", a, lit(5)), ("=", s, lit("x")))), (col("a") <= 5) | (col("s") != "x")),
    (("not", ("or", ("<", a, lit(1)), ("not", ("<>", s, lit("x"))))), (col("a") >= 1) & (col("s") != "x")),
    (("not", ("not", (">", a, lit(5)))), col("a") > 5),
    (("between", a, lit(1), lit(9)), (col("a") >= 1) & (col("a") <= 9)),
    (("not", ("between", a, lit(1), lit(9))), (col("a") < 1) | (col("a") > 9)),
    # NULL: never TRUE, negated or not
    (("=", a, NUL), AlwaysFalse()),
    (("not", ("=", a, NUL)), AlwaysFalse()),
    (("in", a, lit(1), NUL), col("a") == 1),
    (("not in", a, lit(1), NUL), AlwaysFalse()),
    (("not", ("in", a, lit(1), NUL)), AlwaysFalse()),
    (("not", ("not in", a, lit(1), lit(2))), col("a").isin([1, 2])),
    (("between", a, NUL, lit(5)), AlwaysFalse()),
    (("not", ("between", a, NUL, lit(5))), col("a") > 5),
    (NUL, AlwaysFalse()),
    (("not", NUL), AlwaysFalse()),
    (("like", s, NUL, None), AlwaysFalse()),
    (("starts_with", s, NUL), AlwaysFalse()),
    (("contains", s, NUL), AlwaysFalse()),
    (("not", ("contains_term", s, NUL)), AlwaysFalse()),
    # IS [NOT] DISTINCT FROM: never NULL, so NOT is the other one
    (("not distinct", a, lit(3)), col("a") == 3),
    (("distinct", a, lit(3)), (col("a") != 3) | col("a").is_null()),
    (("not", ("distinct", a, lit(3))), col("a") == 3),
    (("distinct", lit(3), a), (col("a") != 3) | col("a").is_null()),
    (("distinct", a, NUL), col("a").is_not_null()),
    (("not", ("not distinct", a, NUL)), col("a").is_not_null()),
    # LIKE as a prefix when the escape rules make it one
    (("like", s, lit("ab%"), None), col("s").starts_with("ab")),
    (("like", s, lit("ab%%"), None), col("s").starts_with("ab")),
    (("like", s, lit("abc"), None), col("s") == "abc"),
    (("like", s, lit("%"), None), col("s").starts_with("")),
    (("like", s, lit("a!%%"), "!"), col("s").starts_with("a%")),
    (("like", s, lit("a!_b"), "!"), col("s") == "a_b"),
    (("like", s, lit("a!%"), None), col("s").starts_with("a!")),  # no escape: ! is a character
    (("not like", s, lit("ab%"), None), col("s").not_starts_with("ab")),
    (("not", ("not like", s, lit("ab%"), None)), col("s").starts_with("ab")),
    (("starts_with", s, lit("x")), col("s").starts_with("x")),
    (("not", ("starts_with", s, lit("x"))), col("s").not_starts_with("x")),
    # LIKE '%text%' as a substring test (and contains() itself)
    (("like", s, lit("%ab%"), None), col("s").contains("ab")),
    (("like", s, lit("%%a b%%"), None), col("s").contains("a b")),
    (("like", s, lit("%a!%b%"), "!"), col("s").contains("a%b")),
    (("like", s, lit("%a!_%"), "!"), col("s").contains("a_")),
    (("like", s, lit("%!%%"), "!"), col("s").contains("%")),
    (("like", s, lit("%%"), None), col("s").starts_with("")),  # binds to s IS NOT NULL
    # NOT LIKE '%' is never TRUE: the negation of the leaf must bind to FALSE, not to s IS NULL.
    (("not like", s, lit("%%"), None), col("s").not_starts_with("")),
    (("not like", s, lit("%ab%"), None), col("s").not_contains("ab")),
    (("not", ("like", s, lit("%ab%"), None)), col("s").not_contains("ab")),
    (("not", ("not like", s, lit("%ab%"), None)), col("s").contains("ab")),
    (("contains", s, lit("x")), col("s").contains("x")),
    (("not", ("contains", s, lit("x"))), col("s").not_contains("x")),
    # contains_term, the word kept as written (binding lower-cases it)
    (("contains_term", s, lit("Word")), ContainsTerm("s", "Word")),
    (("not", ("contains_term", s, lit("x"))), col("s").not_contains_term("x")),
    # null and NaN tests, booleans, constants
    (("is null", a), col("a").is_null()),
    (("not", ("is null", a)), col("a").is_not_null()),
    (("isnan", f), IsNaN("f")),
    (("not", ("isnan", f)), IsNotNaN("f")),
    (flag, col("flag") == True),  # noqa: E712 - a builder, not a comparison
    (("not", flag), col("flag") == False),  # noqa: E712
    (lit(True), AlwaysTrue()),
    (("not", lit(True)), AlwaysFalse()),
    (("and", (">", a, lit(1)), lit(False)), AlwaysFalse()),
]


@pytest.mark.parametrize(("node", "expected"), EXACT, ids=[sql(n) for n, _ in EXACT])
def test_toy_engine_translates(node: Node, expected: Expression) -> None:
    expr, not_used = tr(node)
    assert expr == expected, (sql(node), expr)
    assert not_used == []


UNUSED = [
    ((">", ("abs", a), lit(5)), AlwaysTrue(), ['(abs("a") > 5)']),
    (("not", (">", ("abs", a), lit(5))), AlwaysTrue(), ['(abs("a") > 5)']),  # never FALSE
    (("and", (">", a, lit(1)), ("=", a, ("col", "b"))), col("a") > 1, ['("a" = "b")']),
    (("not", ("and", (">", a, lit(1)), ("abs", a))), AlwaysTrue(), ['abs("a")']),
    (("not", ("or", (">", a, lit(1)), ("abs", a))), col("a") <= 1, ['abs("a")']),
    (("like", s, lit("%x"), None), AlwaysTrue(), ["(\"s\" LIKE '%x')"]),
    (("like", s, lit("a_c%"), None), AlwaysTrue(), ["(\"s\" LIKE 'a_c%')"]),
    (("not", ("like", s, lit("a%b"), None)), AlwaysTrue(), ["(\"s\" LIKE 'a%b')"]),
    (("like", s, lit("ab!"), "!"), AlwaysTrue(), ["(\"s\" LIKE 'ab!' ESCAPE '!')"]),  # trailing escape
    (("like", s, lit(b"ab%"), None), AlwaysTrue(), ["(\"s\" LIKE b'ab%')"]),  # not text
    (("like", s, lit("%a%b%"), None), AlwaysTrue(), ["(\"s\" LIKE '%a%b%')"]),
    (("like", s, lit("%a_%"), None), AlwaysTrue(), ["(\"s\" LIKE '%a_%')"]),
    (("not", ("like", s, lit("%ab"), None)), AlwaysTrue(), ["(\"s\" LIKE '%ab')"]),  # a suffix
    (("contains", s, lit(5)), AlwaysTrue(), ['contains("s", 5)']),
    (("contains", lit("abc"), s), AlwaysTrue(), ["contains('abc', \"s\")"]),
    (("contains_term", s, lit("two words")), AlwaysTrue(), ["contains_term(\"s\", 'two words')"]),
    (("not", ("contains_term", s, lit(""))), AlwaysTrue(), ["contains_term(\"s\", '')"]),
    (lit(5), AlwaysTrue(), ["5"]),  # a constant that is no boolean
    (("in", ("abs", a), lit(1)), AlwaysTrue(), ['(abs("a") IN (1))']),
]


@pytest.mark.parametrize(("node", "expected", "not_used"), UNUSED, ids=[sql(n) for n, *_ in UNUSED])
def test_toy_engine_reports_untranslated_parts(node: Node, expected: Expression, not_used: list[str]) -> None:
    expr, unused = tr(node)
    assert expr == expected, (sql(node), expr)
    assert unused == not_used


# ---------------------------------------------------------------------------------- truth tests

gt5, sx = (">", a, lit(5)), ("=", s, lit("x"))
both = ("and", gt5, sx)
A5, SX = col("a") > 5, col("s") == "x"

TRUTH = [
    (("is null", gt5), IsNull("a")),  # (a > 5) IS NULL: NULL exactly when a is
    (("is", "null", gt5), IsNull("a")),
    (("is not null", gt5), IsNotNull("a")),
    (("is", "true", gt5), A5 & IsNotNull("a")),
    (("is", "false", gt5), (col("a") <= 5) & IsNotNull("a")),
    (("is", "not true", gt5), (col("a") <= 5) | IsNull("a")),
    (("is", "not false", gt5), A5 | IsNull("a")),
    (("is", "true", ("not", gt5)), is_false(A5)),
    (("is null", both), is_unknown(A5 & SX)),
    (("is", "false", both), is_false(A5 & SX)),
    (("is", "not true", ("or", gt5, ("not", sx))), is_not_true(A5 | ~SX)),
    # NOT of a truth test is the opposite test (a truth test is never NULL)
    (("not", ("is", "true", gt5)), is_not_true(A5)),
    (("not", ("is", "not false", both)), is_false(A5 & SX)),
    (("not", ("is null", both)), is_not_unknown(A5 & SX)),
    (("not", ("not", ("is", "false", gt5))), is_false(A5)),
    (("not", ("or", ("is", "true", gt5), ("is null", sx))), is_not_true(A5) & IsNotNull("s")),
    # written as IS [NOT] DISTINCT FROM TRUE, FALSE or NULL
    (("not distinct", gt5, lit(True)), is_true(A5)),
    (("distinct", gt5, lit(True)), is_not_true(A5)),
    (("not distinct", lit(False), both), is_false(A5 & SX)),
    (("distinct", lit(False), gt5), is_not_false(A5)),
    (("not distinct", gt5, NUL), IsNull("a")),
    (("not", ("distinct", both, NUL)), is_unknown(A5 & SX)),
    # a boolean column: IS NULL stays its null test; IS TRUE is a truth test of flag = TRUE
    (("is null", flag), IsNull("flag")),
    (("is", "true", flag), is_true(col("flag") == True)),  # noqa: E712 - a builder
    (("is", "false", flag), is_false(col("flag") == True)),  # noqa: E712
    # the operand is translated exactly: these are never NULL, so never IS NULL
    (("is null", ("not distinct", a, lit(3))), AlwaysFalse()),
    (("is", "not null", ("distinct", a, lit(3))), AlwaysTrue()),
    (("is", "false", ("not distinct", a, lit(3))), (col("a") != 3) | IsNull("a")),
    (("is", "true", ("is null", a)), IsNull("a")),
    (("is", "false", ("is", "null", gt5)), IsNotNull("a")),
    (("is", "true", ("between", a, lit(1), lit(9))), (col("a") >= 1) & (col("a") <= 9) & IsNotNull("a")),
    (("is", "false", lit(True)), AlwaysFalse()),
    (("is", "not false", lit(True)), AlwaysTrue()),
]


@pytest.mark.parametrize(("node", "expected"), TRUTH, ids=[sql(n) for n, _ in TRUTH])
def test_truth_tests(node: Node, expected: Expression) -> None:
    expr, not_used = tr(node)
    assert expr == expected, (sql(node), expr)
    assert not_used == []


# Truth tests of operands that cannot be translated exactly: TRUE (never FALSE), the whole test
# reported, negated or not. A part translated as TRUE, or NULL translated as FALSE (right for a
# WHERE, where neither is ever TRUE), would be wrong under IS FALSE or IS NULL.
TRUTH_UNUSED = [
    ("is", "false", ("and", gt5, (">", ("abs", a), lit(5)))),
    ("is", "null", ("or", gt5, ("abs", a))),
    ("is", "not true", ("and", gt5, ("abs", a))),
    ("is null", ("=", a, NUL)),  # NULL on every row
    ("is", "not null", ("not", ("<", a, NUL))),
    ("is", "false", ("in", a, lit(1), NUL)),  # NULL where a <> 1
    ("is", "true", ("not in", a, lit(1), NUL)),
    ("is", "false", ("between", a, NUL, lit(5))),
    ("is", "not true", ("like", s, NUL, None)),
    ("is", "true", ("starts_with", s, NUL)),
    ("is", "null", ("contains", s, NUL)),
    ("is", "null", NUL),
    ("is", "false", ("=", ("col", "f", "as double"), lit(0.1))),  # FALSE but on the NULL rows
    ("is", "true", ("<>", ("col", "f", "as double"), lit(0.1))),
    ("is", "null", ("in", ("col", "f", "as double"), lit(0.1))),
    ("is", "true", ("isnan", f)),  # isnan(NULL) is FALSE in Spark, NULL in DuckDB
    ("is", "false", ("like", s, lit("%x"), None)),
    ("is", "false", ("is", "null", ("abs", a))),  # an unused inner test: the outer one too
    ("distinct", (">", ("abs", a), lit(1)), lit(False)),
]


@pytest.mark.parametrize("node", TRUTH_UNUSED, ids=[sql(n) for n in TRUTH_UNUSED])
def test_a_truth_test_of_an_untranslatable_operand_is_unused(node: Node) -> None:
    for negated in (False, True):
        expr, not_used = tr(node, negated)
        assert expr == AlwaysTrue(), (sql(node), negated, expr)
        assert not_used == [sql(node)]
        expr, not_used = tr(("and", (">", s, lit("k")), ("not", node) if negated else node))
        assert expr == (col("s") > "k") and not_used == [sql(node)]


def test_truth_test_helpers() -> None:
    assert [truth_kind(v, False) for v in (True, False, NULL, 1, None)] == [
        "true",
        "false",
        "null",
        None,
        None,
    ]
    assert [truth_kind(v, True) for v in (True, False, NULL)] == ["not true", "not false", "not null"]
    nodes = TupleNodes()
    assert is_predicate(nodes.shape(gt5)) and is_predicate(nodes.shape(("is", "true", gt5)))
    assert not is_predicate(nodes.shape(flag)) and not is_predicate(nodes.shape(lit(True)))
    assert not is_predicate(nodes.shape(("abs", a)))


def test_translation_is_the_conjunction_and_reports_each_part_once() -> None:
    roots = [(">", a, lit(1)), ("abs", a), ("=", s, lit("x")), ("abs", a)]
    result = translation(TupleNodes(), roots)
    assert result.expr == (col("a") > 1) & (col("s") == "x")
    assert result.not_used == ('abs("a")',)
    assert translation(TupleNodes(), []).expr == AlwaysTrue()


def test_an_engine_stated_negation_is_used_and_flipped() -> None:
    """An engine may state what NOT of a comparison is; the walker uses it (flipped with the sides)."""

    class Stated(TupleNodes):
        def shape(self, node: Node) -> Shape[Node] | None:
            if node[0] == "<":
                return Comparison(LessThan, node[1], node[2], negation=GreaterThan)  # a wrong rule, visibly
            return super().shape(node)

    assert translate(Stated(), ("not", ("<", a, lit(5)))) == GreaterThan("a", 5)
    assert translate(Stated(), ("not", ("<", lit(5), a))) == LessThan("a", 5)
    assert translate(Stated(), ("<", lit(5), a)) == GreaterThan("a", 5)


def test_float_column_compared_as_double() -> None:
    """A float32 column the engine widens to double: double literals fall between two floats."""
    fd = ("col", "f", "as double")
    below = float(np.nextafter(np.float32(0.1), np.float32(0)))
    above = float(np.float32(0.1))
    assert translate(TupleNodes(), ("=", fd, lit(0.1))) == AlwaysFalse()
    assert translate(TupleNodes(), ("<>", fd, lit(0.1))) == IsNotNull("f")
    assert translate(TupleNodes(), ("<", fd, lit(0.1))) == LessThanOrEqual("f", below)
    assert translate(TupleNodes(), ("not", ("<", fd, lit(0.1)))) == GreaterThanOrEqual("f", above)
    assert translate(TupleNodes(), ("=", fd, lit(0.5))) == EqualTo("f", 0.5)
    assert translate(TupleNodes(), ("in", fd, lit(0.1), lit(0.5))) == EqualTo("f", 0.5)
    assert translate(TupleNodes(), ("=", fd, lit(math.nan))) == EqualTo("f", math.nan)
    assert translate(TupleNodes(), ("distinct", fd, lit(0.1))) == Or(IsNotNull("f"), IsNull("f"))
    assert translate(TupleNodes(), ("starts_with", fd, lit("x"))) == AlwaysTrue()
    assert translate(TupleNodes(), ("contains", fd, lit("x"))) == AlwaysTrue()


def test_the_walker_negation_tables_are_hudi_exprs() -> None:
    for op in _OPS.values():
        negation: Any = op.negation  # a leaf class (typed as the Predicate base)
        assert negation("a", 5) == ~op("a", 5)  # the walker negates by the leaf's declaration
        assert walker._FLIPPED[walker._FLIPPED[op]] is op


def test_the_walker_imports_no_engine() -> None:
    check = (
        "import sys, adapters.translation.walker; "
        "print(sorted({'duckdb', 'pyspark', 'py4j'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------ deep trees

N = 10_000


def test_ten_thousand_terms_and_ten_thousand_nots() -> None:
    wide = ("and", *[("<>", a, lit(i)) for i in range(N)])
    assert len(list(translate(TupleNodes(), wide).leaves())) == N
    deep: Node = ("<>", a, lit(0))
    for i in range(1, N):
        deep = ("or", deep, ("=", a, lit(i)))  # left-deep: 10,000 levels
    expr, not_used = tr(("not", deep))
    assert not_used == [] and len(list(expr.leaves())) == N
    assert expr == And(EqualTo("a", 0), *[NotEqualTo("a", i) for i in range(1, N)])
    nots: Node = (">", ("abs", a), lit(1))
    for _ in range(N):
        nots = ("not", nots)
    assert tr(nots) == (AlwaysTrue(), ['(abs("a") > 1)'])


def test_truth_tests_deep_and_wide() -> None:
    wide = ("is", "false", ("and", *[("<>", a, lit(i)) for i in range(N)]))
    assert tr(wide) == (Or(*[col("a") == i for i in range(N)]) & IsNotNull("a"), [])
    nots: Node = ("is", "null", ("and", gt5, sx))
    for _ in range(N):
        nots = ("not", nots)  # an even number: the test itself
    assert tr(nots) == (is_unknown(A5 & SX), [])
    nested: Node = gt5
    for k in range(300):  # IS tests of IS tests: walked without recursion
        nested = ("is", ["true", "not false", "not null"][k % 3], nested)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        expr, not_used = tr(nested)
    finally:
        sys.setrecursionlimit(old)
    assert not_used == [] and expr == AlwaysTrue()  # ... NOT NULL of a never-NULL test


# ------------------------------------------------------------------- checked by DuckDB, row by row


def _table() -> pa.Table:
    rng = random.Random(11)
    n = 300

    def maybe(value: object) -> object:
        return None if rng.random() < 0.15 else value

    words = ["", "a", "ab", "abc", "a%", "a_b", "b", "é", "a!", "A b", "x-AB", "ba"]
    floats = [0.0, -0.0, 1.5, -2.0, math.nan, math.inf, 2.0]
    return pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "a": pa.array([maybe(rng.randint(-5, 5)) for _ in range(n)], pa.int64()),
            "s": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
            "f": pa.array([maybe(rng.choice(floats)) for _ in range(n)], pa.float64()),
            "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        }
    )


# LIKE patterns and their escape characters (None: no ESCAPE clause, so ! is a plain character).
_PATTERNS = [
    ("a%", None),
    ("ab%%", None),
    ("a!%%", "!"),
    ("a!_b", "!"),
    ("a!%", None),
    ("%b", None),
    ("a", None),
]


def _leaf(rng: random.Random) -> Node:
    op = rng.choice(list(_OPS))
    value = lit(rng.randint(-6, 6))
    word = lit(rng.choice(["a", "ab", "é", ""]))
    pattern = rng.choice(
        [
            ("a%", None),
            ("ab%%", None),
            ("a!%%", "!"),
            ("a!_b", "!"),
            ("%b", None),
            ("a", None),
            ("%b%", None),
            ("%!%%", "!"),
            ("%a!_%", "!"),
            ("%%", None),
        ]
    )
    choices = [
        lambda: (op, a, value),
        lambda: (op, value, a),
        lambda: (op, s, word),
        lambda: (op, f, lit(rng.choice([1.5, -2.0, 0.0, math.nan, math.inf]))),
        lambda: (op, a, NUL),
        lambda: ("in", a, *[lit(rng.randint(-5, 5)) for _ in range(rng.randint(1, 3))]),
        lambda: ("in", a, lit(rng.randint(-5, 5)), NUL),
        lambda: ("not in", a, lit(rng.randint(-5, 5)), rng.choice([NUL, lit(2)])),
        lambda: ("between", a, rng.choice([NUL, lit(rng.randint(-5, 2))]), lit(rng.randint(0, 5))),
        lambda: (rng.choice(["distinct", "not distinct"]), a, rng.choice([NUL, value])),
        lambda: (rng.choice(["distinct", "not distinct"]), value, a),
        lambda: (rng.choice(["is null", "is not null"]), rng.choice([a, s, f])),
        lambda: ("isnan", f),
        lambda: (rng.choice(["like", "not like"]), s, lit(pattern[0]), pattern[1]),
        lambda: ("starts_with", s, word),
        lambda: ("contains", s, word),
        lambda: ("contains_term", s, lit(rng.choice(["a", "AB", "b", "x"]))),
        lambda: rng.choice([flag, lit(True), lit(False), NUL]),
        lambda: (op, ("abs", a), lit(2)),
        lambda: (op, a, ("col", "i")),
    ]
    return rng.choice(choices)()


def _tree(rng: random.Random, depth: int) -> Node:
    if depth == 0 or rng.random() < 0.35:
        return _leaf(rng)
    kind = rng.random()
    if kind < 0.25:
        return ("not", _tree(rng, depth - 1))
    return ("and" if kind < 0.6 else "or", *[_tree(rng, depth - 1) for _ in range(rng.randint(2, 3))])


def test_toy_engine_against_duckdb() -> None:
    table = _table()
    con = duckdb.connect()
    register_macros(con)  # contains_term
    con.register("tbl", table)
    rng = random.Random(20260101)
    exact = 0
    for _ in range(300):
        node = _tree(rng, 3)
        expected = {row[0] for row in con.execute(f"SELECT i FROM tbl WHERE {sql(node)}").fetchall()}
        expr, not_used = tr(node)
        got = set(table.filter(expr.to_pyarrow(table.schema)).column("i").to_pylist())
        assert expected <= got, (sql(node), expr, sorted(expected - got))
        if not not_used:
            exact += 1
            assert got == expected, (sql(node), expr, sorted(got - expected))
    assert exact > 100


_KINDS = ["true", "false", "null", "not true", "not false", "not null"]


def _truth_tree(rng: random.Random, depth: int) -> Node:
    """Trees with truth tests at any level, over the leaves above (NULL constants included)."""
    if depth == 0 or rng.random() < 0.25:
        return _leaf(rng)
    kind = rng.random()
    if kind < 0.3:
        return ("is", rng.choice(_KINDS), _truth_tree(rng, depth - 1))
    if kind < 0.4:
        return (rng.choice(["is null", "is not null"]), _truth_tree(rng, depth - 1))
    if kind < 0.5:
        constant = rng.choice([lit(True), lit(False), NUL])
        operand = _truth_tree(rng, depth - 1)
        sides = (operand, constant) if rng.random() < 0.5 else (constant, operand)
        return (rng.choice(["distinct", "not distinct"]), *sides)
    if kind < 0.65:
        return ("not", _truth_tree(rng, depth - 1))
    return ("and" if kind < 0.8 else "or", *[_truth_tree(rng, depth - 1) for _ in range(rng.randint(2, 3))])


def test_truth_tests_against_duckdb() -> None:
    """Every translation keeps DuckDB's rows, and exactly those when nothing was left unused."""
    table = _table()
    con = duckdb.connect()
    register_macros(con)
    con.register("tbl", table)
    rng = random.Random(20260614)
    exact = tests = 0
    for _ in range(400):
        node = _truth_tree(rng, 4)
        text = sql(node)
        tests += " IS " in text
        expected = {row[0] for row in con.execute(f"SELECT i FROM tbl WHERE {text}").fetchall()}
        expr, not_used = tr(node)
        got = set(table.filter(expr.to_pyarrow(table.schema)).column("i").to_pylist())
        assert expected <= got, (text, expr, sorted(expected - got))
        if not not_used:
            exact += 1
            assert got == expected, (text, expr, sorted(got - expected))
    assert tests > 250 and exact > 120, (tests, exact)
