"""Pinning the time a query reads (``adapters.duckdb.clock``), checked against DuckDB itself."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapters.duckdb.clock import pin_time
from adapters.duckdb.parse import serialize, translate_sql

INSTANT = dt.datetime(2026, 11, 23, 23, 30, 15, 123456, tzinfo=dt.UTC)


def statement(query: str) -> dict[str, object]:
    return serialize(query)["statements"][0]["node"]


def pinned(con: duckdb.DuckDBPyConnection, query: str, instant: dt.datetime | None = INSTANT) -> str | None:
    return pin_time(con, query, statement(query), instant)


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute("CREATE TABLE t (d DATE, ts TIMESTAMPTZ)")
    return c


@pytest.mark.parametrize("zone", ["UTC", "Pacific/Kiritimati", "Pacific/Honolulu", "Asia/Kathmandu"])
def test_each_function_keeps_its_type_and_session_zone_reading(
    con: duckdb.DuckDBPyConnection, zone: str
) -> None:
    con.execute(f"SET TimeZone = '{zone}'")
    con.execute("INSERT INTO t VALUES (NULL, NULL)")
    calls = ["now()", "current_timestamp", "localtimestamp", "current_localtimestamp()"]
    days = ["current_date", "today()"]
    others = ["get_current_time()", "current_time"]
    items = [f"typeof({c})" for c in calls + days + others]
    items += [f"epoch_ms({c})" for c in calls] + [f"CAST({c} AS VARCHAR)" for c in days]
    query = f"SELECT {', '.join(items)} FROM t"
    text = pinned(con, query, None)
    assert text is not None and "now()" not in text and "current_date" not in text
    ours = con.execute(text).fetchone()
    theirs = con.execute(query).fetchone()
    assert ours is not None and theirs is not None
    types = len(calls) + len(days) + len(others)
    assert ours[:types] == theirs[:types]  # each function keeps its type
    # The same instant, up to the moments between the two statements, read in the same zone.
    for mine, duckdbs in zip(
        ours[types : types + len(calls)], theirs[types : types + len(calls)], strict=True
    ):
        assert abs(mine - duckdbs) < 30_000
    assert ours[types + len(calls) :] == theirs[types + len(calls) :]  # the day (no midnight between)


def test_the_query_and_the_folded_constant_see_one_instant(con: duckdb.DuckDBPyConnection) -> None:
    query = "SELECT * FROM t WHERE d >= current_date - INTERVAL 30 DAY AND ts < now()"
    text = pinned(con, query)
    assert text is not None
    where = text.split(" WHERE ", 1)[1]
    translation = translate_sql(where)
    assert not translation.not_used, translation.not_used
    leaves = {str(leaf) for leaf in translation.expr.leaves()}
    # 2026-11-23 - 30 days; DuckDB types date - interval as a TIMESTAMP.
    assert "d >= TIMESTAMP '2026-10-24 00:00:00'" in leaves
    assert any(leaf.startswith("ts < TIMESTAMPTZ '2026-11-23 23:30:15.123456") for leaf in leaves), leaves


def test_unpinned_time_calls_are_never_folded() -> None:
    # Folding them outside a query would compare with another instant than the query's.
    for sql in ["d >= current_date - INTERVAL 30 DAY", "ts < now()", "d = today()"]:
        translation = translate_sql(sql)
        assert translation.not_used, sql


def test_spellings_and_spacing(con: duckdb.DuckDBPyConnection) -> None:
    text = pinned(con, "SELECT * FROM t WHERE ts < NOW ( ) AND d = CURRENT_DATE")
    assert text is not None and "NOW" not in text and "CURRENT_DATE" not in text


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM u WHERE current_date > 3",  # u has a column current_date
        "SELECT * FROM (SELECT 1 AS current_date) s WHERE current_date > 0",  # an alias
        "SELECT * FROM read_parquet('x.parquet') WHERE d < current_date",  # columns unknown
        "SELECT * FROM nowhere WHERE d < current_date",  # not a table of this connection
    ],
)
def test_a_keyword_that_may_name_a_column_is_not_pinned(con: duckdb.DuckDBPyConnection, query: str) -> None:
    con.execute('CREATE TABLE u ("current_date" INTEGER)')
    assert pinned(con, query) is None


def test_function_calls_are_pinned_whatever_the_tables(con: duckdb.DuckDBPyConnection) -> None:
    text = pinned(con, "SELECT * FROM read_parquet('x.parquet') WHERE ts < now()")
    assert text is not None and "now()" not in text


def test_nothing_to_pin(con: duckdb.DuckDBPyConnection) -> None:
    assert pinned(con, "SELECT * FROM t WHERE d > DATE '2024-01-01'") is None


def test_sql_prunes_with_the_pinned_time_and_answers_as_duckdb(tmp_path: Path) -> None:
    from adapters.duckdb import plan, register, sql
    from index_store import open_table

    today = dt.date.today()
    for k in range(10):
        days = [today - dt.timedelta(days=100 * k + j) for j in range(5)]
        pq.write_table(pa.table({"d": days, "v": list(range(5))}), tmp_path / f"p{k}.parquet")
    table = open_table(tmp_path)
    table.build(progress=False)
    con = duckdb.connect()
    register(con, "t", table)
    for query in [
        "SELECT count(*), sum(v) FROM t WHERE d >= current_date - INTERVAL 150 DAY",
        "SELECT count(*) AS n, current_date, now() IS NOT NULL FROM t WHERE d > today() - 250",
        "SELECT * FROM t WHERE d < CURRENT_DATE - 800 ORDER BY d",
    ]:
        planned = plan(con, query)
        (t,) = planned.tables
        assert t.kept < t.total, str(planned)  # the folded time pruned
        ours = sql(con, query)
        theirs = con.sql(query)
        assert ours.columns == theirs.columns  # names as written, not as pinned
        assert ours.fetchall() == theirs.fetchall()
