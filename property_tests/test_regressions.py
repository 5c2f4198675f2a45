"""Falsifying examples the property suites found, kept as plain tests against DuckDB.

Each one checks that DuckDB reads ``str(expr)`` as the library binds it (same rows as the bound
expression and the row filter) and that pruning on the exact stats keeps the matching file.
"""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import hudi_expr as hx
from hudi_expr import col
from property_tests.oracle import evaluate, rows_where

D = decimal.Decimal


def _one(s: pa.Scalar) -> pa.Array:
    """A one-element array of a scalar (timestamps through their integer: ns fit no datetime)."""
    if not s.is_valid:
        return pa.nulls(1, s.type)
    if pa.types.is_timestamp(s.type):
        return pa.array([s.value], pa.int64()).cast(s.type)
    return pa.array([s.as_py()], s.type)


def exact_stats(data: pa.Table) -> hx.FileStats:
    """One file holding ``data``, with exact min/max/null counts of every column."""
    columns = {}
    for name in data.column_names:
        arr = data.column(name).combine_chunks()
        lo_hi = pc.min_max(arr)
        columns[name] = hx.ColumnStats(
            min=_one(lo_hi["min"]),
            max=_one(lo_hi["max"]),
            null_count=pa.array([arr.null_count], pa.int64()),
            nan_count=pa.array([0], pa.int64()),
        )
    return hx.FileStats(["f0"], [data.num_rows], columns, data.schema)


def check(data: pa.Table, expr: hx.Expression, expected: set[int]) -> None:
    """DuckDB, the bound expression and the row filter select ``expected``; pruning agrees."""
    schema = data.schema
    table = data.append_column("__file", pa.array([0] * data.num_rows, pa.int32()))
    table = table.append_column("__row", pa.array(range(data.num_rows), pa.int64()))
    _, (truth, bound_truth) = evaluate(table, [str(expr), str(expr.bind(schema))])
    assert rows_where(truth) == expected, str(expr)
    assert rows_where(bound_truth) == expected, str(expr.bind(schema))
    assert set(table.filter(expr.to_pyarrow(schema)).column("__row").to_pylist()) == expected
    stats = exact_stats(data)
    if expected:
        assert hx.might_match(expr, stats).to_pylist() == [True]
    if hx.all_match(expr, stats).to_pylist() == [True]:
        assert expected == set(range(data.num_rows))


def test_decimal_literal_of_38_digits_binds_exactly() -> None:
    # The default decimal context (28 digits) rounded the bound literal: the file was pruned.
    value = D("-99999999999999999999999999999999999999")
    data = pa.table({"d": pa.array([value, D(0)], pa.decimal128(38, 0))})
    assert (col("d") == value).bind(data.schema).literal.as_py() == value
    check(data, col("d") == value, {0})
    big = D("123456789012345678901234567890123456.78")
    data = pa.table({"d": pa.array([big], pa.decimal128(38, 2))})
    check(data, col("d") == big, {0})
    # 39 digits: no DuckDB literal holds it, but binding folds it exactly onto the column's scale.
    bound = (col("d") < D("123456789012345678901234567890123456.785")).bind(data.schema)
    assert bound == hx.LessThanOrEqual(bound.term, pa.scalar(big, pa.decimal128(38, 2)))


def test_float_literal_in_exponent_form_compares_exactly_with_integers() -> None:
    # '1e+16' is a DOUBLE in DuckDB (10**16 + 1 = 1e16 there); printed positionally it is exact.
    data = pa.table({"i": pa.array([10**16 + 1, 10**16], pa.int64())})
    check(data, col("i") == 1e16, {1})
    check(data, col("i") > 1e16, {0})
    assert "e" not in str(col("i") == 1e16)


def test_float_literal_in_exponent_form_rounds_to_float32() -> None:
    # Binding rounds 1e-05 to float32; DuckDB did so for 0.00001 (a DECIMAL) but not for 1e-05.
    data = pa.table({"f": pa.array([np.float32(1e-05), np.float32(1.0)], pa.float32())})
    check(data, col("f") == 1e-05, {0})
    check(data, col("f") < 1e-05, set())
    check(data, col("f") <= 1e-05, {0})


def test_decimal_below_one_with_38_digits_stays_a_decimal() -> None:
    # DuckDB counts the 0 of 0.xxx: 38 fraction digits after it made the literal a DOUBLE.
    data = pa.table({"d": pa.array([D("-0.99999999999999999999999999999999999999")], pa.decimal128(38, 38))})
    check(data, col("d") == D("-0.99999999999999999999999999999999999998"), set())
    check(data, col("d") < D("-0.99999999999999999999999999999999999998"), {0})


def test_nanosecond_timestamp_literal_keeps_its_nanoseconds() -> None:
    # A TIMESTAMP '...000000001' literal is truncated to microseconds by DuckDB.
    data = pa.table({"ts": pa.array([1_000_000_001, 1_000_000_000], pa.timestamp("ns"))})
    check(data, col("ts") == pa.scalar(1_000_000_001, pa.timestamp("ns")), {0})
    check(data, col("ts") > pa.scalar(1_000_000_000, pa.timestamp("ns")), {0})


def test_binary_prefix_prints_valid_duckdb() -> None:
    # DuckDB's starts_with has no BLOB overload: the printed SQL did not bind at all.
    data = pa.table({"b": pa.array([b"\xc3\xa9x", b"a", None], pa.binary())})
    check(data, col("b").starts_with(b"\xc3"), {0})
    check(data, col("b").not_starts_with(b"\xc3"), {1})
    check(data, col("b").starts_with(b"\xff"), set())


def test_text_with_a_time_against_a_date_column_is_cast_to_a_date() -> None:
    # SQL casts the text to DATE (the time is dropped): d = '2024-01-02 12:00' holds for that day.
    data = pa.table({"d": pa.array([dt.date(2024, 1, 2), dt.date(2024, 1, 1)], pa.date32())})
    check(data, col("d") == "2024-01-02 12:00:00", {0})
    check(data, col("d") < "2024-01-02 12:00:00", {1})
    check(data, col("d") >= "2024-01-01T23:59:59.5+05:00", {0, 1})


def test_text_beyond_microseconds_is_truncated_for_a_microsecond_column() -> None:
    # DuckDB casts the text to TIMESTAMP (microseconds): the 7th digit is dropped, not compared.
    data = pa.table({"ts": pa.array([1_000_001, 1_000_002], pa.timestamp("us"))})
    check(data, col("ts") == "1970-01-01 00:00:01.0000019", {0})
    check(data, col("ts") > "1970-01-01 00:00:01.0000019", {1})
    data = pa.table({"ts": pa.array([1_000_000_001], pa.timestamp("ns"))})
    check(data, col("ts") == "1970-01-01 00:00:01.000000001", {0})


def test_text_with_an_offset_against_a_wall_clock_column_ignores_it() -> None:
    # Cast to TIMESTAMP (no zone), the offset in the text is dropped, not applied.
    data = pa.table({"ts": pa.array([dt.datetime(1970, 1, 1, 5)], pa.timestamp("us"))})
    check(data, col("ts") == "1970-01-01 05:00:00+05:00", {0})
    check(data, col("ts") == "1970-01-01T05:00:00Z", {0})
    tz = pa.table({"ts": pa.array([dt.datetime(1970, 1, 1, tzinfo=dt.UTC)], pa.timestamp("us", "UTC"))})
    check(tz, col("ts") == "1970-01-01 05:00:00+05:00", {0})  # applied against TIMESTAMPTZ


def test_integer_literal_rounds_to_float32_once() -> None:
    # float(2**54 + 2**30 + 1) is the float32 tie 2**54 + 2**30, which rounds to even (2**54);
    # DuckDB rounds the integer to FLOAT directly: 2**54 + 2**31. Binding must too.
    lit = 2**54 + 2**30 + 1
    data = pa.table({"f": pa.array([2.0**54, 2.0**54 + 2**31], pa.float32())})
    check(data, col("f") == lit, {1})
    check(data, col("f") < lit, {0})
    check(data, col("f") == D(lit), {1})


def test_bound_date_past_year_9999_prints() -> None:
    # Binding folds d > '9999-12-31 00:00:00.000001' to d >= 10000-01-01, which no Python date holds.
    data = pa.table({"d": pa.array([dt.date(9999, 12, 31)], pa.date32())})
    check(data, col("d") > dt.datetime(9999, 12, 31, 0, 0, 0, 1), set())
    check(data, col("d") <= "9999-12-31 23:59:59", {0})


def test_float_literal_means_its_repr_against_every_column_type() -> None:
    # 2.0**60 prints as 1152921504606847000 (a DECIMAL to DuckDB): integer columns bound the exact
    # 2**60 while decimal columns bound the repr, so the same literal meant two numbers.
    data = pa.table(
        {
            "i": pa.array([2**60, 1152921504606847000], pa.int64()),
            "d": pa.array([D(2**60), D(1152921504606847000)], pa.decimal128(38, 0)),
        }
    )
    check(data, col("i") == 2.0**60, {1})
    check(data, col("d") == 2.0**60, {1})
    check(data, col("i") > 2.0**60, set())
