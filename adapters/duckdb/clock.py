"""Pin the time a query reads: ``now()``, ``current_date`` and their kin become one literal instant.

DuckDB evaluates these once per transaction (its start), so within a query they agree. A planner
that folds ``current_date - INTERVAL 30 DAY`` to prune files evaluates it before the query runs,
in another statement: without care the two could see different days (a query planned at
23:59:59.999 and run at 00:00:00.001). ``pin_time`` reads the instant once and writes it into the
query text in place of every such call, so the constant the planner folds and the one the query
compares with are the same by construction; the query runs as if its transaction had started at
that instant, which is what DuckDB's ``now()`` means. Each function keeps its type and its session
time zone reading (``current_date`` is ``CAST(TIMESTAMPTZ '<instant>' AS DATE)``, converted in the
session's ``TimeZone`` exactly as DuckDB converts ``now()``).

``current_date``, ``current_timestamp``, ``current_time``, ``localtimestamp`` and ``localtime``
are written without parentheses, and DuckDB reads them as a column when some table in scope has a
column of that name. They are pinned only when no table the statement reads may have such a
column (every table is one of the connection's own, checked in ``duckdb_columns()``, and no alias
uses the name); otherwise the query is left as it is and those constants are not folded.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import duckdb

from adapters.duckdb.scope import cte_names, walk_dicts
from adapters.duckdb.serialized import Class, Key

__all__ = ["TIME_FUNCTIONS", "pin_time", "time_calls"]

Node = dict[str, Any]

# What each time function is, as a cast of the pinned TIMESTAMPTZ (None: the instant itself).
_AS = {
    "now": None,
    "get_current_timestamp": None,
    "transaction_timestamp": None,
    "current_timestamp": None,
    "today": "DATE",
    "current_date": "DATE",
    "current_localtimestamp": "TIMESTAMP",
    "localtimestamp": "TIMESTAMP",
    "get_current_time": "TIMETZ",
    "current_time": "TIMETZ",
    "current_localtime": "TIME",
    "localtime": "TIME",
}
TIME_FUNCTIONS = frozenset(_AS)
"""Functions (and keywords) whose value is the transaction's start time."""

_KEYWORDS = frozenset(("current_date", "current_timestamp", "current_time", "localtimestamp", "localtime"))
_NO_LOCATION = 1 << 63


def time_calls(statement: Node) -> list[tuple[Node, str]]:
    """Every call of a time function in a parsed statement, with the function's name: function
    calls (``now()``) and the bare keywords DuckDB parses as column references (``current_date``)."""
    found = []
    for node in walk_dicts(statement):
        cls = node.get(Key.CLASS)
        if cls == Class.FUNCTION and not node.get(Key.SCHEMA) and not node.get(Key.CATALOG):
            name = str(node.get(Key.FUNCTION_NAME, "")).lower()
            if name in _AS and not node.get(Key.ARGUMENTS):
                found.append((node, name))
        elif cls == Class.COLUMN_REF:
            parts = node.get(Key.COLUMN_NAMES) or []
            if len(parts) == 1 and str(parts[0]).lower() in _KEYWORDS:
                found.append((node, str(parts[0]).lower()))
    return found


def pin_time(
    con: duckdb.DuckDBPyConnection, query: str, statement: Node, instant: dt.datetime | None = None
) -> str | None:
    """``query`` with every time function replaced by ``instant`` (now, by default), or None when
    it has none or a call cannot be replaced safely (its text is not where the parser says, or a
    bare keyword may name a column)."""
    calls = time_calls(statement)
    if not calls:
        return None
    keywords = {name for node, name in calls if node.get(Key.CLASS) == Class.COLUMN_REF}
    if keywords and not _keywords_are_functions(con, statement, keywords):
        return None
    moment = (instant or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    stamp = f"TIMESTAMPTZ '{moment.strftime('%Y-%m-%d %H:%M:%S.%f')}+00'"
    text = query.encode()
    edits: list[tuple[int, int, bytes]] = []
    for node, name in calls:
        start, length = node.get(Key.QUERY_LOCATION), node.get(Key.QUERY_LOCATION_LENGTH)
        if not isinstance(start, int) or not isinstance(length, int) or start >= _NO_LOCATION:
            return None
        written = text[start : start + length].decode(errors="replace")
        if not re.fullmatch(rf"(?i){re.escape(name)}(\s*\(\s*\))?", written):
            return None
        cast = _AS[name]
        value = stamp if cast is None else f"CAST({stamp} AS {cast})"
        edits.append((start, length, f"({value})".encode()))
    for start, length, encoded in sorted(edits, key=lambda e: -e[0]):
        text = text[:start] + encoded + text[start + length :]
    return text.decode()


def _keywords_are_functions(con: duckdb.DuckDBPyConnection, statement: Node, names: set[str]) -> bool:
    """Whether no table or alias the statement reads can have a column named one of ``names``."""
    tables: list[Node] = []
    for node in walk_dicts(statement):
        kind = node.get(Key.TYPE)
        if kind == "BASE_TABLE":
            tables.append(node)
        elif kind == "TABLE_FUNCTION":
            return False  # read_parquet(...) and friends: their columns are not known here
        if str(node.get(Key.ALIAS) or "").lower() in names:
            return False
        if any(str(c).lower() in names for c in node.get(Key.COLUMN_NAME_ALIAS) or []):
            return False
    ctes = {str(name).lower() for name in cte_names(statement)}
    wanted = [t for t in tables if str(t.get(Key.TABLE_NAME, "")).lower() not in ctes]
    if not wanted:
        return True
    # Per table the statement reads: whether it has a column of one of those names (one query).
    tables_seen = [str(t.get(Key.TABLE_NAME, "")).lower() for t in wanted]
    rows = con.execute(
        "SELECT lower(table_name), bool_or(lower(column_name) IN "
        f"({', '.join('?' for _ in names)})) FROM duckdb_columns() WHERE lower(table_name) IN "
        f"({', '.join('?' for _ in tables_seen)}) GROUP BY 1",
        [*sorted(names), *tables_seen],
    ).fetchall()
    clashing = {str(name) for name, has in rows if has}
    known = {str(name) for name, _ in rows}
    # A column of that name, or a table whose columns cannot be listed: the keyword may be a column.
    return not any(name in clashing or name not in known for name in tables_seen)
