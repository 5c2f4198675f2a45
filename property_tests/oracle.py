"""DuckDB as the oracle: which rows of a case's table make each SQL predicate TRUE."""

from __future__ import annotations

from functools import cache

import duckdb
import pyarrow as pa

from adapters.duckdb import register_macros

__all__ = ["connection", "evaluate", "rows_where"]

Truth = list[bool | None]


@cache
def connection() -> duckdb.DuckDBPyConnection:
    """One in-memory DuckDB for the whole run, session time zone UTC, with ``contains_term``."""
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    register_macros(con)
    return con


def evaluate(table: pa.Table, predicates: list[str]) -> tuple[list[int], list[Truth]]:
    """Per row (ordered by ``__row``): its file, and each predicate's value (True/False/None).

    One query evaluates every predicate; only booleans and ints are fetched (no TIMESTAMPTZ,
    whose conversion to Python would need pytz).
    """
    con = connection()
    con.register("t", table)
    try:
        columns = ", ".join(f"({p}) AS p{i}" for i, p in enumerate(predicates))
        rows = con.execute(f"SELECT __file, {columns} FROM t ORDER BY __row").fetchall()
    finally:
        con.unregister("t")
    files = [r[0] for r in rows]
    truths = [[r[i + 1] for r in rows] for i in range(len(predicates))]
    return files, truths


def rows_where(truth: Truth) -> set[int]:
    """Row ids (positions) where the predicate is TRUE."""
    return {i for i, v in enumerate(truth) if v is True}
