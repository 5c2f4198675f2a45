"""Monotonic functions of a column as terms: binding, refusal, JSON, printing, negation, bounds."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

import hudi_expr as hx
from hudi_expr import BindError, EqualTo, GreaterThan, LessThan, Reference
from hudi_expr.expressions import Applied, NotEqualTo
from hudi_expr.stats import FileStats
from hudi_expr.transforms import Add, Cast, DateTrunc, Multiply, Prefix, Year

SCHEMA = pa.schema(
    [
        ("i", pa.int32()),
        ("b", pa.int64()),
        ("q", pa.decimal128(15, 2)),
        ("f", pa.float64()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("tz", pa.timestamp("us", tz="UTC")),
        ("s", pa.string()),
    ]
)


def applied(transform: object, column: str) -> Applied:
    return Applied(transform, Reference(column))  # type: ignore[arg-type]


def test_terms_compare_by_value_and_round_trip_through_json() -> None:
    expr = (
        EqualTo(applied(Year(), "d"), 1995)
        & LessThan(applied(Multiply(decimal.Decimal("-1.5")), "q"), 5)
        & GreaterThan(applied(Cast(pa.decimal128(20, 4)), "q"), 1)
        & EqualTo(applied(DateTrunc("month"), "ts"), dt.datetime(1995, 3, 1))
        & EqualTo(Applied(Prefix(2), applied(Cast(pa.string()), "s")), "ab")
        & LessThan(applied(Add(-3), "i"), 0)
    )
    assert hx.from_json(expr.to_json()) == expr
    assert hash(applied(Year(), "d")) == hash(applied(Year(), "d"))
    assert applied(Add(1), "i") != applied(Add(2), "i")
    assert applied(DateTrunc("MONTH"), "d") == applied(DateTrunc("month"), "d")


def test_printed_as_duckdb_writes_them() -> None:
    assert str(EqualTo(applied(Year(), "d"), 1995)) == "year(d) = 1995"
    assert str(LessThan(applied(Add(-3), "i"), 0)) == "(i - 3) < 0"
    assert str(LessThan(applied(Multiply(-2), "i"), 0)) == "(i * (-2)) < 0"
    assert str(EqualTo(applied(Prefix(2), "s"), "ab")) == "left(s, 2) = 'ab'"
    assert str(GreaterThan(applied(Cast(pa.float64()), "q"), 1.5)) == "CAST(q AS DOUBLE) > 1.5"


def test_negation_is_exact_on_a_function_term() -> None:
    leaf = EqualTo(applied(Year(), "d"), 1995)
    assert ~leaf == NotEqualTo(applied(Year(), "d"), 1995)
    assert ~~leaf == leaf


@pytest.mark.parametrize(
    ("transform", "column", "why"),
    [
        (Add(1), "f", "integer and decimal columns only"),
        (Multiply(2), "s", "integer and decimal columns only"),
        (Year(), "tz", "session time zone"),
        (DateTrunc("day"), "i", "DATE or TIMESTAMP"),
        (Cast(pa.int16()), "i", "not known to keep the order"),  # narrowing may fail
        (Cast(pa.decimal128(5, 2)), "b", "not known to keep the order"),
        (Cast(pa.date32()), "tz", "not known to keep the order"),
        (Cast(pa.string()), "i", "not known to keep the order"),  # '10' < '9'
        (Prefix(1), "i", "string column"),
    ],
)
def test_functions_that_are_not_monotonic_on_the_type_do_not_bind(
    transform: object, column: str, why: str
) -> None:
    with pytest.raises(BindError, match=why):
        EqualTo(applied(transform, column), 1).bind(SCHEMA)


def test_result_types_hold_every_image() -> None:
    bound = LessThan(applied(Add(1), "b"), 0).bind(SCHEMA)
    assert isinstance(bound, LessThan) and bound.term.type == pa.decimal128(19, 0)  # beyond BIGINT
    bound = LessThan(applied(Multiply(3), "i"), 0).bind(SCHEMA)
    assert isinstance(bound, LessThan) and bound.term.type == pa.int64()
    bound = EqualTo(applied(DateTrunc("month"), "d"), dt.date(1995, 3, 1)).bind(SCHEMA)
    assert isinstance(bound, EqualTo) and bound.term.type == pa.timestamp("us")  # as DuckDB types it
    # A literal the result type cannot equal folds as for a column: year(d) = 1995.5 is FALSE.
    assert EqualTo(applied(Year(), "d"), 1995.5).bind(SCHEMA) == hx.AlwaysFalse()


def _stats(rows: list[dict[str, object]]) -> FileStats:
    return FileStats.from_pylist(rows, SCHEMA)


def _q(low: str, high: str) -> dict[str, object]:
    return {"min": decimal.Decimal(low), "max": decimal.Decimal(high), "null_count": 0}


def test_bounds_map_through_the_function() -> None:
    stats = _stats(
        [
            {"file": "a", "row_count": 2, "stats": {"q": _q("1.00", "2.00")}},
            {"file": "b", "row_count": 2, "stats": {"q": _q("3.00", "4.00")}},
        ]
    )
    # q * -2 maps [1, 2] to [-4, -2] and [3, 4] to [-8, -6]: the bounds swap.
    assert hx.might_match(LessThan(applied(Multiply(-2), "q"), -5), stats).to_pylist() == [False, True]
    assert hx.all_match(LessThan(applied(Multiply(-2), "q"), -5), stats).to_pylist() == [False, True]
    assert hx.might_match(GreaterThan(applied(Add(decimal.Decimal("0.5")), "q"), 4), stats).to_pylist() == [
        False,
        True,
    ]


def test_a_function_term_has_no_bloom_filter() -> None:
    # A bloom filter of d knows d's values, not year(d)'s: it must not rule the file out.
    bloom = hx.BloomFilter.for_entries(16, 0.01)
    bloom.add_all(pa.array([dt.date(1995, 6, 1)], pa.date32()))
    day = {"min": dt.date(1995, 6, 1), "max": dt.date(1995, 6, 1), "null_count": 0, "bloom": bloom}
    stats = _stats([{"file": "a", "row_count": 1, "stats": {"d": day}}])
    assert hx.might_match(EqualTo(applied(Year(), "d"), 1995), stats).to_pylist() == [True]
    assert hx.might_match(EqualTo(Reference("d"), dt.date(1995, 6, 2)), stats).to_pylist() == [False]


def test_a_column_named_like_a_function_is_not_the_function() -> None:
    # A parquet column may be called "year(d)"; its statistics are not those of year(d).
    schema = pa.schema([("d", pa.date32()), ("year(d)", pa.int64())])
    day = {"min": dt.date(1995, 6, 1), "max": dt.date(1995, 6, 1), "null_count": 0}
    other = {"min": 7, "max": 7, "null_count": 0}
    stats = FileStats.from_pylist(
        [{"file": "a", "row_count": 1, "stats": {"d": day, "year(d)": other}}], schema
    )
    both = EqualTo(Reference("year(d)"), 7) & EqualTo(applied(Year(), "d"), 1995)
    assert hx.might_match(both, stats).to_pylist() == [True]
    assert hx.all_match(both, stats).to_pylist() == [True]
