"""Catalyst -> hudi_expr translation, checked against real Spark plans (no mocks)."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

import pyspark.sql.functions as F
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from adapters.spark.catalyst import (
    Translation,
    translate_column,
    translate_expression,
    translate_plan,
)
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Contains,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotContains,
    NotEqualTo,
    NotStartsWith,
    Or,
    StartsWith,
    col,
    is_false,
    is_not_false,
    is_not_true,
    is_not_unknown,
    is_true,
    is_unknown,
)
from hudi_expr.expressions import Applied, Expression, Reference
from hudi_expr.transforms import Add, Cast, DateTrunc, Multiply, Prefix, Transform, Year
from index_store import open_table

SCHEMA = StructType(
    [
        StructField("i", IntegerType()),
        StructField("l", LongType()),
        StructField("sh", ShortType()),
        StructField("y", ByteType()),
        StructField("f", FloatType()),
        StructField("d", DoubleType()),
        StructField("s", StringType()),
        StructField("dt", DateType()),
        StructField("ts", TimestampType()),
        StructField("tsn", TimestampNTZType()),
        StructField("dec", DecimalType(10, 2)),
        StructField("b", BinaryType()),
        StructField("bo", BooleanType()),
        StructField("st", StructType([StructField("x", IntegerType()), StructField("z", StringType())])),
    ]
)
UTC = dt.UTC


def tr(spark: SparkSession, sql: str) -> Translation:
    return translate_column(spark, F.expr(sql), SCHEMA)


def analyzed(spark: SparkSession, sql: str) -> Translation:
    """Translate the analyzed (not optimized) condition: casts, NOTs and orientation as written."""
    df = spark.createDataFrame(spark.sparkContext.emptyRDD(), SCHEMA).filter(F.expr(sql))
    return translate_expression(df._jdf.queryExecution().analyzed().condition())


@contextmanager
def session_zone(spark: SparkSession, zone: str) -> Iterator[None]:
    old = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


# Optimized translations: Spark adds IS NOT NULL guards, which are kept (they are sound, and true).
OPTIMIZED = [
    ("i = 3", IsNotNull("i") & (col("i") == 3)),
    ("i < 1.5", IsNotNull("i") & (col("i") < 2)),
    ("l > 2147483648", IsNotNull("l") & (col("l") > 2147483648)),
    ("i > 2147483648", AlwaysFalse()),  # folded by Spark: the filter becomes an empty relation
    ("sh >= 7", IsNotNull("sh") & (col("sh") >= 7)),
    ("y = 3", IsNotNull("y") & (col("y") == 3)),
    ("f = 0.5", IsNotNull("f") & (col("f") == 0.5)),
    ("d = 'NaN'", IsNotNull("d") & EqualTo("d", math.nan)),
    ("d > 1e308", IsNotNull("d") & (col("d") > 1e308)),
    ("s = 'héllo'", IsNotNull("s") & (col("s") == "héllo")),
    ("s LIKE 'ab%'", IsNotNull("s") & StartsWith("s", "ab")),
    ("startswith(s, 'q')", IsNotNull("s") & StartsWith("s", "q")),
    ("s LIKE '%ab%'", IsNotNull("s") & Contains("s", "ab")),  # Spark makes it Contains
    ("contains(s, 'q')", IsNotNull("s") & Contains("s", "q")),
    ("NOT (s LIKE '%ab%')", IsNotNull("s") & NotContains("s", "ab")),
    ("dt = '2024-01-02'", IsNotNull("dt") & (col("dt") == dt.date(2024, 1, 2))),
    ("dec = 1.50", IsNotNull("dec") & (col("dec") == decimal.Decimal("1.50"))),
    ("dec > 1.555", IsNotNull("dec") & (col("dec") >= decimal.Decimal("1.56"))),
    ("b = X'00ff'", IsNotNull("b") & (col("b") == b"\x00\xff")),
    ("bo", IsNotNull("bo") & EqualTo("bo", True)),
    ("NOT bo", IsNotNull("bo") & EqualTo("bo", False)),
    ("st.x = 1", IsNotNull("st.x") & (col("st.x") == 1)),
    ("i IN (1, 2, 3)", In("i", [1, 2, 3])),
    ("i IN (1, NULL)", EqualTo("i", 1)),
    ("i NOT IN (1, NULL)", AlwaysFalse()),
    ("i <=> 3", EqualTo("i", 3)),
    ("i <=> NULL", IsNull("i")),
    ("NOT (i <=> 3)", Or(NotEqualTo("i", 3), IsNull("i"))),
    ("isnan(d)", IsNaN("d")),
    ("NOT isnan(d)", IsNotNaN("d")),
    ("i IS NULL OR s IS NOT NULL", IsNull("i") | IsNotNull("s")),
    ("true", AlwaysTrue()),
    ("false", AlwaysFalse()),
    ("CAST(NULL AS BOOLEAN)", AlwaysFalse()),
]


@pytest.mark.parametrize(("sql", "expected"), OPTIMIZED, ids=[c[0] for c in OPTIMIZED])
def test_translate_column(spark: SparkSession, sql: str, expected) -> None:  # type: ignore[no-untyped-def]
    t = tr(spark, sql)
    assert t.expr == expected, str(t.expr)
    assert t.not_used == ()


def test_inset_of_many_values(spark: SparkSession) -> None:
    def as_set(sql: str) -> tuple[str, set]:  # type: ignore[type-arg]
        expr = tr(spark, sql).expr
        assert isinstance(expr, In), str(expr)
        return expr.term.name, set(expr.values)

    values = list(range(20))
    assert as_set(f"i IN ({', '.join(map(str, values))})") == ("i", set(values))
    words = [f"w{k}" for k in range(15)]
    sql = f"s IN ({', '.join(repr(w) for w in words)}, NULL)"
    assert as_set(sql) == ("s", set(words))
    assert tr(spark, f"NOT ({sql})").expr == AlwaysFalse()  # NOT IN (.., NULL) is never TRUE


# Analyzed translations: what the walker does with trees Spark has not rewritten.
ANALYZED = [
    ("5 < i", GreaterThan("i", 5)),
    ("5 >= i", LessThanOrEqual("i", 5)),
    ("NOT (5 > i)", GreaterThanOrEqual("i", 5)),
    ("NOT (i > 5 AND s = 'a')", Or(LessThanOrEqual("i", 5), NotEqualTo("s", "a"))),
    ("NOT (i = 1 OR NOT (l < 3))", And(NotEqualTo("i", 1), LessThan("l", 3))),
    ("NOT (s LIKE 'ab%')", NotStartsWith("s", "ab")),
    ("s LIKE 'a\\%b'", EqualTo("s", "a%b")),
    ("s LIKE 'ab%%'", StartsWith("s", "ab")),
    ("s LIKE '%'", StartsWith("s", "")),  # binds to s IS NOT NULL; its negation to FALSE
    ("s LIKE '%a\\%b%'", Contains("s", "a%b")),
    ("NOT (s LIKE '%%ab%')", NotContains("s", "ab")),
    ("contains(s, 'q')", Contains("s", "q")),
    ("NOT contains(s, 'q')", NotContains("s", "q")),
    ("NOT (i IS NULL)", IsNotNull("i")),
    ("NOT (i IN (1, 2))", ~In("i", [1, 2])),
    ("NOT (NOT (d > 0))", GreaterThan("d", 0.0)),
    ("NULL = i", AlwaysFalse()),
    ("NOT (i = NULL)", AlwaysFalse()),
    ("NOT (NULL <=> i)", IsNotNull("i")),
    ("CAST(i AS BIGINT) > 3", GreaterThan("i", 3)),
    ("CAST(y AS INT) < 3", LessThan("y", 3)),
    ("CAST(i AS DOUBLE) < 2.5D", LessThan("i", 2.5)),  # exact: the binder makes it i <= 2
    ("CAST(sh AS FLOAT) = 1.0F", EqualTo("sh", 1.0)),
    ("CAST(i AS DECIMAL(12, 2)) > 1.25", GreaterThan("i", decimal.Decimal("1.25"))),
    ("CAST(f AS DOUBLE) = 0.5D", EqualTo("f", 0.5)),
    ("CAST(f AS DOUBLE) = 0.1D", AlwaysFalse()),  # no float is exactly the double 0.1
    ("CAST(f AS DOUBLE) <> 0.1D", IsNotNull("f")),
    ("CAST(f AS DOUBLE) IN (0.1D, 0.5D)", EqualTo("f", 0.5)),
    ("CAST(f AS DOUBLE) = CAST('NaN' AS DOUBLE)", EqualTo("f", math.nan)),
]


@pytest.mark.parametrize(("sql", "expected"), ANALYZED, ids=[c[0] for c in ANALYZED])
def test_translate_analyzed(spark: SparkSession, sql: str, expected) -> None:  # type: ignore[no-untyped-def]
    t = analyzed(spark, sql)
    assert t.expr == expected, str(t.expr)
    assert t.not_used == ()


def test_float_widened_to_double_is_placed_between_floats(spark: SparkSession) -> None:
    # float32(0.1) is above the double 0.1: CAST(f AS DOUBLE) < 0.1D means f <= the float below it.
    below = float(np.nextafter(np.float32(0.1), np.float32(0)))
    above = float(np.float32(0.1))
    assert analyzed(spark, "CAST(f AS DOUBLE) < 0.1D").expr == LessThanOrEqual("f", below)
    assert analyzed(spark, "CAST(f AS DOUBLE) <= 0.1D").expr == LessThanOrEqual("f", below)
    assert analyzed(spark, "CAST(f AS DOUBLE) > 0.1D").expr == GreaterThanOrEqual("f", above)
    assert analyzed(spark, "NOT (CAST(f AS DOUBLE) < 0.1D)").expr == GreaterThanOrEqual("f", above)
    top = float(np.finfo(np.float32).max)
    assert analyzed(spark, "CAST(f AS DOUBLE) > 1e300D").expr == GreaterThanOrEqual("f", math.inf)
    assert analyzed(spark, "CAST(f AS DOUBLE) < 1e300D").expr == LessThanOrEqual("f", top)


UNUSED = [
    ("i % 2 > 3", AlwaysTrue(), "(i % 2)"),
    ("NOT (i % 2 > 3)", AlwaysTrue(), "(i % 2)"),
    ("i = l", AlwaysTrue(), "= l"),
    ("CAST(dt AS TIMESTAMP) > TIMESTAMP '2024-01-01 00:00:00'", AlwaysTrue(), None),  # session zone
    ("CAST(i AS STRING) = '1'", AlwaysTrue(), "CAST(i AS STRING)"),
    ("month(dt) = 3", AlwaysTrue(), "month(dt)"),  # wraps around each year: not monotonic
    ("date_trunc('MONTH', ts) = TIMESTAMP '2024-01-01 00:00:00'", AlwaysTrue(), None),  # session zone
    ("substr(s, 2, 1) = 'a'", AlwaysTrue(), None),  # not a prefix
    ("upper(s) = 'A'", AlwaysTrue(), "upper(s)"),
    ("s LIKE '%x'", AlwaysTrue(), None),
    ("s LIKE '%x_%'", AlwaysTrue(), None),
    ("contains(b, X'00')", AlwaysTrue(), None),  # binary: Contains takes strings only
    ("i > 3 AND rand() < 0.5", GreaterThan("i", 3), "rand("),
    ("NOT (i > 3 AND abs(l) = 2)", AlwaysTrue(), "abs(l)"),
    ("NOT (i > 3 OR abs(l) = 2)", LessThanOrEqual("i", 3), "abs(l)"),
    ("s = 'a' COLLATE UTF8_LCASE", AlwaysTrue(), None),
]


# Monotonic functions of a column (hudi_expr.transforms), read from the analyzed plan: arithmetic
# only under ANSI mode (Spark 4's default), where overflow raises instead of wrapping around.
def applied(transform: Transform, column: str) -> Applied:
    return Applied(transform, Reference(column))


FUNCTIONS = [
    ("i + 1 > 3", GreaterThan(applied(Add(1), "i"), 3)),
    ("NOT (i + 1 > 3)", LessThanOrEqual(applied(Add(1), "i"), 3)),
    ("i - 2 < 0", LessThan(applied(Add(-2), "i"), 0)),
    ("l * -3 >= 6", GreaterThanOrEqual(applied(Multiply(-3), "l"), 6)),
    ("dec * 2 < 5", LessThan(applied(Multiply(2), "dec"), decimal.Decimal("5.00"))),
    ("year(dt) = 1995", EqualTo(applied(Year(), "dt"), 1995)),
    ("trunc(dt, 'MM') = DATE '1995-03-01'", EqualTo(applied(DateTrunc("month"), "dt"), dt.date(1995, 3, 1))),
    ("substr(s, 1, 2) = 'ab'", EqualTo(applied(Prefix(2), "s"), "ab")),
    ("left(s, 2) = 'ab'", EqualTo(applied(Prefix(2), "s"), "ab")),
    ("CAST(dec AS DOUBLE) > 49.5D", GreaterThan(applied(Cast(pa.float64()), "dec"), 49.5)),
    ("CAST(l AS DOUBLE) < 2.5D", LessThan(applied(Cast(pa.float64()), "l"), 2.5)),  # rounds: monotonic
    # Binding refuses this one (it may overflow), but Spark's reading of it is translated:
    ("CAST(i AS DECIMAL(5, 2)) > 1.25", GreaterThan(applied(Cast(pa.decimal128(5, 2)), "i"), 1.25)),
]


@pytest.mark.parametrize(("sql", "expected"), FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_monotonic_functions_translate(spark: SparkSession, sql: str, expected: Expression) -> None:
    t = analyzed(spark, sql)
    assert str(expected) in {str(leaf) for leaf in t.expr.leaves()}, str(t.expr)
    assert not t.not_used


def test_arithmetic_is_not_used_without_ansi_mode(spark: SparkSession) -> None:
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        t = analyzed(spark, "i + 1 > 3")
    finally:
        spark.conf.set("spark.sql.ansi.enabled", "true")
    assert t.expr == AlwaysTrue() and t.not_used  # i + 1 wraps around: no order kept


def test_an_uppercased_column_binds_to_the_relation_column(spark: SparkSession) -> None:
    # spark.sql.caseSensitive is false by default: Spark resolves I to i but keeps the query's
    # spelling in the attribute; the translation names the relation's column.
    assert spark.conf.get("spark.sql.caseSensitive") == "false"
    assert GreaterThan("i", 5) in set(tr(spark, "I > 5").expr.leaves())


def test_functions_prune_as_spark_filters(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A function of a column prunes files, and never one holding a row Spark keeps."""
    root = tmp_path / "fn"
    root.mkdir()
    for k in range(6):
        day = dt.date(1993 + k, 2, 1)
        pq.write_table(
            pa.table(
                {
                    "n": pa.array([k * 10 - 25, k * 10 - 20, None], pa.int32()),
                    "q": pa.array(
                        [decimal.Decimal(k) + decimal.Decimal("0.25"), None, decimal.Decimal(-k)],
                        pa.decimal128(10, 2),
                    ),
                    "dt": pa.array([day, day + dt.timedelta(days=40), None], pa.date32()),
                    "s": pa.array([f"{chr(97 + k)}x", f"{chr(97 + k)}é", None], pa.string()),
                }
            ),
            root / f"part-{k}.parquet",
        )
    table = open_table(root)
    table.build()
    everything = spark.read.parquet(str(root))
    pruned_somewhere = 0
    for sql in [
        "year(dt) = 1995",
        "trunc(dt, 'MM') >= DATE '1997-03-01'",
        "n * -2 > 30",
        "n + 7 < -10",
        "q * 2 > 6",
        "CAST(q AS DOUBLE) > 3.25D",
        "left(s, 1) = 'c'",
        "NOT (year(dt) <> 1996)",
        "year(dt) IN (1993, 1998)",
        "(n - 1) IS NULL",
    ]:
        translated = translate_column(spark, F.expr(sql), everything.schema).expr
        kept = {p.rsplit("/", 1)[1] for p in table.prune(translated).files}
        has_rows = {
            r.f.rsplit("/", 1)[1]
            for r in everything.filter(sql).select(F.input_file_name().alias("f")).collect()
        }
        assert has_rows <= kept, (sql, str(translated))
        pruned_somewhere += len(kept) < 6
    assert pruned_somewhere >= 8


@pytest.mark.parametrize(("sql", "expected", "text"), UNUSED, ids=[c[0] for c in UNUSED])
def test_untranslatable_becomes_true_and_is_reported(spark: SparkSession, sql: str, expected, text) -> None:  # type: ignore[no-untyped-def]
    t = analyzed(spark, sql)
    assert t.expr == expected, str(t.expr)
    assert len(t.not_used) >= 1
    if text is not None:
        assert any(text in part for part in t.not_used), t.not_used


I5 = col("i") > 5
I5_SA = (col("i") > 5) & (col("s") == "a")

# Truth tests: Spark parses p IS TRUE as p <=> true, p IS NOT TRUE as NOT (p <=> true), and keeps
# them (and IS NULL of a junction) through the optimizer.
TRUTH = [
    ("(i > 5) IS TRUE", is_true(I5)),
    ("(i > 5) IS NOT TRUE", is_not_true(I5)),
    ("(i > 5) IS FALSE", is_false(I5)),
    ("(i > 5) IS NOT FALSE", is_not_false(I5)),
    ("NOT ((i > 5) IS TRUE)", is_not_true(I5)),
    ("(i > 5) IS NULL", IsNull("i")),  # the optimizer's own isnull(i), or the rewrite's
    ("(i > 5) IS UNKNOWN", IsNull("i")),
    ("(i > 5 AND s = 'a') IS NULL", is_unknown(I5_SA)),
    ("NOT ((i > 5 AND s = 'a') IS NULL)", is_not_unknown(I5_SA)),
    ("(i > 5 OR s = 'a') IS NOT NULL", is_not_unknown(I5 | (col("s") == "a"))),
    ("(i > 5 AND s = 'a') IS FALSE", is_false(I5_SA)),
    ("(i > 5 AND s = 'a') <=> false", is_false(I5_SA)),
    ("NOT ((i > 5 OR NOT (s = 'a')) IS NOT FALSE)", is_false(I5 | (col("s") != "a"))),
    ("(i > 5) <=> NULL", IsNull("i")),
    ("((i > 5) IS NULL) IS FALSE", IsNotNull("i")),
    ("(i <=> 3) IS NULL", AlwaysFalse()),  # never NULL
    ("(st.x > 1) IS NOT TRUE", is_not_true(col("st.x") > 1)),
    ("bo IS TRUE", EqualTo("bo", True)),  # a column: <=> true, as before
]


@pytest.mark.parametrize(("sql", "expected"), TRUTH, ids=[c[0] for c in TRUTH])
def test_truth_tests(spark: SparkSession, sql: str, expected: Expression) -> None:
    for t in (tr(spark, sql), analyzed(spark, sql)):
        assert t.expr == expected, str(t.expr)
        assert t.not_used == ()


TRUTH_UNUSED = [
    "(i > 5 AND abs(l) = 2) IS FALSE",  # TRUE for abs(l) = 2 would be wrong under IS FALSE
    "NOT ((i > 5 AND abs(l) = 2) IS NULL)",
    "(i > 5 OR upper(s) = 'A') IS NULL",
    "(i IN (1, NULL)) IS FALSE",  # NULL where i <> 1
    "isnan(d) IS TRUE",  # isnan(NULL): FALSE in Spark, NULL in DuckDB (Spark folds it optimized)
    "(CAST(i AS DOUBLE) > d) IS NULL",
]


@pytest.mark.parametrize("sql", TRUTH_UNUSED, ids=TRUTH_UNUSED)
def test_a_truth_test_of_an_untranslatable_operand_is_unused(spark: SparkSession, sql: str) -> None:
    t = analyzed(spark, sql)
    assert t.expr == AlwaysTrue(), str(t.expr)  # never FALSE
    assert len(t.not_used) == 1, t.not_used


SMALL = StructType(
    [
        StructField("id", LongType()),
        StructField("i", IntegerType()),
        StructField("l", LongType()),
        StructField("s", StringType()),
        StructField("d", DoubleType()),
        StructField("bo", BooleanType()),
    ]
)
SMALL_ARROW = pa.schema(
    [
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("s", pa.string()),
        ("d", pa.float64()),
        ("bo", pa.bool_()),
    ]
)


def test_truth_tests_keep_sparks_rows(spark: SparkSession) -> None:
    """Spark itself as the oracle: each translation keeps exactly the rows Spark keeps (every row
    Spark keeps when a part was not used), on every combination of a few values and NULL."""
    values: list[list[Any]] = [
        [None, 1, 5, 7],
        [None, 2],
        [None, "a", "b"],
        [None, 1.0, math.nan],
        [None, True, False],
    ]
    rows = [(k, *combo) for k, combo in enumerate(itertools.product(*values))]
    frame = spark.createDataFrame(rows, SMALL)
    table = pa.Table.from_pylist([dict(zip(SMALL.fieldNames(), r, strict=True)) for r in rows], SMALL_ARROW)
    checked = 0
    for sql in [
        *(sql for sql, _ in TRUTH if "st." not in sql),
        *TRUTH_UNUSED,
        "(i > 5 OR d > 0.5D) IS NOT TRUE AND (s = 'a') IS NOT FALSE",
        "(bo OR i = 1) IS NULL",
        "NOT (bo AND l = 2) IS NOT NULL",
        "(d = CAST('NaN' AS DOUBLE)) IS FALSE",
        "((i IS NULL OR s = 'b') AND l = 2) IS UNKNOWN",
        "(i BETWEEN 1 AND 5) IS NOT TRUE OR (l IN (2, 3)) IS NULL",
        "(s LIKE 'a%' AND NOT bo) IS NOT FALSE",
    ]:
        t = translate_column(spark, F.expr(sql), SMALL)
        expected = {r.id for r in frame.filter(sql).select("id").collect()}
        got = set(table.filter(t.expr.to_pyarrow(table.schema)).column("id").to_pylist())
        assert expected <= got, (sql, str(t.expr), sorted(expected - got))
        if not t.not_used:
            checked += 1
            assert got == expected, (sql, str(t.expr), sorted(got - expected))
    assert checked >= 20


def _is_small(values: pa.Array) -> pa.Array:
    return pc.fill_null(pc.less(values, 3), False)


def test_python_udf_is_not_used(spark: SparkSession) -> None:
    # An Arrow UDF (pyarrow in and out): F.udf would try Spark's Arrow-optimized Python UDF,
    # which needs pandas (not a dependency), and fall back to a pickled one with a warning.
    is_small = F.arrow_udf(_is_small, BooleanType())
    t = translate_column(spark, is_small(F.col("i")) & (F.col("l") == 4), SCHEMA)
    assert t.expr == IsNotNull("l") & EqualTo("l", 4)
    assert len(t.not_used) == 1  # the UDF's result column


@pytest.mark.parametrize(
    ("zone", "utc"),
    [
        ("UTC", dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
        ("America/Los_Angeles", dt.datetime(2024, 1, 2, 11, 4, 5, 123456, tzinfo=UTC)),
    ],
)
def test_timestamp_literal_is_the_utc_instant_in_any_session_zone(
    spark: SparkSession, zone: str, utc: dt.datetime
) -> None:
    with session_zone(spark, zone):
        text = tr(spark, "ts = '2024-01-02 03:04:05.123456'").expr
        offset = tr(spark, "ts = TIMESTAMP '2024-01-02 05:04:05+02:00'").expr
        wall = tr(spark, "tsn = '2024-01-02 03:04:05.123456'").expr
        date = tr(spark, "dt = DATE '2024-01-02'").expr
    assert text == IsNotNull("ts") & EqualTo("ts", utc)  # text is read in the session zone
    assert offset == IsNotNull("ts") & EqualTo("ts", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert wall == IsNotNull("tsn") & EqualTo("tsn", dt.datetime(2024, 1, 2, 3, 4, 5, 123456))
    assert date == IsNotNull("dt") & EqualTo("dt", dt.date(2024, 1, 2))


def _last_leaf(t: Translation) -> list:  # type: ignore[type-arg]
    """The literals of a translation's leaves, left to right."""
    return [leaf.literal for leaf in t.expr.leaves() if hasattr(leaf, "literal")]


def test_literal_python_types(spark: SparkSession) -> None:

    dec = _last_leaf(tr(spark, "dec = 1.5"))[0]
    assert isinstance(dec, decimal.Decimal) and dec.as_tuple().exponent == -2  # the type's scale
    neg_zero = _last_leaf(analyzed(spark, "d < double('-0.0')"))[0]
    assert neg_zero == 0.0 and math.copysign(1, neg_zero) == -1
    nan = _last_leaf(tr(spark, "d = 'NaN'"))[0]
    assert math.isnan(nan)
    assert _last_leaf(tr(spark, "b = X'00ff'")) == [b"\x00\xff"]
    ts = _last_leaf(tr(spark, "ts > '1969-12-31 23:59:59.5'"))[0]
    assert ts == dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)


def test_translate_plan_reads_filters_above_the_scan(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "t")
    pq.write_table(pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]}), tmp_path / "t.parquet")
    spark.read.parquet(str(tmp_path / "t.parquet")).write.partitionBy("b").parquet(path)
    df = (
        spark.read.parquet(path)
        .filter("a > 1")
        .select((F.col("a") + 1).alias("c"), "b")
        .filter("b = 'y'")
        .filter("c > 2")  # c is an alias: its filter cannot be about column a of the files
    )
    t = translate_plan(df)
    leaves = set(t.expr.leaves())
    assert GreaterThan("a", 1) in leaves and EqualTo("b", "y") in leaves
    assert all(leaf.term.column.name in ("a", "b") for leaf in leaves)
    assert translate_plan(df.groupBy("b").count()).expr != AlwaysTrue()  # aggregate above: fine
    joined = df.crossJoin(spark.read.parquet(path))
    assert translate_plan(joined).expr == AlwaysTrue()


def test_translated_nan_comparisons_keep_nan_files(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Spark: NaN > every number and NaN = NaN. Files whose only candidates are NaN must stay."""
    root = tmp_path / "nan"
    root.mkdir()
    pq.write_table(pa.table({"d": [1.0, 2.0]}), root / "a.parquet")
    pq.write_table(pa.table({"d": [math.nan, 3.0]}), root / "b.parquet")
    pq.write_table(pa.table({"d": [math.nan, None]}), root / "c.parquet")
    pq.write_table(pa.table({"d": [-0.0, 0.0]}), root / "z.parquet")
    table = open_table(root)
    table.build()
    everything = spark.read.parquet(str(root))
    for sql in [
        "d > 5",
        "d >= 'NaN'",
        "d = 'NaN'",
        "NOT (d < 5)",
        "d IN (7, 'NaN')",
        "d <> 3",
        "d > 'Infinity'",
        "d = 0",
        "d < 0.5 AND d >= -0.0",
        "NOT isnan(d)",
        "d <=> 'NaN'",
    ]:
        translated = translate_column(spark, F.expr(sql), everything.schema).expr
        kept = {p.rsplit("/", 1)[1] for p in table.prune(translated).files}
        has_rows = {
            r.f.rsplit("/", 1)[1]
            for r in everything.filter(sql).select(F.input_file_name().alias("f")).collect()
        }
        assert has_rows <= kept, sql
    assert len(table.prune(translate_column(spark, F.expr("d > 5"), everything.schema).expr).files) == 2
