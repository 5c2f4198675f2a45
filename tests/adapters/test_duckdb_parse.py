"""``adapters.duckdb.parse_predicate``: SQL text through DuckDB's parser into ``hudi_expr`` trees."""

from __future__ import annotations

import datetime as dt
import math
import random
import re
from decimal import Decimal

import duckdb
import pyarrow as pa
import pytest

from adapters.duckdb import (
    InvalidPredicateError,
    SqlParseError,
    parse_expression,
    parse_predicate,
    register_macros,
    translate_expression,
    translate_sql,
)
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    AmbiguousColumnError,
    And,
    BindError,
    EqualTo,
    Expression,
    FileStats,
    GreaterThan,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    Or,
    Reference,
    col,
    is_false,
    is_not_false,
    is_not_true,
    is_not_unknown,
    is_true,
    is_unknown,
    might_match,
)
from hudi_expr.expressions import Applied
from hudi_expr.transforms import Cast, Year

UTC = dt.UTC


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("a > 5", col("a") > 5),
        ("5 < a", col("a") > 5),
        ("5 >= a", col("a") <= 5),
        ("a = 1 AND b <> 2", (col("a") == 1) & (col("b") != 2)),
        ("a != 2", col("a") != 2),
        ("a < 1 OR (b <= 2 AND c >= 3)", (col("a") < 1) | ((col("b") <= 2) & (col("c") >= 3))),
        ("NOT (a > 5)", col("a") <= 5),
        ("NOT (a > 5 OR b = 1)", (col("a") <= 5) & (col("b") != 1)),
        ("NOT NOT (a > 5)", col("a") > 5),
        ("a IN (1, 2, 3)", col("a").isin([1, 2, 3])),
        ("a NOT IN (1, 2)", col("a").notin([1, 2])),
        ("NOT (a NOT IN (1, 2))", col("a").isin([1, 2])),
        ("a BETWEEN 1 AND 9", (col("a") >= 1) & (col("a") <= 9)),
        ("a NOT BETWEEN 1 AND 9", (col("a") < 1) | (col("a") > 9)),
        ("a IS NULL", col("a").is_null()),
        ("a IS NOT NULL", col("a").is_not_null()),
        ("NOT (a IS NULL)", col("a").is_not_null()),
        ("s LIKE 'ab%'", col("s").starts_with("ab")),
        ("s LIKE 'ab%%'", col("s").starts_with("ab")),
        ("s LIKE 'abc'", col("s") == "abc"),
        ("s LIKE '%'", col("s").starts_with("")),  # binds to s IS NOT NULL
        ("s NOT LIKE '%'", col("s").not_starts_with("")),  # binds to FALSE (never TRUE)
        ("s NOT LIKE 'ab%'", col("s").not_starts_with("ab")),
        ("NOT (s NOT LIKE 'ab%')", col("s").starts_with("ab")),
        ("starts_with(s, 'x')", col("s").starts_with("x")),
        ("prefix(s, 'x')", col("s").starts_with("x")),
        ("NOT starts_with(s, 'x')", col("s").not_starts_with("x")),
        ("s LIKE '%ab%'", col("s").contains("ab")),
        ("s LIKE '%%a''b%'", col("s").contains("a'b")),
        ("s NOT LIKE '%ab%'", col("s").not_contains("ab")),
        ("NOT (s LIKE '%ab%')", col("s").not_contains("ab")),
        ("contains(s, 'x')", col("s").contains("x")),
        ("NOT contains(s, 'x')", col("s").not_contains("x")),
        ("contains(s, NULL)", AlwaysFalse()),
        ("contains_term(s, 'Word')", col("s").contains_term("Word")),
        ("NOT contains_term(s, 'été')", col("s").not_contains_term("été")),
        ("contains_term(s, NULL)", AlwaysFalse()),
        ("isnan(f)", IsNaN("f")),
        ("NOT isnan(f)", IsNotNaN("f")),
        ("a IS NOT DISTINCT FROM 3", col("a") == 3),
        ("a IS DISTINCT FROM 3", (col("a") != 3) | col("a").is_null()),
        ("a IS DISTINCT FROM NULL", col("a").is_not_null()),
        ("flag", col("flag") == True),  # noqa: E712 - a builder, not a comparison
        ("NOT flag", col("flag") == False),  # noqa: E712
        ("TRUE", AlwaysTrue()),
        ("NOT TRUE", AlwaysFalse()),
        ("a > 1 AND FALSE", AlwaysFalse()),
        # literals
        ("a = -5", col("a") == -5),
        ("a = -(5)", col("a") == -5),
        ("a = -CAST(5 AS INTEGER)", col("a") == -5),
        ("a = 1_000", col("a") == 1000),
        ("a = 99999999999999999999", col("a") == 99999999999999999999),
        ("a = -99999999999999999999", col("a") == -99999999999999999999),
        ("a = 1.50", col("a") == Decimal("1.50")),
        ("a = -1.5", col("a") == Decimal("-1.5")),
        ("a = CAST(1.55 AS DECIMAL(3, 1))", col("a") == Decimal("1.6")),
        ("f = 'NaN'::DOUBLE", col("f") == math.nan),
        ("f < CAST('Infinity' AS DOUBLE)", col("f") < math.inf),
        ("f > CAST('-Infinity' AS DOUBLE)", col("f") > -math.inf),
        ("s = 'it''s'", col("s") == "it's"),
        ("s = 'é'", col("s") == "é"),
        ("b = true", col("b") == True),  # noqa: E712
        ("x = 'ab'::BLOB", col("x") == b"ab"),
        ("d = DATE '2024-02-29'", col("d") == dt.date(2024, 2, 29)),
        ("d = '2024-02-29'::DATE", col("d") == dt.date(2024, 2, 29)),
        ("t = TIMESTAMP '2024-01-02 03:04:05.123456'", col("t") == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)),
        (
            "t = TIMESTAMPTZ '2024-01-02 03:04:05+02'",
            col("t") == dt.datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC),
        ),
        (
            "t = TIMESTAMP WITH TIME ZONE '2024-01-02 03:04:05'",
            col("t") == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        ),
        (
            "t = TIMESTAMP_NS '2024-01-01 00:00:00.000000001'",
            col("t") == pa.scalar(1704067200000000001, pa.timestamp("ns")),
        ),
        # NULL constants: never TRUE, negated or not
        ("a = NULL", AlwaysFalse()),
        ("NOT (a = NULL)", AlwaysFalse()),
        ("a <> CAST(NULL AS INTEGER)", AlwaysFalse()),
        ("a IN (1, NULL)", col("a") == 1),
        ("a IN (NULL)", AlwaysFalse()),
        ("a NOT IN (1, NULL)", AlwaysFalse()),
        ("NOT (a IN (1, NULL))", AlwaysFalse()),
        ("a BETWEEN NULL AND 5", AlwaysFalse()),
        ("a NOT BETWEEN NULL AND 5", col("a") > 5),
        ("s LIKE NULL", AlwaysFalse()),
        ("NULL", AlwaysFalse()),
        ("NOT NULL", AlwaysFalse()),
        ("a = 1 OR b = NULL", col("a") == 1),
        # names
        ('"weird col" = 1', col("weird col") == 1),
        ("s.x > 1", col("s.x") > 1),
        ("s.x.y IS NULL", col("s.x.y").is_null()),
        ("t.a > 1", col("t.a") > 1),  # no table aliases given: a struct path
    ],
)
def test_translates(sql: str, expected: Expression) -> None:
    translation = translate_sql(sql)
    assert translation.expr == expected, (sql, translation.expr, expected)
    assert translation.not_used == ()


A5 = col("a") > 5
A5_B3 = (col("a") > 5) & (col("b") < 3)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # (p) IS NULL of a predicate is a truth test; of a column it stays the column's null test
        ("(a > 5) IS NULL", IsNull("a")),
        ("(a > 5) IS UNKNOWN", IsNull("a")),
        ("(a > 5) IS NOT NULL", IsNotNull("a")),
        ("(a > 5 AND b < 3) IS NULL", is_unknown(A5_B3)),
        ("(a > 5 OR b < 3) IS NOT UNKNOWN", is_not_unknown(A5 | (col("b") < 3))),
        ("flag IS NULL", IsNull("flag")),
        ("year(d) IS NULL", IsNull(Applied(Year(), Reference("d")))),
        # IS [NOT] TRUE | FALSE: CAST(p AS BOOLEAN) IS [NOT] DISTINCT FROM TRUE | FALSE to DuckDB
        ("(a > 5) IS TRUE", A5 & IsNotNull("a")),
        ("(a > 5) IS FALSE", (col("a") <= 5) & IsNotNull("a")),
        ("(a > 5) IS NOT TRUE", (col("a") <= 5) | IsNull("a")),
        ("(a > 5) IS NOT FALSE", A5 | IsNull("a")),
        ("(a > 5 AND b < 3) IS FALSE", is_false(A5_B3)),
        ("(a > 5 AND NOT b < 3) IS NOT FALSE", is_not_false(A5 & (col("b") >= 3))),
        ("(s LIKE 'x%') IS NOT TRUE", is_not_true(col("s").starts_with("x"))),
        ("(year(d) > 2020) IS FALSE", is_false(GreaterThan(Applied(Year(), Reference("d")), 2020))),
        ("flag IS TRUE", is_true(col("flag") == True)),  # noqa: E712 - a builder
        ("flag IS NOT FALSE", is_not_false(col("flag") == True)),  # noqa: E712
        ("(a > 5) IS DISTINCT FROM TRUE", is_not_true(A5)),
        ("FALSE IS NOT DISTINCT FROM (a > 5)", is_false(A5)),
        ("(a > 5) IS NOT DISTINCT FROM NULL", IsNull("a")),
        ("(a > 5) IS DISTINCT FROM CAST(NULL AS BOOLEAN)", IsNotNull("a")),
        # NOT of a truth test is the opposite test
        ("NOT ((a > 5) IS TRUE)", is_not_true(A5)),
        ("NOT ((a > 5 AND b < 3) IS NULL)", is_not_unknown(A5_B3)),
        ("NOT ((a > 5) IS NOT FALSE) OR b = 1", is_false(A5) | (col("b") == 1)),
        ("(NOT (a > 5 AND b < 3)) IS TRUE", is_false(A5_B3)),
        # tests of tests, and operands that are never NULL
        ("((a > 5) IS NULL) IS FALSE", IsNotNull("a")),
        ("(a IS NOT DISTINCT FROM 3) IS NULL", AlwaysFalse()),
        ("(a IS NOT DISTINCT FROM 3) IS FALSE", (col("a") != 3) | IsNull("a")),
        ("(a IS NULL OR b > 1) IS UNKNOWN", is_unknown(col("a").is_null() | (col("b") > 1))),
    ],
)
def test_truth_tests(sql: str, expected: Expression) -> None:
    translation = translate_sql(sql)
    assert translation.expr == expected, (sql, translation.expr, expected)
    assert translation.not_used == ()


@pytest.mark.parametrize(
    "sql",
    [
        "(a > 5 AND abs(b) > 1) IS FALSE",  # TRUE for abs(b) > 1 would be wrong under IS FALSE
        "(a > 5 OR a % 7 = 1) IS NULL",
        "(a = NULL) IS NULL",  # NULL on every row, where a WHERE reads it as FALSE
        "(a IN (1, NULL)) IS FALSE",  # NULL where a <> 1
        "(a NOT IN (1, NULL)) IS NOT NULL",
        "(a BETWEEN NULL AND 5) IS NOT TRUE",
        "(s LIKE NULL) IS NULL",
        "isnan(f) IS TRUE",  # isnan(NULL): FALSE in Spark, NULL in DuckDB
        "(s LIKE '%x') IS NOT FALSE",
        "(a + 1) IS TRUE",
        "(a = b) IS NOT NULL",
        "((abs(a) > 1) IS NULL) IS FALSE",
    ],
)
def test_a_truth_test_of_an_untranslatable_operand_is_unused(sql: str) -> None:
    for text in (sql, f"NOT ({sql})"):
        translation = translate_sql(text)
        assert translation.expr == AlwaysTrue(), (text, translation.expr)  # never FALSE
        assert translation.not_used == (sql,)  # the whole test, its opening parenthesis too
    translation = translate_sql(f"c = 1 AND {sql}")
    assert translation.expr == (col("c") == 1) and translation.not_used == (sql,)


def test_table_aliases_drop_the_qualifier() -> None:
    expr = parse_predicate("t.a > 1 AND T.b = 2 AND s.x = 3", table_aliases={"t"})
    assert expr == (col("a") > 1) & (col("b") == 2) & (col("s.x") == 3)
    assert parse_predicate("5 < t.s.x", table_aliases=["t"]) == (col("s.x") > 5)
    assert parse_predicate("tbl.a > 1", table_aliases="tbl") == (col("a") > 1)


def test_large_in_list() -> None:
    sql = "a IN (" + ", ".join(str(i) for i in range(20_000)) + ")"
    assert parse_predicate(sql) == col("a").isin(range(20_000))


@pytest.mark.parametrize(
    ("sql", "expected", "not_used"),
    [
        ("abs(a) > 5", AlwaysTrue(), ("abs(a) > 5",)),
        ("NOT (abs(a) > 5)", AlwaysTrue(), ("abs(a) > 5",)),
        ("a % 7 > 5", AlwaysTrue(), ("a % 7 > 5",)),
        ("a > 1 AND a % 7 > 5", col("a") > 1, ("a % 7 > 5",)),
        ("NOT (a > 1 AND a % 7 > 5)", AlwaysTrue(), ("a % 7 > 5",)),
        ("NOT (a > 1 OR a % 7 > 5)", col("a") <= 1, ("a % 7 > 5",)),
        ("a > 1 OR a % 7 > 5", AlwaysTrue(), ("a % 7 > 5",)),
        ("a = (SELECT 1)", AlwaysTrue(), ("a = (SELECT 1)",)),
        ("a IN (SELECT 1)", AlwaysTrue(), ("a IN (SELECT 1)",)),
        ("EXISTS (SELECT 1)", AlwaysTrue(), ("EXISTS (SELECT 1)",)),
        ("s LIKE '%x'", AlwaysTrue(), ("s LIKE '%x'",)),
        ("s LIKE 'a_c%'", AlwaysTrue(), ("s LIKE 'a_c%'",)),
        ("s LIKE '%a%c%'", AlwaysTrue(), ("s LIKE '%a%c%'",)),
        ("contains([1, 2], a)", AlwaysTrue(), ("contains([1, 2], a)",)),
        ("contains(s, 5)", AlwaysTrue(), ("contains(s, 5)",)),
        ("contains_term(s, 'two words')", AlwaysTrue(), ("contains_term(s, 'two words')",)),
        ("NOT contains_term(s, '')", AlwaysTrue(), ("contains_term(s, '')",)),
        ("NOT (s NOT LIKE '%x')", AlwaysTrue(), ("s NOT LIKE '%x'",)),
        ("s ILIKE 'x%'", AlwaysTrue(), ("s ILIKE 'x%'",)),
        ("s LIKE 'x%' ESCAPE '!'", AlwaysTrue(), ("s LIKE 'x%' ESCAPE '!'",)),
        ("a = b", AlwaysTrue(), ("a = b",)),
        ("a > random()", AlwaysTrue(), ("a > random()",)),
        ("a = ?", AlwaysTrue(), ("a = ?",)),
        (
            "CASE WHEN a > 1 THEN true ELSE false END",
            AlwaysTrue(),
            ("CASE WHEN a > 1 THEN true ELSE false END",),
        ),
        ("a::VARCHAR = '1'", AlwaysTrue(), ("a::VARCHAR = '1'",)),
        ("a = INTERVAL 1 DAY", AlwaysTrue(), ("a = INTERVAL 1 DAY",)),
        ("s = 'é' AND lower(s) = 'x'", col("s") == "é", ("lower(s) = 'x'",)),
    ],
)
def test_untranslatable_parts_become_true(sql: str, expected: Expression, not_used: tuple[str, ...]) -> None:
    translation = translate_sql(sql)
    assert translation.expr == expected, (sql, translation.expr)
    assert translation.not_used == not_used


@pytest.mark.parametrize(
    "sql", ["a >", "a > 1 AND", "(a > 1", "a > 1 ORDER BY b", "a > 1; SELECT 1", "", "  "]
)
def test_syntax_errors_raise(sql: str) -> None:
    with pytest.raises(SqlParseError):
        parse_predicate(sql)
    assert issubclass(SqlParseError, ValueError)


def test_syntax_error_names_the_problem() -> None:
    with pytest.raises(SqlParseError, match="syntax error"):
        parse_predicate("a > > 1")


def test_long_conjunction_does_not_recurse() -> None:
    sql = " AND ".join(f"a <> {i}" for i in range(3000))
    expr = parse_predicate(sql)
    assert len(list(expr.leaves())) == 3000


def test_duckdb_expression_objects() -> None:
    c, k = duckdb.ColumnExpression, duckdb.ConstantExpression
    expr = ((c("a") > 5) & ~c("s").isin(k("x"), k("y"))) | c("b").isnull()
    assert parse_expression(expr) == ((col("a") > 5) & col("s").notin(["x", "y"])) | col("b").is_null()
    assert parse_expression(k(2) < c("a")) == (col("a") > 2)
    assert parse_expression(c("d") == k(dt.date(2024, 1, 2))) == (col("d") == dt.date(2024, 1, 2))
    assert parse_expression(c("x") == k(1.5)) == AlwaysTrue()  # a DOUBLE: the column type decides
    assert parse_expression(c("x") == k(1.5), schema=pa.schema([("x", pa.float64())])) == (col("x") == 1.5)
    assert translate_expression(duckdb.FunctionExpression("abs", c("a")) > k(1)).expr == AlwaysTrue()
    with pytest.raises(TypeError):
        parse_expression("a > 1")  # type: ignore[arg-type]


# ------------------------------------------------------------------ differential check against DuckDB


def _oracle_table() -> pa.Table:
    rng = random.Random(7)
    n = 300

    def maybe(value: object) -> object:
        return None if rng.random() < 0.15 else value

    floats = [0.0, -0.0, 1.5, -2.0, 3.25, math.nan, math.inf, -math.inf, 2.0]
    words = ["", "a", "ab", "abc", "b", "ba", "é", "zz", "a%", "AB-a", "Zz é"]
    return pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "a": pa.array([maybe(rng.randint(-5, 5)) for _ in range(n)], pa.int64()),
            "f": pa.array([maybe(rng.choice(floats)) for _ in range(n)], pa.float64()),
            "s": pa.array([maybe(rng.choice(words)) for _ in range(n)], pa.string()),
            "d": pa.array([maybe(dt.date(2024, 1, rng.randint(1, 9))) for _ in range(n)], pa.date32()),
            "m": pa.array([maybe(Decimal(rng.randint(-30, 30)) / 10) for _ in range(n)], pa.decimal128(5, 1)),
            "flag": pa.array([maybe(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
            "ts": pa.array(
                [maybe(dt.datetime(2024, 1, 3, rng.randint(0, 5), tzinfo=UTC)) for _ in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "tn": pa.array(
                [maybe(dt.datetime(2024, 1, 3, rng.randint(0, 5))) for _ in range(n)], pa.timestamp("us")
            ),
            "st": pa.array(
                [maybe({"x": maybe(rng.randint(0, 4))}) for _ in range(n)], pa.struct([("x", pa.int64())])
            ),
        }
    )


_OPS = ["=", "<>", "<", "<=", ">", ">="]
_NAN = "CAST('NaN' AS DOUBLE)"
_FLOATS = ["1.5", "-2", "0", "'NaN'::DOUBLE", "CAST('Infinity' AS DOUBLE)", "2.0e0", "-0.0"]


def _leaf(rng: random.Random) -> str:
    op = rng.choice(_OPS)
    choices = [
        lambda: f"a {op} {rng.randint(-6, 6)}",
        lambda: f"{rng.randint(-6, 6)} {op} a",
        lambda: f"f {op} {rng.choice(_FLOATS)}",
        lambda: f"{rng.choice(_FLOATS)} {op} f",
        lambda: f"s {op} '{rng.choice(['a', 'ab', 'b', 'é', ''])}'",
        lambda: f"m {op} {rng.choice(['1.5', '-0.3', '2', '0.25'])}",
        lambda: f"d {op} DATE '2024-01-0{rng.randint(1, 9)}'",
        lambda: f"a IN ({', '.join(str(rng.randint(-5, 5)) for _ in range(rng.randint(1, 3)))})",
        lambda: f"a NOT IN ({rng.randint(-5, 5)}, {rng.choice(['NULL', '2', '3'])})",
        lambda: f"a IN ({rng.randint(-5, 5)}, NULL)",
        lambda: f"a {rng.choice(['', 'NOT '])}BETWEEN {rng.randint(-5, 2)} AND {rng.randint(0, 5)}",
        lambda: f"f {rng.choice(['', 'NOT '])}BETWEEN -1 AND {rng.choice(['2', _NAN])}",
        lambda: f"{rng.choice(['a', 'f', 's', 'd'])} IS {rng.choice(['', 'NOT '])}NULL",
        lambda: "isnan(f)",
        lambda: f"s {rng.choice(['', 'NOT '])}LIKE '{rng.choice(['a%', 'ab%', '%b', 'a', 'a_', 'a!%%'])}'",
        lambda: f"starts_with(s, '{rng.choice(['a', 'ab', 'é', ''])}')",
        lambda: f"s {rng.choice(['', 'NOT '])}LIKE '%{rng.choice(['a', 'b', 'é', 'a%', ''])}%'",
        lambda: f"contains(s, '{rng.choice(['a', 'ab', 'é', ''])}')",
        lambda: f"contains_term(s, '{rng.choice(['a', 'AB', 'é', 'zz'])}')",
        lambda: f"a = {rng.choice(['NULL', 'CAST(NULL AS INTEGER)'])}",
        lambda: f"a IS {rng.choice(['', 'NOT '])}DISTINCT FROM {rng.choice(['1', 'NULL'])}",
        lambda: rng.choice(["flag", "NOT flag", "TRUE", "FALSE", "NULL"]),
        lambda: f"abs(a) {op} 2",
        lambda: f"a + 1 {op} 3",
        lambda: "a = (SELECT 2)",
        lambda: f"ts {op} TIMESTAMPTZ '2024-01-03 0{rng.randint(0, 6)}:00:00+02'",
        lambda: f"tn {op} TIMESTAMP '2024-01-03 0{rng.randint(0, 6)}:30:00'",
        lambda: f"st.x {op} {rng.randint(0, 4)}",
        lambda: f"tbl.a {op} {rng.randint(-5, 5)}",
        lambda: f"f IN (1.5, {rng.choice(['2', _NAN, '-0.0'])})",
        lambda: f"m IN (1.5, {rng.choice(['0.2', '-3', '2.25'])})",
        lambda: f"a {op} {rng.choice(['1.5', '-2.5', '2.0'])}",
        lambda: f"-a {op} 2",
        # Monotonic functions of a column (hudi_expr.transforms) and folded constants.
        lambda: f"a * {rng.choice(['3', '-2', '0'])} {op} {rng.randint(-12, 12)}",
        lambda: f"a - 2 {op} {rng.randint(-8, 4)}",
        lambda: f"m * {rng.choice(['2', '-1.5'])} {op} {rng.choice(['1.5', '-3', '0'])}",
        lambda: f"m + 0.25 {op} {rng.choice(['1.5', '-3', '0.25'])}",
        lambda: f"CAST(a AS DOUBLE) {op} {rng.choice(['1.5', '-2', '0.0'])}",
        lambda: f"CAST(m AS DOUBLE) {op} {rng.choice(['1.5', '-0.3', '2.0'])}",
        lambda: f"CAST(a AS DECIMAL(21, 2)) {op} {rng.choice(['1.5', '-2.25'])}",
        lambda: f"year(d) {op} {rng.choice(['2023', '2024', '2025'])}",
        lambda: (
            f"date_trunc('{rng.choice(['day', 'week', 'month'])}', d) {op} DATE '2024-01-0"
            + str(rng.randint(1, 9))
            + "'"
        ),
        lambda: f"date_trunc('hour', tn) {op} TIMESTAMP '2024-01-03 0{rng.randint(0, 6)}:00:00'",
        lambda: f"CAST(tn AS DATE) {op} DATE '2024-01-0{rng.randint(2, 4)}'",
        lambda: f"CAST(d AS TIMESTAMP) {op} TIMESTAMP '2024-01-0{rng.randint(1, 9)} 12:00:00'",
        lambda: f"left(s, {rng.randint(1, 2)}) {op} '{rng.choice(['a', 'ab', 'b', 'é', 'Z'])}'",
        lambda: f"substr(s, 1, 1) IN ('a', '{rng.choice(['b', 'é', 'z'])}')",
        lambda: f"a {op} 1 + {rng.randint(-3, 3)} * 2",
        lambda: f"d {op} DATE '2024-01-01' + INTERVAL {rng.randint(0, 9)} DAY",
        lambda: f"tn {op} TIMESTAMP '2024-01-03' + INTERVAL {rng.randint(0, 6)} HOUR",
        lambda: f"s {op} upper('{rng.choice(['a', 'ab', 'é'])}')",
        lambda: f"a {op} length('{rng.choice(['', 'ab', 'abcd'])}')",
    ]
    return rng.choice(choices)()


def _predicate(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.35:
        return _leaf(rng)
    kind = rng.random()
    if kind < 0.2:
        return f"NOT ({_predicate(rng, depth - 1)})"
    joiner = " AND " if kind < 0.6 else " OR "
    return "(" + joiner.join(_predicate(rng, depth - 1) for _ in range(rng.randint(2, 3))) + ")"


def test_differential_against_duckdb() -> None:
    table = _oracle_table()
    con = duckdb.connect()
    register_macros(con)  # contains_term
    con.register("tbl", table)
    rng = random.Random(20240601)
    exact = 0
    for _ in range(200):
        sql = _predicate(rng, 3)
        expected = {row[0] for row in con.execute(f"SELECT i FROM tbl WHERE {sql}").fetchall()}
        translation = translate_sql(sql, table_aliases={"tbl"})
        kept = table.filter(translation.expr.to_pyarrow(table.schema))
        got = set(kept.column("i").to_pylist())
        assert expected <= got, (sql, translation.expr, sorted(expected - got))
        if not translation.not_used:
            exact += 1
            assert got == expected, (sql, translation.expr, sorted(got - expected))
    assert exact > 60  # the grammar mostly produces fully translatable predicates


_TESTS = ["TRUE", "FALSE", "NULL", "UNKNOWN", "NOT TRUE", "NOT FALSE", "NOT NULL"]


def _truth_predicate(rng: random.Random, depth: int) -> str:
    """Predicates with truth tests at any level, over the leaves above."""
    if depth == 0 or rng.random() < 0.3:
        return _leaf(rng)
    kind = rng.random()
    if kind < 0.35:
        return f"({_truth_predicate(rng, depth - 1)}) IS {rng.choice(_TESTS)}"
    if kind < 0.45:
        distinct, constant = rng.choice(["", "NOT "]), rng.choice(["TRUE", "FALSE", "NULL"])
        return f"({_truth_predicate(rng, depth - 1)}) IS {distinct}DISTINCT FROM {constant}"
    if kind < 0.6:
        return f"NOT ({_truth_predicate(rng, depth - 1)})"
    joiner = " AND " if kind < 0.8 else " OR "
    return "(" + joiner.join(_truth_predicate(rng, depth - 1) for _ in range(rng.randint(2, 3))) + ")"


def test_truth_tests_against_duckdb() -> None:
    table = _oracle_table()
    con = duckdb.connect()
    register_macros(con)
    con.register("tbl", table)
    rng = random.Random(20260614)
    exact = 0
    for _ in range(250):
        sql = _truth_predicate(rng, 3)
        expected = {row[0] for row in con.execute(f"SELECT i FROM tbl WHERE {sql}").fetchall()}
        translation = translate_sql(sql, table_aliases={"tbl"})
        got = set(table.filter(translation.expr.to_pyarrow(table.schema)).column("i").to_pylist())
        assert expected <= got, (sql, translation.expr, sorted(expected - got))
        if not translation.not_used:
            exact += 1
            assert got == expected, (sql, translation.expr, sorted(got - expected))
    assert exact > 60


def test_untranslatable_or_is_not_false() -> None:
    # A regression guard for the soundness rule: NOT(untranslatable) must not prune.
    expr = parse_predicate("NOT (a > 1 AND abs(a) = 3)")
    assert expr == Or(col("a") <= 1, AlwaysTrue())


def test_expression_objects_against_duckdb() -> None:
    c, k = duckdb.ColumnExpression, duckdb.ConstantExpression
    table = _oracle_table()
    con = duckdb.connect()
    con.register("tbl", table)
    relation = con.table("tbl")
    expressions = [
        c("a") > k(2),
        ~(c("a") > k(2)),
        (k(1.5) <= c("f")) | c("s").isnull(),
        c("a").between(k(-1), k(3)) & ~c("s").isin(k("a"), k("ab")),
        c("d") >= k(dt.date(2024, 1, 4)),
        c("ts") < k(dt.datetime(2024, 1, 3, 2, tzinfo=UTC)),
        c("m") == k(Decimal("1.5")),
        ~c("f").isnotnull() | (c("f") == k(math.nan)),
        ~((c("a") + k(1) > k(2)) & (c("a") < k(0))),
    ]
    for expr in expressions:
        expected = {row[0] for row in relation.filter(expr).project("i").fetchall()}
        translation = translate_expression(expr)
        got = set(table.filter(translation.expr.to_pyarrow(table.schema)).column("i").to_pylist())
        assert expected <= got, (str(expr), translation.expr)
        if not translation.not_used:
            assert got == expected, (str(expr), translation.expr)


FAST_LITERALS = ["0.05", "-0.05", "1.50", "-0.0", "12345678901234567.5", "DATE '1994-01-01'"]
FAST_LITERALS += ["'2020-01-01'::DATE", "DATE '0001-01-01'", "CAST('2020-01-01' AS DATE)"]
SLOW_LITERALS = ["123456789012345678.5", "1e3", ".5", "DATE '1994-1-01'", "DATE '2020-01-01 '"]
SLOW_LITERALS += ["TRY_CAST('2020-01-01' AS DATE)", "CAST('2020-01-01' AS main.DATE)"]


@pytest.mark.parametrize("literal", FAST_LITERALS + SLOW_LITERALS)
def test_literals_read_without_duckdb_are_what_duckdb_reads(literal: str) -> None:
    # Short decimals and ISO dates skip the round trip to DuckDB: their value must be DuckDB's.
    from adapters.duckdb.parse import _evaluate, _plain_constant, serialize

    node = serialize(f"SELECT {literal}")["statements"][0]["node"]["select_list"][0]
    fast = _plain_constant(node)
    assert (fast is not None) == (literal in FAST_LITERALS)
    if fast is not None:
        slow = _evaluate([node])[0][0][0]
        assert fast == slow and type(fast) is type(slow) and str(fast) == str(slow)


def test_names_ignore_case_against_a_schema_as_in_duckdb() -> None:
    schema = pa.schema([("l_shipdate", pa.date32()), ("qty", pa.int32())])
    expr = parse_predicate(
        "L_SHIPDATE > DATE '1995-01-01' AND year(L_ShipDate) = 1995 AND QTY < 3", schema=schema
    )
    assert expr.bind(schema) == And(
        col("l_shipdate") > dt.date(1995, 1, 1),
        EqualTo(Applied(Year(), Reference("l_shipdate")), 1995),
        col("qty") < 3,
    ).bind(schema)
    # Without a schema the name is kept as written, and binding is case-sensitive by default.
    with pytest.raises(BindError, match="unknown column"):
        parse_predicate("QTY < 3").bind(schema)
    assert parse_predicate("QTY < 3").bind(schema, case_sensitive=False) == (col("qty") < 3).bind(schema)


def test_a_name_two_columns_match_but_for_case_is_ambiguous() -> None:
    schema = pa.schema([("a", pa.int32()), ("A", pa.int32())])
    with pytest.raises(AmbiguousColumnError, match=r"ambiguous.*\['a', 'A'\]"):
        parse_predicate("a > 1", schema=schema)


# ------------------------------------------- FLOAT and DOUBLE constants: DuckDB compares in their type

_TYPED = pa.schema(
    [
        ("x", pa.float64()),
        ("g", pa.float32()),
        ("j", pa.int64()),
        ("dd", pa.decimal128(20, 18)),
        ("s", pa.string()),
    ]
)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("x = 1e3", col("x") == 1000.0),
        ("x = CAST(2 AS DOUBLE)", col("x") == 2.0),
        ("g = CAST('1.1' AS FLOAT)", col("g") == float(pa.scalar(1.1, pa.float32()).as_py())),
        # A float column is widened exactly: no float is the double 0.1.
        ("g = 1e-1", AlwaysFalse()),
        ("g <> 1e-1", col("g").is_not_null()),
        ("g < 5e-324", col("g") <= 0.0),
        ("g = 0.1", col("g") == Decimal("0.1")),  # a DECIMAL is cast to FLOAT: rounded
        # An integer or decimal column is cast to the constant's type, rounding on the way.
        ("j = 9007199254740992e0", EqualTo(Applied(Cast(pa.float64()), col("j")), 9007199254740992.0)),
        ("dd < 1e-1", LessThan(Applied(Cast(pa.float64()), col("dd")), 0.1)),
        ("j = CAST(1 AS FLOAT)", EqualTo(Applied(Cast(pa.float32()), col("j")), 1.0)),
        # IN and BETWEEN compare in the widest type of all their operands.
        ("g IN (1e-1, 0.1, 2)", col("g").isin([2.0])),
        (
            "g BETWEEN 1e-1 AND 16777217",
            (col("g") >= float(pa.scalar(0.1, pa.float32()).as_py())) & (col("g") <= 16777216.0),
        ),
    ],
)
def test_floating_constants_compare_in_their_type(sql: str, expected: Expression) -> None:
    translation = translate_sql(sql, schema=_TYPED)
    assert translation.expr == expected, (sql, translation.expr, expected)
    assert translation.not_used == ()


@pytest.mark.parametrize(
    "sql", ["x = 1e3", "g <> 1e-1", "j = 2e0", "x IN (1, 2e0)", "x BETWEEN 1 AND 2e0", "s = 1e0"]
)
def test_floating_constants_need_the_column_type(sql: str) -> None:
    # Without a schema (or for a string column) how DuckDB compares is unknown: not used.
    schema = _TYPED if sql.startswith("s ") else None
    translation = translate_sql(sql, schema=schema)
    assert translation.expr == AlwaysTrue() and translation.not_used == (sql,)


def _typed_table() -> pa.Table:
    tiny = float(pa.scalar(1.4e-45, pa.float32()).as_py())
    g = [0.0, -0.0, 0.1, tiny, -tiny, 16777216.0, 16777218.0, 3.4028234663852886e38, math.inf, -math.inf]
    j = [2**53, 2**53 + 1, 2**53 + 2, -(2**53) - 1, 0, 1, 2**63 - 1, -(2**63), 16777217, 3]
    dd = ["0.100000000000000001", "0.1", "0.099999999999999999", "0", "-0.1", "1", "0.5", "0.25", "2", "-1"]
    n = len(g) + 2
    return pa.table(
        {
            "i": pa.array(range(n), pa.int64()),
            "g": pa.array([*g, math.nan, None], pa.float32()),
            "j": pa.array([*j, None, 7], pa.int64()),
            "dd": pa.array([*(Decimal(v) for v in dd), None, Decimal("3")], pa.decimal128(20, 18)),
        }
    )


_TYPED_CONSTANTS = [
    "1e-1", "0.1", "CAST(0.1 AS FLOAT)", "5e-324", "-5e-324", "16777217", "16777217e0", "1e38",
    "9007199254740992e0", "9007199254740993", "9.223372036854776e18", "1/3", "'NaN'::DOUBLE",
    "'-Infinity'::DOUBLE", "0.5e0", "2",
]  # fmt: skip


def test_floating_constants_against_duckdb() -> None:
    """Every comparison of g (float), j (bigint) and dd (decimal) with integer, DECIMAL, FLOAT and
    DOUBLE constants keeps each row DuckDB selects, by the row filter and by one-row files' stats."""
    table = _typed_table()
    con = duckdb.connect()
    con.register("tbl", table)
    records = []
    for row in table.to_pylist():
        stats = {}
        for name in ("g", "j", "dd"):
            v = row[name]
            nan = isinstance(v, float) and math.isnan(v)
            present = v is not None and not nan
            stats[name] = {
                "min": v if present else None,
                "max": v if present else None,
                "null_count": int(v is None),
                **({"nan_count": int(nan)} if name == "g" else {}),
            }
        records.append({"file": f"f{row['i']}", "row_count": 1, "stats": stats})
    file_stats = FileStats.from_pylist(records, table.schema)
    rng = random.Random(11)
    sqls = [f"{c} {op} {k}" for c in ("g", "j", "dd") for op in _OPS for k in _TYPED_CONSTANTS]
    for _ in range(150):
        c, items = rng.choice(["g", "j", "dd"]), rng.sample(_TYPED_CONSTANTS, rng.randint(1, 3))
        sqls.append(f"{c} {rng.choice(['', 'NOT '])}IN ({', '.join(items)})")
        low, high = rng.sample(_TYPED_CONSTANTS, 2)
        sqls.append(f"{c} {rng.choice(['', 'NOT '])}BETWEEN {low} AND {high}")
    used = 0
    for sql in sqls:
        for text in (sql, f"NOT ({sql})"):
            expected = {r[0] for r in con.execute(f"SELECT i FROM tbl WHERE {text}").fetchall()}
            translation = translate_sql(text, schema=table.schema)
            got = set(table.filter(translation.expr.to_pyarrow(table.schema)).column("i").to_pylist())
            assert expected <= got, (text, str(translation.expr), sorted(expected - got))
            kept = might_match(translation.expr, file_stats).to_pylist()
            assert all(kept[i] for i in expected), (text, str(translation.expr))
            if not translation.not_used:
                used += 1
                assert got == expected, (text, str(translation.expr), sorted(got - expected))
    assert used > len(sqls)  # most are translated, negations too


# ------------------------------------------------------------------------ predicates DuckDB refuses

REFUSED_SCHEMA = pa.schema([("i", pa.int32()), ("d", pa.date32()), ("s", pa.string())])


@pytest.mark.parametrize(
    ("sql", "duckdb_error", "shown"),
    [
        ("d = DATE '2024-13-45'", duckdb.ConversionException, "DATE '2024-13-45'"),
        ("i > 1 AND d >= CAST('x' AS DATE)", duckdb.ConversionException, "CAST('x' AS DATE)"),
        ("i > 2147483647 + 1", duckdb.OutOfRangeException, "2147483647 + 1"),
        ("abs(d) = 3", duckdb.BinderException, "abs(DATE)"),
        ("i > 1 AND (d > 5 OR abs(i) = 1)", duckdb.BinderException, "type DATE and type INTEGER_LITERAL"),
        ("i IN (1, 'zz') OR month(d) = 1", duckdb.ConversionException, "'zz'"),
        ("count(i) > 1", duckdb.BinderException, "aggregates"),
    ],
)
def test_a_predicate_duckdb_refuses_is_an_error(sql: str, duckdb_error: type, shown: str) -> None:
    # DuckDB refuses these queries (a constant that is no value of its type, a function or
    # comparison that does not bind): an error, not a part "not used for pruning".
    with pytest.raises(InvalidPredicateError, match=re.escape(shown)) as raised:
        translate_sql(sql, schema=REFUSED_SCHEMA)
    assert isinstance(raised.value, SqlParseError | BindError)
    assert isinstance(raised.value, duckdb_error)  # DuckDB's own error class, as DuckDB raises it
    assert "invalid" in str(raised.value)


def test_an_invalid_constant_is_an_error_without_a_schema_too() -> None:
    with pytest.raises(InvalidPredicateError, match="date field value out of range"):
        parse_predicate("d = DATE '2024-13-45'")


@pytest.mark.parametrize(
    "sql",
    [
        "month(d) = 3",  # valid, but not monotonic
        "CASE WHEN i > 1 THEN 'abc'::INT = 1 END",  # DuckDB evaluates the constant only if i > 1
        "s = 5",  # DuckDB casts s: an error only for a row whose s is not a number
        "my_macro(i) = 1",  # a function of another connection
        "length(s) > 2 AND i > 1",
    ],
)
def test_valid_predicates_the_index_cannot_use_are_not_used(sql: str) -> None:
    translated = translate_sql(sql, schema=REFUSED_SCHEMA)
    assert translated.not_used or not isinstance(translated.expr, AlwaysTrue)
    if "my_macro" in sql:
        return  # DuckDB stops at the unknown function: it cannot say whether the rest binds
    with pytest.raises(InvalidPredicateError, match="abs"):  # but not with one DuckDB refuses
        translate_sql(f"({sql}) AND abs(d) = 3", schema=REFUSED_SCHEMA)


def test_prune_asks_for_an_expression_not_sql_text(tmp_path) -> None:
    import pyarrow.parquet as pq

    from index_store import open_table

    (tmp_path / "t").mkdir()
    pq.write_table(pa.table({"i": pa.array([1, 2], pa.int32())}), tmp_path / "t" / "a.parquet")
    table = open_table(tmp_path / "t")
    table.build()
    with pytest.raises(TypeError, match="translate_sql"):
        table.prune("i > 1")  # type: ignore[arg-type]
    assert table.prune(translate_sql("i > 1", schema=table.snapshot().schema)).kept == 1
