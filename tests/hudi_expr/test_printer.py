"""``str(expr)``: SQL text with minimal parentheses, quoted odd names and typed literals."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pytest

from adapters.duckdb import register_macros
from hudi_expr import AlwaysFalse, AlwaysTrue, And, Expression, Not, Or, col, to_sql


@pytest.mark.parametrize(
    ("expr", "sql"),
    [
        # OR inside AND needs parentheses; AND inside OR does not (AND binds tighter).
        ((col("a") > 5) & ((col("b") < 3) | col("c").is_null()), "a > 5 AND (b < 3 OR c IS NULL)"),
        (((col("a") > 5) & (col("b") < 3)) | (col("c") == 1), "a > 5 AND b < 3 OR c = 1"),
        (
            And(Or(col("a") == 1, col("b") == 2), Or(col("c") == 3, col("d") == 4)),
            "(a = 1 OR b = 2) AND (c = 3 OR d = 4)",
        ),
        # Chains of one connective print flat, however they were nested.
        (Or(col("a") == 1, Or(col("b") == 2, col("c") == 3)), "a = 1 OR b = 2 OR c = 3"),
        ((col("a") > 1) & ((col("b") > 2) & (col("c") > 3)), "a > 1 AND b > 2 AND c > 3"),
        (Not((col("a") > 5) & (col("b") < 3)), "NOT (a > 5 AND b < 3)"),
        (Not(col("a") > 5), "NOT a > 5"),  # NOT binds looser than a comparison
        (Not(Not(col("a") > 5) | (col("b") == 1)), "NOT (NOT a > 5 OR b = 1)"),
        (col("a").between(1, 9), "a >= 1 AND a <= 9"),
        (AlwaysTrue(), "TRUE"),
        (AlwaysFalse(), "FALSE"),
        (col("a").isin([1, 2, 3]), "a IN (1, 2, 3)"),
        (col("a").notin(["x", "y"]), "a NOT IN ('x', 'y')"),
        (col("a").is_not_null(), "a IS NOT NULL"),
        (col("f").is_nan(), "isnan(f)"),
        (col("f").is_not_nan(), "NOT isnan(f)"),
        (col("s").starts_with("ab"), "starts_with(s, 'ab')"),
        (col("s").not_starts_with("o'k"), "NOT starts_with(s, 'o''k')"),
        (col("s").contains("o'k"), "contains(s, 'o''k')"),
        (col("s").not_contains("%_"), "NOT contains(s, '%_')"),  # no LIKE: nothing to escape
        (col("s").contains_term("Word"), "contains_term(s, 'Word')"),
        (col("s").not_contains_term("été"), "NOT contains_term(s, 'été')"),
        (~col("s").contains("x") | col("a").is_null(), "NOT contains(s, 'x') OR a IS NULL"),
    ],
)
def test_structure(expr: Expression, sql: str) -> None:
    assert str(expr) == sql
    assert to_sql(expr) == sql


@pytest.mark.parametrize(
    ("expr", "sql"),
    [
        (col("plain_Name1") == 1, "plain_Name1 = 1"),
        (col("my col") == 1, '"my col" = 1'),
        (col('we"ird') == 1, '"we""ird" = 1'),
        (col("1abc") == 1, '"1abc" = 1'),
        (col("s.x") == 1, "s.x = 1"),  # a struct path
        (col("s.my field") == 1, 's."my field" = 1'),
        (col("é") == 1, '"é" = 1'),
    ],
)
def test_column_quoting(expr: Expression, sql: str) -> None:
    assert str(expr) == sql


@pytest.mark.parametrize(
    ("expr", "sql"),
    [
        (col("d") == dt.date(2024, 1, 2), "d = DATE '2024-01-02'"),
        (col("t") == dt.datetime(2024, 1, 2, 3, 4, 5), "t = TIMESTAMP '2024-01-02 03:04:05'"),
        (
            col("t") == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            "t = TIMESTAMPTZ '2024-01-02 03:04:05+00:00'",
        ),
        (col("m") == decimal.Decimal("1.50"), "m = 1.50"),
        (col("s") == "it's", "s = 'it''s'"),
        (col("s") == "é", "s = 'é'"),
        (col("b") == b"\x00\xff", "b = '\\x00\\xFF'::BLOB"),
        (col("f") == math.nan, "f = CAST('NaN' AS DOUBLE)"),
        (col("f") > math.inf, "f > CAST('Infinity' AS DOUBLE)"),
        (col("f") > -math.inf, "f > CAST('-Infinity' AS DOUBLE)"),
        (col("f") == 1.5, "f = 1.5"),
        (col("x") == True, "x = TRUE"),  # noqa: E712
        (col("x") == -7, "x = -7"),
    ],
)
def test_typed_literals(expr: Expression, sql: str) -> None:
    assert str(expr) == sql


def test_bound_literals_print_in_the_column_type() -> None:
    schema = pa.schema(
        [
            ("t", pa.timestamp("us", "UTC")),
            ("d", pa.date32()),
            ("m", pa.decimal128(10, 2)),
            ("i", pa.int8()),
            ("f", pa.float32()),
        ]
    )
    assert (
        str((col("t") == dt.datetime(2024, 1, 2, 3, 4, 5)).bind(schema))
        == "t = TIMESTAMPTZ '2024-01-02 03:04:05.000000Z'"
    )
    assert str((col("d") == "2024-01-02").bind(schema)) == "d = DATE '2024-01-02'"
    assert str((col("m") < 1.005).bind(schema)) == "m <= 1.00"
    assert str(col("i").isin([1, 2, 1000]).bind(schema)) == "i IN (1, 2)"
    assert str((col("f") == 0.1).bind(schema)) == f"f = {float(pa.scalar(0.1, pa.float32()).as_py())}"
    assert str((~(col("i") > 5)).bind(schema)) == "i <= 5"


def test_repr_names_the_node() -> None:
    assert repr(col("a") > 5) == "GreaterThan[a > 5]"
    assert repr((col("a") > 5) & (col("b") < 1)) == "And[a > 5 AND b < 1]"


# ------------------------------------------------------------------ the text is SQL DuckDB reads

ROWS = {
    "a": [1, 5, 9, None],
    "my col": ["x", "it's", "é", None],
    "d": [dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 1, 3)],
    "m": [decimal.Decimal("1.50"), decimal.Decimal("2.00"), None, decimal.Decimal("0.10")],
}


@pytest.mark.parametrize(
    ("expr", "rows"),
    [
        ((col("a") > 3) & ((col("a") < 6) | col("d").is_null()), [1, 2]),
        (((col("a") > 3) & (col("a") < 6)) | (col("a") == 1), [0, 1]),
        (Not((col("a") > 3) & (col("a") < 6)), [0, 2]),
        (col("my col") == "it's", [1]),
        (col("my col").isin(["x", "é"]), [0, 2]),
        (col("my col").starts_with("é"), [2]),
        (col("my col").contains("'"), [1]),
        (col("my col").not_contains("x"), [1, 2]),
        (col("my col").contains_term("IT"), [1]),  # it's is the terms it and s
        (col("my col").not_contains_term("s"), [0, 2]),
        (col("d") == dt.date(2024, 1, 2), [1]),
        (col("d") >= dt.date(2024, 1, 2), [1, 3]),
        (col("m") == decimal.Decimal("1.5"), [0]),
        (col("a").notin([1, 9]), [1]),
    ],
)
def test_duckdb_reads_the_text(expr: Expression, rows: list[int]) -> None:
    duckdb = pytest.importorskip("duckdb")
    table = pa.table({**ROWS, "row": list(range(4))}, schema=None)
    con = duckdb.connect()
    register_macros(con)  # contains_term
    con.register("t", table)
    got = [r[0] for r in con.execute(f"SELECT row FROM t WHERE {expr} ORDER BY row").fetchall()]
    assert got == rows


def test_every_duckdb_keyword_as_a_column_name_reads_as_the_column() -> None:
    """A column named like any DuckDB keyword prints so DuckDB reads the column (``at = 1`` is a
    syntax error, ``true = 1`` the literal): found by the merge-on-read property test, column
    ``at``."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    keywords = [k for (k,) in con.execute("SELECT keyword_name FROM duckdb_keywords()").fetchall()]
    assert "at" in keywords
    for keyword in keywords:
        con.register("t", pa.table({keyword: [1, 2, None], "__pos": [0, 1, 2]}))
        checks = ((col(keyword) == 2, [1]), (col(keyword).is_null(), [2]), (~col(keyword).isin([1]), [1]))
        for expr, rows in checks:
            sql = f"SELECT __pos FROM t WHERE {expr} ORDER BY __pos"
            assert [r[0] for r in con.execute(sql).fetchall()] == rows, (keyword, sql)
        con.unregister("t")
