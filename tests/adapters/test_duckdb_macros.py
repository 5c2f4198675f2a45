"""DuckDB's ``contains_term`` macro keeps exactly the rows ``ContainsTerm.to_pyarrow`` keeps."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.duckdb import parse_predicate, register_macros
from hudi_expr import ContainsTerm, Expression, col
from hudi_expr.terms import normalize_term, tokenize


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    register_macros(con)
    register_macros(con)  # again: replaced, no error
    return con


def duckdb_values(con: duckdb.DuckDBPyConnection, table: pa.Table, sql: list[str]) -> list[list[bool | None]]:
    """Each SQL expression's value on every row of ``table`` (in order)."""
    con.register("t", table.append_column("__row", pa.array(np.arange(len(table)))))
    try:
        columns = ", ".join(f"({e})" for e in sql)
        rows = con.execute(f"SELECT {columns} FROM t ORDER BY __row").fetchall()
    finally:
        con.unregister("t")
    return [[row[i] for row in rows] for i in range(len(sql))]


def arrow_values(table: pa.Table, exprs: list[Expression]) -> list[list[bool | None]]:
    columns = {f"m{i}": e.to_pyarrow(table.schema) for i, e in enumerate(exprs)}
    result = ds.dataset(table).to_table(columns=columns)
    return [result.column(f"m{i}").to_pylist() for i in range(len(exprs))]


def every_character() -> pa.StringArray:
    """Every Unicode scalar value but NUL, one per row."""
    points = np.concatenate([np.arange(1, 0xD800), np.arange(0xE000, 0x110000)]).astype("<u4")
    return pa.array(list(points.tobytes().decode("utf-32-le")), pa.string())


def test_lower_case_is_arrows_for_every_character(con: duckdb.DuckDBPyConnection) -> None:
    chars = every_character()
    (got,) = duckdb_values(con, pa.table({"c": chars}), ["utf8_lower(c)"])
    want = pc.utf8_lower(chars).to_pylist()
    wrong = [(hex(ord(c)), g, w) for c, g, w in zip(chars.to_pylist(), got, want, strict=True) if g != w]
    assert not wrong


def test_term_characters_are_arrows_for_every_character(con: duckdb.DuckDBPyConnection) -> None:
    # Around each character: the word 'ab' is a term exactly when the character separates.
    chars = every_character()
    texts = pc.binary_join_element_wise("ab", chars, "cd", "")
    after = pc.binary_join_element_wise("cd", chars, "ab", "")
    table = pa.table({"s": texts, "r": after})
    exprs = [col("s").contains_term("ab"), col("r").not_contains_term("AB")]
    sql = ["contains_term(s, 'ab')", "NOT contains_term(r, 'AB')"]
    assert duckdb_values(con, table, sql) == arrow_values(table, exprs)


def test_null_and_bad_words(con: duckdb.DuckDBPyConnection) -> None:
    assert con.sql("SELECT contains_term(NULL, 'a'), contains_term('a', NULL)").fetchall() == [(None, None)]
    assert con.sql("SELECT contains_term('A-b', 'a'), contains_term('A-b', 'AB')").fetchall() == [
        (True, False)
    ]
    for word in ["", "a b", "e-mail", "de\u0301ja"]:
        with pytest.raises(duckdb.InvalidInputException, match="contains_term needs one word"):
            con.execute("SELECT contains_term('a', ?)", [word]).fetchall()
        with pytest.raises(ValueError, match="contains_term needs"):
            normalize_term(word)


def test_the_printed_leaf_runs_and_parses_back(con: duckdb.DuckDBPyConnection) -> None:
    table = pa.table({"my col": ["Hello, World", "it's", None, "WORLDS"]})
    for expr in [col("my col").contains_term("WORLD"), ~col("my col").contains_term("s")]:
        (got,) = duckdb_values(con, table, [str(expr)])
        assert got == arrow_values(table, [expr])[0]
        assert parse_predicate(str(expr)) == expr
    assert parse_predicate("contains_term(a, 'x') AND NOT contains_term(b, 'Y')") == (
        ContainsTerm("a", "x") & ~ContainsTerm("b", "Y")
    )


ALPHABET = st.one_of(
    st.sampled_from(
        [*"aAbBzZ09 ,.-_'!\t\nÉéßİΣ", "\u0131", "\u03c3", "\u03c2", "\u0301", "日", "\U0001d400"]
    ),
    st.sampled_from(["\ua7cb", "\U0002ebf0", "\u1c89", "Ⅻ", "ǅ"]),  # what DuckDB's own tables lack
    st.characters(codec="utf-8", exclude_characters="\x00"),
)


@st.composite
def texts_and_words(draw: st.DrawFn) -> tuple[list[str | None], list[str]]:
    texts = draw(st.lists(st.one_of(st.none(), st.text(ALPHABET, max_size=12)), min_size=1, max_size=8))
    found = sorted(set(tokenize(pa.array(texts, pa.string()))[0].to_pylist()))
    words = draw(st.lists(st.sampled_from(found), max_size=4)) if found else []
    words = [draw(st.sampled_from([w, w.upper(), w.title()])) for w in words]
    words += draw(st.lists(st.text(ALPHABET, min_size=1, max_size=3), max_size=3))
    return texts, [w for w in words if _one_term(w)]


def _one_term(word: str) -> bool:
    try:
        normalize_term(word)
    except ValueError:
        return False
    return True


@settings(max_examples=100, deadline=None)
@given(texts_and_words())
def test_macro_agrees_with_the_row_filter(
    con: duckdb.DuckDBPyConnection, example: tuple[list[str | None], list[str]]
) -> None:
    texts, words = example
    if not words:
        return
    table = pa.table({"s": pa.array(texts, pa.string())})
    exprs = [e for w in words for e in (col("s").contains_term(w), col("s").not_contains_term(w))]
    assert duckdb_values(con, table, [str(e) for e in exprs]) == arrow_values(table, exprs)
