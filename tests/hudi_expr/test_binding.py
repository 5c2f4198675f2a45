"""Binding: column resolution for every type and SQL literal coercion, folded to exact trees."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import zoneinfo
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import (
    AlwaysFalse,
    And,
    BindError,
    BoundReference,
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
    Or,
    StartsWith,
    col,
    resolve,
)

UTC = dt.UTC
NEW_YORK = zoneinfo.ZoneInfo("America/New_York")

SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("i16", pa.int16()),
        ("i32", pa.int32()),
        ("i64", pa.int64()),
        ("u8", pa.uint8()),
        ("u16", pa.uint16()),
        ("u32", pa.uint32()),
        ("u64", pa.uint64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("dec256", pa.decimal256(40, 3)),
        ("s", pa.string()),
        ("ls", pa.large_string()),
        ("bin", pa.binary()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("ts_s", pa.timestamp("s")),
        ("ts_ms", pa.timestamp("ms")),
        ("ts_us", pa.timestamp("us")),
        ("ts_ns", pa.timestamp("ns")),
        ("tz_s", pa.timestamp("s", "UTC")),
        ("tz_ms", pa.timestamp("ms", "UTC")),
        ("tz_us", pa.timestamp("us", "UTC")),
        ("tz_ns", pa.timestamp("ns", "UTC")),
        ("tz_ny", pa.timestamp("us", "America/New_York")),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
        ("dict", pa.dictionary(pa.int32(), pa.string())),
        pa.field("req", pa.int64(), nullable=False),
        ("tags", pa.list_(pa.int64())),
    ]
)


def ref(name: str) -> BoundReference:
    return resolve(SCHEMA, name)


def bind(expr: Expression) -> Expression:
    return expr.bind(SCHEMA)


# --------------------------------------------------------------------------------- resolution


def test_resolve_top_level_struct_and_dictionary() -> None:
    r = ref("i64")
    assert (r.name, r.path, r.type, r.nullable) == ("i64", ("i64",), pa.int64(), True)
    x = ref("st.x")
    assert (x.name, x.path, x.type) == ("st.x", ("st", "x"), pa.int32())
    z = ref("st.y.z")
    assert (z.path, z.type) == (("st", "y", "z"), pa.string())
    # A dictionary column compares as its values.
    assert ref("dict").type == pa.string()
    assert ref("req").nullable is False


def test_nullability_of_struct_path_follows_the_chain() -> None:
    schema = pa.schema([pa.field("s", pa.struct([pa.field("x", pa.int32(), nullable=False)]))])
    assert resolve(schema, "s.x").nullable is True  # the struct itself may be NULL
    required = pa.schema([pa.field("s", pa.struct([pa.field("x", pa.int32(), nullable=False)]), False)])
    assert resolve(required, "s.x").nullable is False
    assert (col("s.x").is_null()).bind(required) is AlwaysFalse()
    assert (col("s.x").is_null()).bind(schema) == IsNull(resolve(schema, "s.x"))


def test_top_level_name_with_a_dot_wins_over_a_path() -> None:
    schema = pa.schema([("a.b", pa.int64()), ("a", pa.struct([("b", pa.string())]))])
    assert resolve(schema, "a.b").type == pa.int64()
    assert resolve(schema, "a.b").path == ("a.b",)


def test_bound_tree_is_bound_and_rebinding_is_identity() -> None:
    e = bind((col("i64") > 1) & col("st.x").isin([1, 2]))
    assert e.is_bound
    assert e.bind(SCHEMA) == e
    assert e != (col("i64") > 1) & col("st.x").isin([1, 2])


# ---------------------------------------------------------------------- literal per column type


@pytest.mark.parametrize(
    ("column", "literal", "expected"),
    [
        ("i8", 5, pa.scalar(5, pa.int8())),
        ("i16", -300, pa.scalar(-300, pa.int16())),
        ("i32", 2**31 - 1, pa.scalar(2**31 - 1, pa.int32())),
        ("i64", -(2**63), pa.scalar(-(2**63), pa.int64())),
        ("u8", 255, pa.scalar(255, pa.uint8())),
        ("u16", 65535, pa.scalar(65535, pa.uint16())),
        ("u32", 2**32 - 1, pa.scalar(2**32 - 1, pa.uint32())),
        ("u64", 2**64 - 1, pa.scalar(2**64 - 1, pa.uint64())),
        ("i64", 7.0, pa.scalar(7, pa.int64())),  # an integral float is that integer
        ("i64", decimal.Decimal("7.00"), pa.scalar(7, pa.int64())),
        ("i64", " 12 ", pa.scalar(12, pa.int64())),  # numeric text, as SQL casts it
        ("i64", pa.scalar(5, pa.int8()), pa.scalar(5, pa.int64())),
        ("f32", 0.1, pa.scalar(np.float32(0.1).item(), pa.float32())),  # rounded to float32
        ("f32", 3, pa.scalar(3.0, pa.float32())),
        ("f64", 0.1, pa.scalar(0.1, pa.float64())),
        ("f64", decimal.Decimal("0.1"), pa.scalar(0.1, pa.float64())),
        ("f64", math.inf, pa.scalar(math.inf, pa.float64())),
        ("f64", -math.inf, pa.scalar(-math.inf, pa.float64())),
        ("dec", decimal.Decimal("1.5"), pa.scalar(decimal.Decimal("1.50"), pa.decimal128(10, 2))),
        ("dec", 0.1, pa.scalar(decimal.Decimal("0.10"), pa.decimal128(10, 2))),  # 0.1 as written
        ("dec", "-2.25", pa.scalar(decimal.Decimal("-2.25"), pa.decimal128(10, 2))),
        ("dec", 3, pa.scalar(decimal.Decimal("3.00"), pa.decimal128(10, 2))),
        ("dec256", 10**30, pa.scalar(decimal.Decimal(10**30), pa.decimal256(40, 3))),
        ("s", "é", pa.scalar("é", pa.string())),
        ("s", "é".encode(), pa.scalar("é", pa.string())),
        ("ls", "x", pa.scalar("x", pa.large_string())),
        ("bin", b"\x00\xff", pa.scalar(b"\x00\xff", pa.binary())),
        ("bin", "é", pa.scalar("é".encode(), pa.binary())),
        ("flag", True, pa.scalar(True)),
        ("flag", "false", pa.scalar(False)),
        ("day", dt.date(2024, 1, 2), pa.scalar(dt.date(2024, 1, 2), pa.date32())),
        ("day", "2024-01-02", pa.scalar(dt.date(2024, 1, 2), pa.date32())),
        ("day", dt.datetime(2024, 1, 2), pa.scalar(dt.date(2024, 1, 2), pa.date32())),  # midnight
        ("ts_s", dt.date(2024, 1, 2), pa.scalar(dt.datetime(2024, 1, 2), pa.timestamp("s"))),
        (
            "ts_ms",
            "2024-01-02 03:04:05.006",
            pa.scalar(dt.datetime(2024, 1, 2, 3, 4, 5, 6000), pa.timestamp("ms")),
        ),
        (
            "ts_us",
            dt.datetime(2024, 1, 2, 3, 4, 5, 6),
            pa.scalar(dt.datetime(2024, 1, 2, 3, 4, 5, 6), pa.timestamp("us")),
        ),
        ("ts_ns", "2024-01-02T00:00:00.123456789", pa.scalar(1704153600123456789, pa.timestamp("ns"))),
        # A timestamp scalar of another unit keeps its full precision.
        (
            "ts_ns",
            pa.scalar(1704153600123456789, pa.timestamp("ns", "UTC")),
            pa.scalar(1704153600123456789, pa.timestamp("ns")),
        ),
        ("ts_us", pa.scalar(1704153600, pa.timestamp("s")), pa.scalar(1704153600_000000, pa.timestamp("us"))),
        # Naive literal against a zoned column: read as UTC.
        (
            "tz_us",
            dt.datetime(2024, 1, 2, 3),
            pa.scalar(dt.datetime(2024, 1, 2, 3, tzinfo=UTC), pa.timestamp("us", "UTC")),
        ),
        # Aware literal against a zoned column: the same instant.
        (
            "tz_s",
            dt.datetime(2024, 1, 2, 3, tzinfo=NEW_YORK),
            pa.scalar(dt.datetime(2024, 1, 2, 8, tzinfo=UTC), pa.timestamp("s", "UTC")),
        ),
        (
            "tz_ny",
            dt.datetime(2024, 1, 2, 8, tzinfo=UTC),
            pa.scalar(dt.datetime(2024, 1, 2, 8, tzinfo=UTC), pa.timestamp("us", "America/New_York")),
        ),
        # Aware literal against a wall-clock column: its UTC wall-clock time.
        (
            "ts_ms",
            dt.datetime(2024, 1, 2, 3, tzinfo=NEW_YORK),
            pa.scalar(dt.datetime(2024, 1, 2, 8), pa.timestamp("ms")),
        ),
        # Text is cast to the column type as SQL casts it: a wall-clock column ignores its zone.
        ("ts_ns", "2024-01-02T03:00:00+01:00", pa.scalar(dt.datetime(2024, 1, 2, 3), pa.timestamp("ns"))),
        (
            "tz_us",
            "2024-01-02T03:00:00+01:00",
            pa.scalar(dt.datetime(2024, 1, 2, 2, tzinfo=UTC), pa.timestamp("us", "UTC")),
        ),
        ("tz_ms", "2024-01-02", pa.scalar(dt.datetime(2024, 1, 2, tzinfo=UTC), pa.timestamp("ms", "UTC"))),
        ("st.x", 5, pa.scalar(5, pa.int32())),
        ("dict", "a", pa.scalar("a", pa.string())),
    ],
)
def test_equality_literal_is_coerced_to_the_column_type(
    column: str, literal: Any, expected: pa.Scalar
) -> None:
    bound = bind(col(column) == literal)
    assert type(bound) is EqualTo
    assert bound.term == ref(column)
    assert bound.literal.type == expected.type
    assert bound.literal == expected, (bound.literal, expected)
    # Every comparison kind coerces the same way.
    for make in (LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual, NotEqualTo):
        assert bind(make(column, literal)) == make(ref(column), expected)


def test_float32_literal_is_the_float32_value() -> None:
    lit = bind(col("f32") == 0.1).literal
    assert lit.as_py() == float(np.float32(0.1)) != 0.1


@pytest.mark.parametrize("literal", [5e-324, -5e-324, 1e-40, 1e38, -1e38, 3e-39, 1e39])
def test_a_float_printed_as_a_double_binds_as_duckdb_compares_that_double(literal: float) -> None:
    """A float that no DECIMAL holds prints as a DOUBLE (``5e-324``), which DuckDB compares with a
    float column widened exactly, never rounded to a float: binding does the same (found by CI:
    ``f < 5e-324`` bound to ``f < 0`` pruned a file of zeros)."""
    import duckdb

    tiny = float(np.float32(1.4e-45))
    values = [
        0.0,
        -0.0,
        tiny,
        -tiny,
        float(np.float32(1e-40)),
        float(np.float32(1e38)),
        -float(np.float32(1e38)),
    ]
    values += [float(np.float32(3e-39)), float(np.finfo(np.float32).max), math.inf, -math.inf, math.nan]
    table = pa.table({"f32": pa.array(values, pa.float32()), "i": pa.array(range(len(values)))})
    con = duckdb.connect()
    con.register("t", table)
    for make in (EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual):
        expr = make(col("f32"), literal)
        expected = {r[0] for r in con.execute(f"SELECT i FROM t WHERE {expr}").fetchall()}
        got = set(table.filter(expr.to_pyarrow(table.schema)).column("i").to_pylist())
        assert got == expected, (str(expr), str(expr.bind(table.schema)))


def test_negative_zero_literal_is_zero() -> None:
    for column in ("f32", "f64"):
        lit = bind(col(column) == -0.0).literal
        assert lit.as_py() == 0.0 and math.copysign(1.0, lit.as_py()) == 1.0


# ---------------------------------------------------------------------------- folded literals


def I(name: str) -> BoundReference:  # noqa: E743
    return ref(name)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # Between two integers: = never holds, < 1.5 is <= 1, > 1.5 is >= 2.
        (col("i64") == 1.5, AlwaysFalse()),
        (col("i64") != 1.5, IsNotNull(I("i64"))),
        (col("i64") < 1.5, LessThanOrEqual(I("i64"), pa.scalar(1, pa.int64()))),
        (col("i64") <= 1.5, LessThanOrEqual(I("i64"), pa.scalar(1, pa.int64()))),
        (col("i64") > 1.5, GreaterThanOrEqual(I("i64"), pa.scalar(2, pa.int64()))),
        (col("i64") >= -1.5, GreaterThanOrEqual(I("i64"), pa.scalar(-1, pa.int64()))),
        (col("i64") < -1.5, LessThanOrEqual(I("i64"), pa.scalar(-2, pa.int64()))),
        (col("i32") < "2.5", LessThanOrEqual(I("i32"), pa.scalar(2, pa.int32()))),
        # Out of range: decided for every non-null row.
        (col("i8") < 1000, IsNotNull(I("i8"))),
        (col("i8") <= 1000, IsNotNull(I("i8"))),
        (col("i8") > 1000, AlwaysFalse()),
        (col("i8") == 1000, AlwaysFalse()),
        (col("i8") != 1000, IsNotNull(I("i8"))),
        (col("i8") > -129, IsNotNull(I("i8"))),
        (col("i8") < -129, AlwaysFalse()),
        (col("u8") >= -1, IsNotNull(I("u8"))),
        (col("u64") == 2**64, AlwaysFalse()),
        (col("u64") < 2**64, IsNotNull(I("u64"))),
        (col("i64") > 2**63, AlwaysFalse()),
        (col("i64") < math.inf, IsNotNull(I("i64"))),
        (col("i64") > -math.inf, IsNotNull(I("i64"))),
        (col("i64") == math.inf, AlwaysFalse()),
        # NaN sorts above every number: against an integer column it is just "above".
        (col("i64") < math.nan, IsNotNull(I("i64"))),
        (col("i64") == math.nan, AlwaysFalse()),
        (col("i64") > math.nan, AlwaysFalse()),
        # Decimals: exact, on the column's scale.
        (col("dec") == decimal.Decimal("1.005"), AlwaysFalse()),
        (
            col("dec") < 1.005,
            LessThanOrEqual(I("dec"), pa.scalar(decimal.Decimal("1.00"), pa.decimal128(10, 2))),
        ),
        (
            col("dec") > "1.005",
            GreaterThanOrEqual(I("dec"), pa.scalar(decimal.Decimal("1.01"), pa.decimal128(10, 2))),
        ),
        (col("dec") > 10**8, AlwaysFalse()),
        (col("dec") < 10**8, IsNotNull(I("dec"))),
        # Dates against timestamps with a time of day.
        (col("day") == dt.datetime(2024, 1, 2, 3), AlwaysFalse()),
        (col("day") != dt.datetime(2024, 1, 2, 0, 0, 1), IsNotNull(I("day"))),
        # Text is cast to DATE first, as SQL does: its time of day is dropped.
        (
            col("day") != "2024-01-02 00:00:01",
            NotEqualTo(I("day"), pa.scalar(dt.date(2024, 1, 2), pa.date32())),
        ),
        (
            col("day") >= "2024-01-02 00:00:00.000001",
            GreaterThanOrEqual(I("day"), pa.scalar(dt.date(2024, 1, 2), pa.date32())),
        ),
        (
            col("day") < dt.datetime(2024, 1, 2, 3),
            LessThanOrEqual(I("day"), pa.scalar(dt.date(2024, 1, 2), pa.date32())),
        ),
        (
            col("day") > dt.datetime(2024, 1, 2, 3),
            GreaterThanOrEqual(I("day"), pa.scalar(dt.date(2024, 1, 3), pa.date32())),
        ),
        (
            col("day") >= dt.datetime(2024, 1, 2, 0, 0, 0, 1),
            GreaterThanOrEqual(I("day"), pa.scalar(dt.date(2024, 1, 3), pa.date32())),
        ),
        # Sub-unit timestamps against a seconds column.
        (col("ts_s") == dt.datetime(2024, 1, 2, 0, 0, 0, 500), AlwaysFalse()),
        (
            col("ts_s") < dt.datetime(2024, 1, 2, 0, 0, 0, 500),
            LessThanOrEqual(I("ts_s"), pa.scalar(dt.datetime(2024, 1, 2), pa.timestamp("s"))),
        ),
        (
            col("ts_s") > pa.scalar(1704153600_000000001, pa.timestamp("ns")),
            GreaterThanOrEqual(I("ts_s"), pa.scalar(dt.datetime(2024, 1, 2, 0, 0, 1), pa.timestamp("s"))),
        ),
        # Text digits past microseconds count only against a nanosecond column.
        (
            col("ts_s") > "2024-01-02 00:00:00.000000001",
            GreaterThan(I("ts_s"), pa.scalar(dt.datetime(2024, 1, 2), pa.timestamp("s"))),
        ),
        (
            col("ts_ns") > "2024-01-02 00:00:00.000000001",
            GreaterThan(I("ts_ns"), pa.scalar(1704153600_000000001, pa.timestamp("ns"))),
        ),
        (
            col("ts_us") >= pa.scalar(1704153600_000000001, pa.timestamp("ns")),
            GreaterThanOrEqual(I("ts_us"), pa.scalar(1704153600_000001, pa.timestamp("us"))),
        ),
        (col("ts_ms") == pa.scalar(1704153600_000001, pa.timestamp("us")), AlwaysFalse()),
        # NaN literals against float columns become isnan forms.
        (col("f64") == math.nan, IsNaN(I("f64"))),
        (col("f64") != math.nan, IsNotNaN(I("f64"))),
        (col("f64") < math.nan, IsNotNaN(I("f64"))),
        (col("f64") <= math.nan, IsNotNull(I("f64"))),
        (col("f64") > math.nan, AlwaysFalse()),
        (col("f64") >= math.nan, IsNaN(I("f64"))),
        (col("f32") == decimal.Decimal("NaN"), IsNaN(I("f32"))),
        (col("f64") == pa.scalar(math.nan), IsNaN(I("f64"))),  # a NaN scalar of the column type too
        # Beyond the largest finite float: strictly between it and infinity (+inf and NaN are above).
        (col("f32") > 1e39, GreaterThanOrEqual(I("f32"), pa.scalar(math.inf, pa.float32()))),
        (
            col("f32") < 1e39,
            LessThanOrEqual(I("f32"), pa.scalar(float(np.finfo(np.float32).max), pa.float32())),
        ),
        (col("f32") == 1e39, AlwaysFalse()),
        (col("f64") < -(10**400), LessThanOrEqual(I("f64"), pa.scalar(-math.inf))),
        (col("f64") > -(10**400), GreaterThanOrEqual(I("f64"), pa.scalar(-np.finfo(np.float64).max))),
        # isnan on a column without NaN values.
        (col("i64").is_nan(), AlwaysFalse()),
        (col("i64").is_not_nan(), IsNotNull(I("i64"))),
        (col("s").is_nan(), AlwaysFalse()),
        (col("f32").is_nan(), IsNaN(I("f32"))),
        (col("req").is_null(), AlwaysFalse()),
        (col("req").is_not_null(), IsNotNull(I("req"))),
        (col("tags").is_null(), IsNull(I("tags"))),  # IS NULL works on any type
        # Empty prefix: every non-null value has it.
        (col("s").starts_with(""), IsNotNull(I("s"))),
        (col("s").not_starts_with(""), AlwaysFalse()),
        (col("ls").starts_with(b"ab"), StartsWith(I("ls"), pa.scalar("ab"))),
        (col("bin").starts_with("é"), StartsWith(I("bin"), pa.scalar("é".encode(), pa.binary()))),
        # Substrings: text as a string scalar; the empty one is in every non-null string.
        (col("s").contains("b'c"), Contains(I("s"), pa.scalar("b'c"))),
        (col("ls").not_contains(b"\xc3\xa9"), NotContains(I("ls"), pa.scalar("é"))),
        (col("dict").contains("x"), Contains(I("dict"), pa.scalar("x"))),
        (col("st.y.z").contains("x"), Contains(I("st.y.z"), pa.scalar("x"))),
        (col("s").contains(""), IsNotNull(I("s"))),
        (col("s").not_contains(""), AlwaysFalse()),
        (~col("s").contains(""), AlwaysFalse()),
        # Words: lower-cased as the text is (arrow's utf8_lower: İ is i, not i + a combining dot).
        (col("s").contains_term("ÉtÉ2024"), ContainsTerm(I("s"), pa.scalar("été2024"))),
        (col("s").contains_term("İZMİR"), ContainsTerm(I("s"), pa.scalar("izmir"))),
        (~col("dict").contains_term("Word"), NotContainsTerm(I("dict"), pa.scalar("word"))),
        # NOT is pushed down before folding.
        (~(col("i64") < 1.5), GreaterThanOrEqual(I("i64"), pa.scalar(2, pa.int64()))),
        (Not(col("i8") < 1000), AlwaysFalse()),
        (Not(col("f64") > 1.0), LessThanOrEqual(I("f64"), pa.scalar(1.0))),
        ((col("i64") == 1.5) | (col("i8") > 1000), AlwaysFalse()),
        ((col("i64") == 1.5) | (col("i8") < 1000), IsNotNull(I("i8"))),
    ],
)
def test_folding(expr: Expression, expected: Expression) -> None:
    assert bind(expr) == expected


# ---------------------------------------------------------------------------------- IN lists


def arr(values: list[Any], t: pa.DataType) -> pa.Array:
    return pa.array(values, type=t)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("i64").isin([1, 2, 3]), In(I("i64"), arr([1, 2, 3], pa.int64()))),
        # Out-of-range and between-integer values match no row: they drop out.
        (col("i8").isin([1, 1000, 2]), In(I("i8"), arr([1, 2], pa.int8()))),
        (col("i8").isin([1, 1000]), EqualTo(I("i8"), pa.scalar(1, pa.int8()))),
        (col("i8").isin([1000, 2000]), AlwaysFalse()),
        (col("i64").isin([1.5, 2, 2**70]), EqualTo(I("i64"), pa.scalar(2, pa.int64()))),
        (col("i8").notin([1000, 2000]), IsNotNull(I("i8"))),
        (col("i8").notin([1, 2, 1000]), NotIn(I("i8"), arr([1, 2], pa.int8()))),
        # NaN in the list: NaN rows match IN and never match NOT IN.
        (
            col("f64").isin([math.nan, 1.0, 2.0]),
            Or(In(I("f64"), arr([1.0, 2.0], pa.float64())), IsNaN(I("f64"))),
        ),
        (col("f64").isin([math.nan, 1.0]), Or(EqualTo(I("f64"), pa.scalar(1.0)), IsNaN(I("f64")))),
        (col("f64").notin([math.nan, 1.0]), And(NotEqualTo(I("f64"), pa.scalar(1.0)), IsNotNaN(I("f64")))),
        (
            col("f64").notin([math.nan, 1.0, 2.0]),
            And(NotIn(I("f64"), arr([1.0, 2.0], pa.float64())), IsNotNaN(I("f64"))),
        ),
        # -0.0 = 0.0: both zeros are listed so hash lookups see either.
        (col("f64").isin([-0.0, 1.0]), In(I("f64"), arr([0.0, 1.0, -0.0], pa.float64()))),
        (col("f32").isin([0.0, 1.5]), In(I("f32"), arr([0.0, 1.5, -0.0], pa.float32()))),
        (
            col("dec").isin([decimal.Decimal("1.005"), 2]),
            EqualTo(I("dec"), pa.scalar(decimal.Decimal("2.00"), pa.decimal128(10, 2))),
        ),
        (
            col("day").isin(["2024-01-02", dt.date(2024, 1, 3)]),
            In(I("day"), arr([dt.date(2024, 1, 2), dt.date(2024, 1, 3)], pa.date32())),
        ),
        (col("s").isin(["a", "é"]), In(I("s"), arr(["a", "é"], pa.string()))),
        (col("dict").notin(["a", "b"]), NotIn(I("dict"), arr(["a", "b"], pa.string()))),
        (
            col("ts_s").isin([dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, 0, 0, 0, 1)]),
            EqualTo(I("ts_s"), pa.scalar(dt.datetime(2024, 1, 2), pa.timestamp("s"))),
        ),
    ],
)
def test_in_lists(expr: Expression, expected: Expression) -> None:
    assert bind(expr) == expected


def test_large_in_list_binds_to_an_array() -> None:
    values = list(range(0, 300_000, 3))
    bound = bind(col("i64").isin(values))
    assert type(bound) is In
    assert bound.values.type == pa.int64()
    assert sorted(bound.values.to_pylist()) == values
    # Out-of-range values in a large list take the exact path and drop out.
    bound8 = bind(col("i16").isin([*range(100), 10**6]))
    assert sorted(bound8.values.to_pylist()) == list(range(100))


# --------------------------------------------------------------------------------- BindErrors


@pytest.mark.parametrize(
    ("expr", "fragments"),
    [
        (col("i64") == "abc", ["'i64'", "int64", "'abc'"]),
        (col("i64") == True, ["'i64'", "int64", "True"]),  # noqa: E712
        (col("s") == 5, ["'s'", "string", "5"]),
        (col("bin") == 5, ["'bin'", "binary", "5"]),
        (col("flag") == 1, ["'flag'", "bool", "1"]),
        (col("day") == 5, ["'day'", "date32", "5"]),
        (col("day") == "2024-02-30", ["'day'", "date32", "'2024-02-30'"]),
        (col("ts_us") == "yesterday", ["'ts_us'", "timestamp[us]", "'yesterday'"]),
        (col("dec") == math.nan, ["'dec'", "decimal128(10, 2)", "nan"]),
        (col("st.x") == "x", ["'st.x'", "int32", "'x'"]),
        (col("i64").isin([1, "x"]), ["'i64'", "int64", "'x'"]),
        (col("s") == b"\xff", ["'s'", "string", "xff"]),
    ],
)
def test_uncoercible_literal_names_column_type_and_literal(expr: Expression, fragments: list[str]) -> None:
    with pytest.raises(BindError) as info:
        bind(expr)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("expr", "fragments"),
    [
        (col("nope") == 1, ["'nope'", "i64"]),
        (col("st.q") == 1, ["'st.q'", "'q'", "x, y"]),
        (col("st.y.q").is_null(), ["'st.y.q'", "'q'"]),
        (col("i64.x") == 1, ["'i64'", "int64", "'x'"]),
    ],
)
def test_unknown_columns(expr: Expression, fragments: list[str]) -> None:
    with pytest.raises(BindError) as info:
        bind(expr)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_starts_with_needs_a_text_column() -> None:
    with pytest.raises(BindError, match=r"'i64'.*int64"):
        bind(col("i64").starts_with("1"))
    with pytest.raises(BindError):
        bind(col("s").starts_with(b"\xff"))  # not UTF-8 for a string column
    with pytest.raises(BindError, match="tags"):
        bind(col("tags") == 1)  # lists have no order the rules know


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (col("i64").contains("1"), r"contains needs a string column; 'i64' has type int64"),
        (col("bin").contains("a"), r"contains needs a string column; 'bin' has type binary"),
        (col("tags").not_contains("a"), r"not_contains needs a string column"),
        (col("s").contains(5), r"contains on column 's' needs text, got 5"),
        (col("s").contains(b"\xff"), r"not UTF-8"),
        (col("i64").contains_term("a"), r"contains_term needs a string column; 'i64' has type int64"),
        (col("s").contains_term(""), r"contains_term needs a word, got an empty string \(column 's'\)"),
        (col("s").contains_term("two words"), r"one word of letters and digits, got 'two words'"),
        (col("s").not_contains_term("e-mail"), r"one word of letters and digits, got 'e-mail'"),
        (col("s").contains_term("café\u0301"), r"one word"),  # a combining accent is no letter
        (col("s").contains_term(7), r"needs text, got 7"),
    ],
)
def test_text_search_binding_errors(expr: Expression, message: str) -> None:
    with pytest.raises(BindError, match=message):
        bind(expr)


def test_bind_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        bind(col("nope") == 1)


# ----------------------------------------------------------------------------- case handling


def test_case_insensitive_binding() -> None:
    schema = pa.schema([("Name", pa.string()), ("S", pa.struct([("Inner", pa.int64())]))])
    with pytest.raises(BindError):
        (col("name") == "x").bind(schema)
    bound = (col("name") == "x").bind(schema, case_sensitive=False)
    assert bound == EqualTo(resolve(schema, "Name"), pa.scalar("x"))
    assert bound.term.name == "Name"
    nested = (col("s.INNER") > 1).bind(schema, case_sensitive=False)
    assert nested.term.path == ("S", "Inner")


def test_case_insensitive_ambiguity() -> None:
    schema = pa.schema([("a", pa.int64()), ("A", pa.int64())])
    assert (col("A") > 1).bind(schema).term.name == "A"
    with pytest.raises(BindError, match="ambiguous"):
        (col("a") > 1).bind(schema, case_sensitive=False)
