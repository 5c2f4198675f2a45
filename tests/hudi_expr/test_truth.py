"""``hudi_expr.truth``: ``(p) IS [NOT] TRUE | FALSE | NULL`` as ordinary expressions, exactly.

DuckDB is the oracle: it evaluates ``(p) IS TRUE`` (and the five other tests) of the SQL text of
random predicates ``p`` on a table holding every combination of a few values, NULL and NaN among
them; the rewrite must keep exactly those rows through the pyarrow row filter and through its own
SQL text (on which DuckDB must never say NULL), ``~`` of a rewrite must keep the rows of the
opposite test, and pruning with a rewrite must keep every file holding one of those rows.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hudi_expr as hx
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    Not,
    Or,
    TruthTestError,
    col,
    is_false,
    is_not_false,
    is_not_true,
    is_not_unknown,
    is_true,
    is_unknown,
    to_pyarrow,
    to_sql,
)
from property_tests.checks import case_and_expression, check_sound_and_strict
from property_tests.oracle import evaluate, rows_where
from property_tests.strategies import Case

NAN = math.nan
# The six tests, each with its SQL and its opposite (the test NOT of it is).
TESTS: list[tuple[Callable[[Expression], Expression], str, int]] = [
    (is_true, "IS TRUE", 3),
    (is_false, "IS FALSE", 4),
    (is_unknown, "IS NULL", 5),
    (is_not_true, "IS NOT TRUE", 0),
    (is_not_false, "IS NOT FALSE", 1),
    (is_not_unknown, "IS NOT NULL", 2),
]

SCHEMA = pa.schema([("i", pa.int64()), ("d", pa.float64()), ("s", pa.string())])
VALUES: dict[str, list[Any]] = {
    "i": [None, -1, 0, 1, 2, 5],
    "d": [None, NAN, -math.inf, -0.0, 1.5, math.inf],
    "s": [None, "", "a", "ab", "b c", "é"],
}


def _table() -> tuple[pa.Table, list[list[dict[str, Any]]]]:
    """Every combination of the values, in files by the value of ``i`` and whether ``s`` is NULL:
    statistics tight enough for pruning to happen (files of one ``i``, files of NULL ``s``)."""
    rows = [dict(zip(VALUES, combo, strict=True)) for combo in itertools.product(*VALUES.values())]
    keys = sorted({(VALUES["i"].index(r["i"]), r["s"] is None) for r in rows})
    files = [[r for r in rows if (VALUES["i"].index(r["i"]), r["s"] is None) == key] for key in keys]
    flat = [dict(r, __file=f) for f, rows_of in enumerate(files) for r in rows_of]
    table = pa.Table.from_pylist(flat, schema=SCHEMA.append(pa.field("__file", pa.int32())))
    return table.append_column("__row", pa.array(range(len(flat)), pa.int64())), files


TABLE, FILES = _table()


def _stats(files: list[list[dict[str, Any]]]) -> hx.FileStats:
    def nan(v: Any) -> bool:
        return isinstance(v, float) and math.isnan(v)

    records = []
    for f, rows in enumerate(files):
        stats = {}
        for name in VALUES:
            values = [r[name] for r in rows]
            present = [v for v in values if v is not None and not nan(v)]
            stats[name] = {
                "min": min(present) if present else None,
                "max": max(present) if present else None,
                "null_count": sum(v is None for v in values),
                "nan_count": sum(nan(v) for v in values),
            }
        records.append({"file": f"f{f}", "row_count": len(rows), "stats": stats})
    return hx.FileStats.from_pylist(records, SCHEMA)


STATS = _stats(FILES)


def kept_rows(expr: Expression, schema: pa.Schema = SCHEMA, table: pa.Table = TABLE) -> set[int]:
    return set(table.filter(to_pyarrow(expr, schema)).column("__row").to_pylist())


# ------------------------------------------------------------------------------------ the rules


def test_a_test_of_one_column_is_null_exactly_when_the_column_is() -> None:
    a = col("a")
    assert is_unknown(a > 5) == IsNull("a")
    assert is_not_unknown(a > 5) == IsNotNull("a")
    assert is_true(a > 5) == And(a > 5, IsNotNull("a"))
    assert is_false(a > 5) == And(a <= 5, IsNotNull("a"))
    assert is_not_true(a > 5) == Or(a <= 5, IsNull("a"))
    assert is_not_false(a > 5) == Or(a > 5, IsNull("a"))
    assert is_unknown(a.isin([1, 2])) == is_unknown(a.notin([1, 2])) == IsNull("a")
    assert is_unknown(col("s").starts_with("x")) == IsNull("s")
    assert is_unknown(col("s").contains("x")) == IsNull("s")
    assert is_unknown(hx.contains_term("s", "x")) == IsNull("s")
    # Any AND/OR/NOT of tests of one column: all NULL or none.
    between = (a > 1) & (a < 5)
    assert is_unknown(between) == IsNull("a")
    assert is_unknown(Not(between | (a == 9))) == IsNull("a")
    assert is_true(between) == And(a > 1, a < 5, IsNotNull("a"))
    assert is_false(between) == And((a <= 1) | (a >= 5), IsNotNull("a"))


def test_and_is_null_when_one_is_null_and_the_other_not_false() -> None:
    p, q = col("a") > 5, col("b") < 3
    assert is_unknown(p & q) == And(
        IsNull("a") | IsNull("b"), (col("a") > 5) | IsNull("a"), (col("b") < 3) | IsNull("b")
    )
    assert is_unknown(p | q) == And(
        IsNull("a") | IsNull("b"), (col("a") <= 5) | IsNull("a"), (col("b") >= 3) | IsNull("b")
    )
    # NOT keeps NULL: (NOT (p AND q)) IS NULL is (p AND q) IS NULL; TRUE and FALSE swap.
    assert is_unknown(Not(p & q)) == is_unknown(p & q)
    assert is_true(Not(p & q)) == is_false(p & q)
    assert is_not_false(Not(p & q)) == is_not_true(p & q)
    # Tests of one column in a mixed junction are gathered: a's NULL rows are written once.
    mixed = is_unknown((col("a") > 1) & (col("a") < 5) & q)
    assert sum(1 for leaf in mixed.leaves() if leaf == IsNull("a")) == 2  # the pick and the guard


def test_null_tests_and_constants_are_never_null() -> None:
    a_null = col("a").is_null()
    assert is_unknown(a_null) == AlwaysFalse()
    assert is_not_unknown(a_null) == AlwaysTrue()
    assert is_true(a_null) == a_null and is_false(a_null) == IsNotNull("a")
    assert is_not_true(a_null) == IsNotNull("a") and is_not_false(a_null) == a_null
    # (a IS NULL AND b > 3) is NULL when a is NULL and b is.
    got = is_unknown(a_null & (col("b") > 3))
    assert kept_rows_of(got, {"a": [None, 1], "b": [None, 1, 5]}) == [(None, None)]
    for constant, truth in ((AlwaysTrue(), True), (AlwaysFalse(), False)):
        assert is_true(constant) == constant and is_not_false(constant) == constant
        assert is_false(constant) == ~constant and is_not_true(constant) == ~constant
        assert is_unknown(constant) == AlwaysFalse() and is_not_unknown(constant) == AlwaysTrue()
        assert isinstance(is_true(constant), AlwaysTrue) == truth


def test_a_null_test_beside_tests_of_its_column_decides_their_null_rows() -> None:
    a, b = col("a"), col("b")
    # a = 3 AND a IS NOT NULL: FALSE where a is NULL, so never NULL (IS NOT DISTINCT FROM 3).
    guarded = (a == 3) & a.is_not_null()
    assert is_unknown(guarded) == AlwaysFalse() and is_not_unknown(guarded) == AlwaysTrue()
    assert is_true(guarded) == And(a == 3, IsNotNull("a"))
    assert is_false(guarded) == Or(a != 3, IsNull("a"))
    # a = 3 AND a IS NULL: NULL where a is NULL, FALSE elsewhere.
    assert is_true((a == 3) & a.is_null()) == AlwaysFalse()
    assert is_unknown((a == 3) & a.is_null()) == IsNull("a")
    assert is_false((a == 3) & a.is_null()) == IsNotNull("a")
    # OR: a = 3 OR a IS NULL is never NULL; a = 3 OR a IS NOT NULL is TRUE or NULL.
    assert is_unknown((a == 3) | a.is_null()) == AlwaysFalse()
    assert is_true((a == 3) | a.is_null()) == Or(a == 3, IsNull("a"))
    assert is_true((a == 3) | a.is_not_null()) == IsNotNull("a")
    assert is_unknown((a == 3) | a.is_not_null()) == IsNull("a")
    assert is_false((a == 3) | a.is_not_null()) == AlwaysFalse()
    # Both null tests: FALSE (OR: TRUE) whatever the rest of the column's tests.
    assert is_true(a.is_null() & (a > 1) & a.is_not_null() & (b > 2)) == AlwaysFalse()
    assert is_unknown(a.is_null() | (a > 1) | a.is_not_null() | (b > 2)) == AlwaysFalse()
    # Beside other columns, the column's group counts as one operand.
    mixed = (a == 3) & a.is_not_null() & (b > 2)  # NULL where b is, and a = 3
    assert is_unknown(mixed) == And(IsNull("b"), a == 3, IsNotNull("a"), (b > 2) | IsNull("b"))


def kept_rows_of(expr: Expression, values: dict[str, list[Any]]) -> list[tuple[Any, ...]]:
    """The value combinations (int64 columns) on which ``expr`` is TRUE, by the row filter."""
    schema = pa.schema([(name, pa.int64()) for name in values])
    rows = [dict(zip(values, combo, strict=True)) for combo in itertools.product(*values.values())]
    kept = pa.Table.from_pylist(rows, schema=schema).filter(to_pyarrow(expr, schema))
    return [tuple(r.values()) for r in kept.to_pylist()]


def test_isnan_is_refused() -> None:
    d = col("d")
    for expr in (d.is_nan(), d.is_not_nan(), (col("a") > 1) & Not(d.is_nan() | (d > 0))):
        for test, _, _ in TESTS:
            with pytest.raises(TruthTestError, match="isnan"):
                test(expr)
    assert issubclass(TruthTestError, hx.HudiExprError) and issubclass(TruthTestError, ValueError)


def test_bound_predicates_are_refused() -> None:
    # int8 < 1000 binds to i8 IS NOT NULL, which is never NULL: its NULL rows are lost.
    schema = pa.schema([("i8", pa.int8())])
    bound = hx.bind(col("i8") < 1000, schema)
    with pytest.raises(TruthTestError, match="bound"):
        is_unknown(bound)
    # The unbound rewrite binds correctly.
    assert hx.bind(is_unknown(col("i8") < 1000), schema) == hx.bind(IsNull("i8"), schema)
    assert hx.bind(is_false(col("i8") < 1000), schema) == AlwaysFalse()


def test_shared_subtrees_and_ten_thousand_deep_trees() -> None:
    n = 10_000
    chain = col("a") != 0
    for k in range(1, n):  # left-deep: 10,000 levels, one column
        chain = chain & (col("a") != k)
    mixed = col("a") > 0
    for k in range(1, n):  # alternating AND/OR over several columns
        mixed = (mixed & (col(f"c{k % 5}") == k)) if k % 2 else (mixed | (col(f"c{k % 5}") == k))
    with low_recursion_limit():
        assert is_unknown(chain) == IsNull("a")
        assert is_true(chain) == And(chain, IsNotNull("a"))
        for test, _, _ in TESTS:
            out = test(mixed)
            assert sum(1 for _ in out.leaves()) <= 4 * n  # linear in the tree
    shared = (col("a") > 1) | (col("b") > 2)
    assert is_true(shared & Not(shared)) == is_true(And(shared, Not(shared)))


@contextmanager
def low_recursion_limit(limit: int = 1000) -> Iterator[None]:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def test_pruning_with_the_tests() -> None:
    # Files hold one value of i (NULL in one pair of files); i IS NULL files are kept by IS NULL.
    i_of_file = [VALUES["i"][VALUES["i"].index(rows[0]["i"])] for rows in FILES]
    might = hx.might_match(is_unknown(col("i") > 1), STATS).to_pylist()
    assert might == [v is None for v in i_of_file]
    might = hx.might_match(is_true(col("i") > 1), STATS).to_pylist()
    assert might == [v is not None and v > 1 for v in i_of_file]
    might = hx.might_match(is_not_true(col("i") > 1), STATS).to_pylist()
    assert might == [v is None or v <= 1 for v in i_of_file]
    # (i > 1 AND s = 'a') IS FALSE: files with i <= 1 (or a non-NULL s) may hold one.
    might = hx.might_match(is_false((col("i") > 1) & (col("s") == "a")), STATS).to_pylist()
    s_null = [all(r["s"] is None for r in rows) for rows in FILES]
    assert might == [(v is not None and v <= 1) or not sn for v, sn in zip(i_of_file, s_null, strict=True)]


# --------------------------------------------------------------------------- DuckDB as the oracle

I_LITERALS = [-1, 0, 1, 3, 5]
D_LITERALS = [NAN, -0.0, 1.5, math.inf, -math.inf, 0.5]
S_LITERALS = ["", "a", "ab", "b", "é"]


def _leaves() -> st.SearchStrategy[Expression]:
    ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])

    def compare(name: str, literals: list[Any]) -> st.SearchStrategy[Expression]:
        return st.builds(_compare, st.just(name), ops, st.sampled_from(literals))

    s = col("s")
    return st.one_of(
        compare("i", I_LITERALS),
        compare("d", D_LITERALS),
        compare("s", S_LITERALS),
        st.lists(st.sampled_from(I_LITERALS), min_size=2, max_size=3, unique=True).map(col("i").isin),
        st.lists(st.sampled_from(I_LITERALS), min_size=2, max_size=3, unique=True).map(col("i").notin),
        st.lists(st.sampled_from(S_LITERALS), min_size=2, max_size=3, unique=True).map(s.isin),
        st.sampled_from(["i", "d", "s"]).map(lambda n: col(n).is_null()),
        st.sampled_from(["i", "d", "s"]).map(lambda n: col(n).is_not_null()),
        st.sampled_from(["", "a", "é", "b "]).map(s.starts_with),
        st.sampled_from(["", "a", "b"]).map(s.not_starts_with),
        st.sampled_from(["b", " "]).map(s.contains),
        st.sampled_from(["b", "c", "ab"]).map(lambda w: hx.contains_term("s", w)),
        st.sampled_from([AlwaysTrue(), AlwaysFalse()]),
    )


def _compare(name: str, op: str, value: Any) -> Expression:
    c = col(name)
    return {
        "==": lambda: c == value,
        "!=": lambda: c != value,
        "<": lambda: c < value,
        "<=": lambda: c <= value,
        ">": lambda: c > value,
        ">=": lambda: c >= value,
    }[op]()


def _trees() -> st.SearchStrategy[Expression]:
    def extend(children: st.SearchStrategy[Expression]) -> st.SearchStrategy[Expression]:
        ops = st.lists(children, min_size=2, max_size=3)
        return st.one_of(ops.map(lambda o: And(*o)), ops.map(lambda o: Or(*o)), children.map(Not))

    return st.recursive(_leaves(), extend, max_leaves=8)


def check_tests(
    expr: Expression, table: pa.Table, schema: pa.Schema, stats: hx.FileStats, num_files: int
) -> list[set[int]]:
    """Every test of ``expr`` against DuckDB (see the module docstring); returns the rows of each."""
    sql = to_sql(expr)
    rewrites = [test(expr) for test, _, _ in TESTS]
    texts = [f"({sql}) {words}" for _, words, _ in TESTS] + [to_sql(r) for r in rewrites]
    files, truths = evaluate(table, texts)
    chosen = []
    for k, (rewrite, (_, words, opposite)) in enumerate(zip(rewrites, TESTS, strict=True)):
        context = f"({sql}) {words}\nrewritten: {rewrite}"
        oracle, own_sql = truths[k], truths[len(TESTS) + k]
        assert None not in oracle and None not in own_sql, context  # a truth test is never NULL
        rows = rows_where(oracle)
        assert rows_where(own_sql) == rows, context
        assert kept_rows(rewrite, schema, table) == rows, context
        # Never NULL, so ~ is exact: NOT of a test keeps the rows of its opposite test.
        assert kept_rows(~rewrite, schema, table) == rows_where(truths[opposite]), context
        check_sound_and_strict(stats, rewrite, files, oracle, num_files)
        chosen.append(rows)
    # Each row is TRUE, FALSE or NULL: exactly one of the first three tests.
    assert chosen[0] | chosen[1] | chosen[2] == set(range(table.num_rows))
    assert not (chosen[0] & chosen[1] or chosen[0] & chosen[2] or chosen[1] & chosen[2])
    return chosen


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=_trees())
def test_the_six_tests_select_duckdbs_rows(expr: Expression) -> None:
    check_tests(expr, TABLE, SCHEMA, STATS, len(FILES))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(example=case_and_expression())
def test_the_six_tests_on_the_property_suites_tables(example: tuple[Case, Expression]) -> None:
    """Random schemas (every type, structs), literals of other types, degraded statistics."""
    case, expr = example
    assume(not any(isinstance(leaf, (IsNaN, IsNotNaN)) for leaf in expr.leaves()))
    check_tests(expr, case.table, case.schema, case.stats, case.num_files)


def test_examples_with_nan_and_null() -> None:
    d, s, i = col("d"), col("s"), col("i")
    for expr in (
        d == NAN,
        d != NAN,
        d > 1.0,
        Not((d < 0.0) | i.isin([1, 2])),
        (s.starts_with("a") & (i > 0)) | d.is_null(),
        (i != 0) | (s != "a") | (d == -0.0),
        s.notin(["", "a"]) & Not(i.notin([0, 5])),
        # An operand mixing columns: its NULL rows are written as NOT TRUE (NOT FALSE) inside.
        (i > 0) & ((d > 0.0) | (s == "a")),
        (i > 0) | ((d > 0.0) & (s == "a")),
        Not((i.is_null() | (d < 1.0)) & ((s != "a") | (i == 5))),
        # null tests beside tests of their column
        ((i == 1) & i.is_not_null()) | (s > "a"),
        ((i == 1) & i.is_null()) | d.is_null(),
        Not(((i > 0) | i.is_null()) & ((s == "a") | s.is_not_null() | (d >= 1.5))),
        (i.is_null() & (i > 1) & i.is_not_null()) | (s == "b"),
    ):
        check_tests(expr, TABLE, SCHEMA, STATS, len(FILES))
