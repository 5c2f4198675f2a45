"""``to_pyarrow``: row filters with SQL semantics (NULL drops the row, NaN above all, -0.0 = 0.0)."""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from hudi_expr import AlwaysFalse, AlwaysTrue, Expression, Not, col

NAN, INF = math.nan, math.inf
UTC = dt.UTC

TABLE = pa.table(
    {
        "row": pa.array(range(8), pa.int64()),
        "i": pa.array([1, 5, None, 9, -3, 5, 0, None], pa.int64()),
        "i8": pa.array([1, 127, None, -128, 0, 5, 6, 7], pa.int8()),
        "f": pa.array([1.0, NAN, None, -0.0, 0.0, INF, -INF, 2.5], pa.float64()),
        "f32": pa.array([0.1, NAN, None, -0.0, 0.2, INF, -1.0, 0.1], pa.float32()),
        "s": pa.array(["apple", "banana", None, "é", "", "app", "zebra", "Apple"], pa.string()),
        "k": pa.array(["apple", "banana", None, "é", "", "app", "zebra", "Apple"]).dictionary_encode(),
        "b": pa.array([b"\x00", b"\xff\x01", None, b"\xff", b"", b"a", b"\x00\x01", b"z"], pa.binary()),
        "d": pa.array([dt.date(2024, 1, n) if n != 3 else None for n in range(1, 9)], pa.date32()),
        "t": pa.array([dt.datetime(2024, 1, 1, h, tzinfo=UTC) for h in range(8)], pa.timestamp("ns", "UTC")),
        "st": pa.array(
            [{"x": 1}, {"x": 2}, None, {"x": None}, {"x": 4}, {"x": 5}, {"x": 6}, {"x": 7}],
            pa.struct([("x", pa.int32())]),
        ),
    }
)


def rows(expr: Expression) -> list[int]:
    return TABLE.filter(expr.to_pyarrow(TABLE.schema)).column("row").to_pylist()


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # f = [1.0, NaN, NULL, -0.0, 0.0, +inf, -inf, 2.5]: NaN is above +inf and equals itself.
        (col("f") > 1, [1, 5, 7]),
        (col("f") >= 1, [0, 1, 5, 7]),
        (col("f") < 1, [3, 4, 6]),
        (col("f") <= 1, [0, 3, 4, 6]),
        (col("f") == 0.0, [3, 4]),
        (col("f") == -0.0, [3, 4]),
        (col("f") != 0.0, [0, 1, 5, 6, 7]),
        (col("f") == INF, [5]),
        (col("f") > INF, [1]),
        (col("f") == NAN, [1]),
        (col("f") != NAN, [0, 3, 4, 5, 6, 7]),
        (col("f") > NAN, []),
        (col("f") >= NAN, [1]),
        (col("f") < NAN, [0, 3, 4, 5, 6, 7]),
        (col("f") <= NAN, [0, 1, 3, 4, 5, 6, 7]),
        (col("f") > 10**400, [1, 5]),
        (col("f") < 10**400, [0, 3, 4, 6, 7]),
        (col("f").isin([0.0, 2.5]), [3, 4, 7]),
        (col("f").isin([-0.0, 7.0]), [3, 4]),
        (col("f").isin([NAN, 1.0]), [0, 1]),
        (col("f").notin([0.0, 2.5]), [0, 1, 5, 6]),
        (col("f").notin([NAN, 1.0]), [3, 4, 5, 6, 7]),
        (col("f").is_nan(), [1]),
        (col("f").is_not_nan(), [0, 3, 4, 5, 6, 7]),
        (col("f").is_null(), [2]),
        (col("f").is_not_null(), [0, 1, 3, 4, 5, 6, 7]),
        (~(col("f") > 1), [0, 3, 4, 6]),
        (Not(col("f") == NAN), [0, 3, 4, 5, 6, 7]),
        # f32 = [0.1, NaN, NULL, -0.0, 0.2, +inf, -1.0, 0.1]: literals rounded to float32.
        (col("f32") == 0.1, [0, 7]),
        (col("f32") > 0.1, [1, 4, 5]),
        (col("f32") > 1e39, [1, 5]),
        (col("f32") < 1e39, [0, 3, 4, 6, 7]),
        (col("f32") == 0, [3]),
        # i = [1, 5, NULL, 9, -3, 5, 0, NULL]
        (col("i") == 5, [1, 5]),
        (col("i") != 5, [0, 3, 4, 6]),
        (col("i") < 1.5, [0, 4, 6]),
        (col("i") > 1.5, [1, 3, 5]),
        (col("i") == 1.5, []),
        (col("i").isin([1, 9, 10**30]), [0, 3]),
        (col("i").notin([1, 9]), [1, 4, 5, 6]),
        (~col("i").isin([1, 9]), [1, 4, 5, 6]),
        (col("i").isin([]), []),
        (col("i").notin([]), [0, 1, 2, 3, 4, 5, 6, 7]),  # NOT IN () is TRUE even for NULL
        (col("i").is_nan(), []),
        (col("i").is_not_nan(), [0, 1, 3, 4, 5, 6]),
        (col("i").between(0, 5), [0, 1, 5, 6]),
        ((col("i") > 0) | col("i").is_null(), [0, 1, 2, 3, 5, 7]),
        (~((col("i") > 0) & (col("i") < 9)), [3, 4, 6]),
        (~((col("i") > 0) | col("i").is_null()), [4, 6]),
        # i8 = [1, 127, NULL, -128, 0, 5, 6, 7]
        (col("i8") < 1000, [0, 1, 3, 4, 5, 6, 7]),
        (col("i8") > 1000, []),
        (col("i8") != -129, [0, 1, 3, 4, 5, 6, 7]),
        (col("i8").notin([127, 1000]), [0, 3, 4, 5, 6, 7]),
        # s = ['apple', 'banana', NULL, 'é', '', 'app', 'zebra', 'Apple']: byte order
        (col("s") == "é", [3]),
        (col("s") > "z", [3, 6]),
        (col("s") < "b", [0, 4, 5, 7]),
        (col("s").starts_with("app"), [0, 5]),
        (col("s").not_starts_with("app"), [1, 3, 4, 6, 7]),
        (col("s").starts_with(""), [0, 1, 3, 4, 5, 6, 7]),
        (col("s").starts_with("é"), [3]),
        (col("s").isin(["apple", "é"]), [0, 3]),
        (col("s").contains("pp"), [0, 5, 7]),
        (col("s").contains("PP"), []),  # case-sensitive
        (col("s").not_contains("pp"), [1, 3, 4, 6]),
        (col("s").contains(""), [0, 1, 3, 4, 5, 6, 7]),
        (col("s").not_contains(""), []),
        (col("s").contains("é"), [3]),
        (col("s").contains_term("APPLE"), [0, 7]),  # lower-cased
        (col("s").not_contains_term("apple"), [1, 3, 4, 5, 6]),
        (col("s").contains_term("app"), [5]),  # a whole term, not a prefix of one
        (col("s").contains_term("É"), [3]),
        (col("s").notin(["apple", "é"]), [1, 4, 5, 6, 7]),
        # k: the same strings, dictionary encoded
        (col("k") == "é", [3]),
        (col("k") > "z", [3, 6]),
        (col("k").starts_with("app"), [0, 5]),
        (col("k").not_starts_with("app"), [1, 3, 4, 6, 7]),
        (col("k").isin(["apple", "é"]), [0, 3]),
        (col("k").contains("pp"), [0, 5, 7]),
        (col("k").not_contains_term("apple"), [1, 3, 4, 5, 6]),
        # b = [00, FF01, NULL, FF, '', 'a', 0001, 'z']: bytewise
        (col("b").starts_with(b"\xff"), [1, 3]),
        (col("b").starts_with(b"\x00"), [0, 6]),
        (col("b").not_starts_with(b"\xff"), [0, 4, 5, 6, 7]),
        (col("b") == b"\xff", [3]),
        (col("b") > b"a", [1, 3, 7]),
        # d = Jan 1, 2, NULL, 4..8
        (col("d") == "2024-01-04", [3]),
        (col("d") < dt.datetime(2024, 1, 4, 12), [0, 1, 3]),
        (col("d") == dt.datetime(2024, 1, 4, 12), []),
        (col("d").isin([dt.date(2024, 1, 1), dt.date(2024, 1, 3)]), [0]),
        # t = 2024-01-01 hour 0..7 UTC, nanoseconds
        (col("t") >= dt.datetime(2024, 1, 1, 6, tzinfo=UTC), [6, 7]),
        (col("t") > dt.datetime(2024, 1, 1, 1, 0, 0, 1), [2, 3, 4, 5, 6, 7]),
        (col("t") == pa.scalar(3600 * 10**9 + 1704067200 * 10**9, pa.timestamp("ns")), [1]),
        (col("t") < "2024-01-01T02:00:00+01:00", [0]),
        # st.x = [1, 2, NULL (struct NULL), NULL, 4, 5, 6, 7]
        (col("st.x") > 4, [5, 6, 7]),
        (col("st.x").is_null(), [2, 3]),
        (col("st.x").is_not_null(), [0, 1, 4, 5, 6, 7]),
        (col("st.x").notin([1, 2]), [4, 5, 6, 7]),
        (AlwaysTrue(), [0, 1, 2, 3, 4, 5, 6, 7]),
        (AlwaysFalse(), []),
    ],
)
def test_row_filter(expr: Expression, expected: list[int]) -> None:
    assert rows(expr) == expected


def test_bound_expression_needs_no_schema() -> None:
    bound = ((col("f") > 1) & col("s").is_not_null()).bind(TABLE.schema)
    assert TABLE.filter(bound.to_pyarrow()).column("row").to_pylist() == [1, 5, 7]


def test_unbound_without_schema_uses_literals_as_given() -> None:
    expr = (col("i") > 3) & (col("s") != "x")
    assert TABLE.filter(expr.to_pyarrow()).column("row").to_pylist() == [1, 3, 5]


def test_works_as_a_dataset_filter() -> None:
    dataset = ds.dataset(TABLE)
    expr = (col("f") > 1) | col("st.x").is_null()
    assert dataset.to_table(filter=expr.to_pyarrow(TABLE.schema)).column("row").to_pylist() == [1, 2, 3, 5, 7]


def test_wide_and_or_chains_keep_kleene_logic() -> None:
    # Large chains are grouped for Arrow; NULL must still drop rows, not turn into FALSE/TRUE wrongly.
    big_or = col("i").isin([1]) | col("i").isin([5])
    for v in range(100, 400):
        big_or = big_or | (col("i") == v)
    assert rows(big_or) == [0, 1, 5]
    assert rows(~big_or) == [3, 4, 6]
    big_and = col("i") > -10
    for v in range(100, 400):
        big_and = big_and & (col("i") != v)
    assert rows(big_and) == [0, 1, 3, 4, 5, 6]
    assert rows(~big_and) == []


def test_matches_a_numpy_reference_on_random_floats() -> None:
    rng = np.random.default_rng(1)
    values = rng.choice([NAN, -0.0, 0.0, 1.0, -1.0, INF, -INF, 2.5], size=200)
    valid = rng.random(200) > 0.2
    nan = np.isnan(values)
    table = pa.table({"row": np.arange(200), "x": pa.array(values, mask=~valid)})
    cases = [
        (col("x") > 0.0, valid & (nan | (values > 0))),
        (col("x") <= 1.0, valid & ~nan & (values <= 1)),
        (col("x") == -0.0, valid & (values == 0)),
        (col("x") != 1.0, valid & (nan | (values != 1))),
        (col("x").isin([0.0, NAN]), valid & (nan | (values == 0))),
        (col("x").notin([0.0, -1.0]), valid & (nan | ((values != 0) & (values != -1)))),
        (col("x").notin([0.0, NAN]), valid & ~nan & (values != 0)),
        (~(col("x") < 1.0), valid & (nan | (values >= 1))),
    ]
    for expr, want in cases:
        got = table.filter(expr.to_pyarrow(table.schema)).column("row").to_pylist()
        assert got == np.flatnonzero(want).tolist(), expr


def test_contains_term_splits_on_every_non_letter_non_digit() -> None:
    text = [
        "Hello, World!",
        "e-mail: Bob@Example.com",
        "ÉTÉ 2024",
        "x_y",
        "tab\there",
        "İstanbul",
        None,
        "de\u0301ja",
    ]
    table = pa.table({"row": range(len(text)), "s": pa.array(text, pa.large_string())})

    def matching(expr: Expression) -> list[int]:
        return table.filter(expr.to_pyarrow(table.schema)).column("row").to_pylist()

    assert matching(col("s").contains_term("world")) == [0]
    assert matching(col("s").contains_term("Example")) == [1]
    assert matching(col("s").contains_term("bob")) == [1]
    assert matching(col("s").contains_term("2024")) == [2]
    assert matching(col("s").contains_term("été")) == [2]
    assert matching(col("s").contains_term("y")) == [3]  # _ separates words
    assert matching(col("s").contains_term("here")) == [4]
    assert matching(col("s").contains_term("istanbul")) == [5]  # İ lower-cases to i
    assert matching(col("s").contains_term("de")) == [7]  # a combining accent separates words
    assert matching(col("s").not_contains_term("de")) == [0, 1, 2, 3, 4, 5]  # never the NULL row


def test_text_search_on_string_views_evaluates() -> None:
    # Arrow's string kernels take no string_view: the bound column is read as a large string.
    table = pa.table({"s": pa.array(["ab", "Cab d", None], pa.string_view())})
    for expr, want in [
        (col("s").contains("ab"), [True, True, None]),
        (col("s").contains_term("D"), [False, True, None]),
        (col("s").starts_with("a"), [True, False, None]),
    ]:
        got = ds.dataset(table).to_table(columns={"m": expr.to_pyarrow(table.schema)})
        assert got.column("m").to_pylist() == want, expr
