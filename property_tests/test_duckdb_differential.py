"""``adapters.duckdb.sql`` against plain DuckDB reading every file: the same rows, names and types.

The data is TPC-H ``lineitem`` (and ``orders``) from ``index_store.datagen.tpch``, with a few percent
NULLs put into some lineitem columns (TPC-H has none, and ``IS NULL``, ``NOT IN (.., NULL)`` and the NULL
partition of a hive layout would otherwise test nothing). It is written as about 100 files in four
layouts: clustered by ``l_shipdate``, shuffled, and each of those hive-partitioned (clustered by
``l_shipmode``, a string with NULLs, shuffled by ``l_linenumber``, an integer). Each layout is
indexed with a bloom filter on ``l_orderkey`` and registered on one connection; a second connection
has plain views of the same names over every file (``read_parquet([...], can_have_nan = true)``).

- ``test_random_predicates``: hypothesis draws ``SELECT * FROM lineitem [AS alias] WHERE <p>`` with
  ``p`` nested AND/OR/NOT over every column type, literals near the data written many ways, and
  parts the planner cannot translate. Both connections answer with a DuckDB fingerprint of the row
  multiset (count and sum of a hash of every column); the clustered layouts must prune for a good
  share of the predicates, so the test cannot pass by never pruning.
- ``test_random_joins``: hypothesis draws lineitem joined to orders (registered, or a table of
  DuckDB's own) on a key (the order key, integers of other widths, a key with NULLs, a VARCHAR
  cast), in every shape (inner, comma, LEFT/RIGHT/FULL either way round, SEMI, ANTI, IN, = ANY,
  NOT IN, [NOT] EXISTS), with random filters on either side in ON or WHERE; ``lineitem_mm`` is the
  same table registered with a low ``dynamic_keys`` (min/max pruning). The fingerprint of the
  rows must be plain DuckDB's, and dynamic pruning must have pruned some of them.
- ``test_queries``: hand-written queries (joins of every kind, CTEs, subqueries, set operations,
  windows, aliases, parameters, an empty read) compared in full: column names, types, rows.
"""

from __future__ import annotations

import datetime as dt
import decimal
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from adapters.duckdb import plan, register
from index_store import open_table
from index_store.datagen.tpch import generate, plain_schema, write_files

SCALE = 0.01  # 60,175 lineitem rows, 15,000 orders
MINMAX_KEYS = 40  # lineitem_mm's dynamic_keys
LINEITEM_FILES = 100
ORDERS_FILES = 6
NULL_SHARE = 0.02
# Columns that get NULLs. The keys stay whole so the unique (l_orderkey, l_linenumber) can order.
NULLED = ["l_partkey", "l_quantity", "l_discount", "l_shipdate", "l_receiptdate", "l_shipmode", "l_comment"]

INT = ["l_orderkey", "l_partkey", "l_suppkey", "l_linenumber"]
DECIMAL = ["l_quantity", "l_extendedprice", "l_discount", "l_tax"]
STRING = ["l_returnflag", "l_linestatus", "l_shipinstruct", "l_shipmode", "l_comment"]
DATE = ["l_shipdate", "l_commitdate", "l_receiptdate"]
KINDS = {**dict.fromkeys(INT, "int"), **dict.fromkeys(DECIMAL, "decimal")}
KINDS |= {**dict.fromkeys(STRING, "string"), **dict.fromkeys(DATE, "date")}
COLUMNS = list(KINDS)
# A multiset fingerprint DuckDB computes: columns named, so it does not depend on their order.
FINGERPRINT = f"count(*) AS n, sum(hash({', '.join(COLUMNS)})) AS h"

# name -> (order_by, hive_by)
LAYOUTS = {
    "clustered": ("l_shipdate", None),
    "random": (None, None),
    "clustered_hive": ("l_shipdate", "l_shipmode"),
    "random_hive": (None, "l_linenumber"),
}
CLUSTERED = ("clustered", "clustered_hive")


@dataclass
class Layout:
    name: str
    con: duckdb.DuckDBPyConnection  # lineitem and orders registered: read pruned by sql/plan
    plain: duckdb.DuckDBPyConnection  # lineitem and orders as plain views over every file
    files: int


@dataclass(frozen=True)
class Column:
    """What literals are drawn from: some existing values and the extremes (NULLs left out)."""

    name: str
    kind: str
    values: tuple[Any, ...]
    lo: Any
    hi: Any


# ------------------------------------------------------------------------------------------- data


def _with_nulls(source: Path, dest: Path) -> Path:
    """``source`` with NULL_SHARE of the values of each NULLED column set to NULL (seeded)."""
    table = pq.read_table(source)
    table = table.cast(plain_schema(table.schema))  # string_view has no if_else kernel
    rng = np.random.default_rng(7)
    for name in NULLED:
        mask = pa.array(rng.random(table.num_rows) < NULL_SHARE)
        column = table[name]
        nulled = pc.if_else(mask, pa.scalar(None, column.type), column)
        table = table.set_column(table.schema.get_field_index(name), name, nulled)
    pq.write_table(table, dest)
    return dest


def _read_all(files: list[Path], hive: bool) -> str:
    listed = ", ".join(f"'{f}'" for f in files)
    return f"read_parquet([{listed}], hive_partitioning = {str(hive).lower()}, can_have_nan = true)"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Layout], dict[str, Column]]:
    base = tmp_path_factory.mktemp("tpch_differential")
    source = generate(SCALE, base / "source")
    lineitem = _with_nulls(source["lineitem"], base / "lineitem_nulls.parquet")
    orders_dir = base / "orders"
    orders_files = write_files(source["orders"], orders_dir, ORDERS_FILES, order_by="o_orderdate")
    orders = open_table(orders_dir)
    orders.build(bloom_columns=["o_orderkey"])

    layouts = {}
    for name, (order_by, hive_by) in LAYOUTS.items():
        folder = base / name
        shutil.rmtree(folder, ignore_errors=True)
        files = write_files(lineitem, folder, LINEITEM_FILES, order_by=order_by, hive_by=hive_by)
        table = open_table(folder)
        table.build(bloom_columns=["l_orderkey"])
        con = duckdb.connect()
        register(con, "lineitem", table)
        register(con, "orders", orders)
        # The same table again, its join keys above a few dozen pruning by their min and max only.
        register(con, "lineitem_mm", table, dynamic_keys=MINMAX_KEYS)
        plain = duckdb.connect()
        plain.sql(f"CREATE VIEW lineitem AS SELECT * FROM {_read_all(files, hive_by is not None)}")
        plain.sql(f"CREATE VIEW lineitem_mm AS SELECT * FROM {_read_all(files, hive_by is not None)}")
        plain.sql(f"CREATE VIEW orders AS SELECT * FROM {_read_all(orders_files, False)}")
        for c in (con, plain):  # orders as a table of DuckDB's own: the small side of joins
            c.sql(f"CREATE TABLE orders_t AS SELECT * FROM {_read_all(orders_files, False)}")
        layouts[name] = Layout(name, con, plain, len(files))

    rows = pq.read_table(lineitem)
    columns = {}
    for name, kind in KINDS.items():
        distinct = sorted(v for v in pc.unique(rows[name]).to_pylist() if v is not None)
        picks = np.linspace(0, len(distinct) - 1, min(len(distinct), 40)).round().astype(int)
        values = tuple(distinct[i] for i in sorted(set(picks.tolist())))
        columns[name] = Column(name, kind, values, distinct[0], distinct[-1])
    return layouts, columns


# ------------------------------------------------------------------------------------ literals


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _int_values(c: Column) -> st.SearchStrategy[int]:
    extremes = [c.lo - 1, c.hi + 1, 0, -1, -c.hi, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63) + 1]
    return st.one_of(
        st.sampled_from(c.values),
        st.sampled_from([c.lo, c.hi]),
        st.sampled_from(extremes),
        st.integers(c.lo - 3, c.hi + 3),
        st.tuples(st.sampled_from(c.values), st.integers(-2, 2)).map(sum),
    )


def _int_literal(v: int) -> st.SearchStrategy[str]:
    forms = [str(v), f"({v - 3} + 3)", f"{v}.0", f"{v}.5", f"CAST({v} AS DECIMAL(38, 1))", f"{v}::DOUBLE"]
    if abs(v) < 2**62:
        forms += [f"CAST({v} AS BIGINT)", f"'{v}'", f"-({-v})"]
    if abs(v) < 2**31:
        forms.append(f"{v}::INTEGER")
    return st.sampled_from(forms)


def _decimal_values(c: Column) -> st.SearchStrategy[decimal.Decimal]:
    cent, mil = decimal.Decimal("0.01"), decimal.Decimal("0.001")
    extremes = [c.lo - cent, c.hi + cent, decimal.Decimal(0), decimal.Decimal("-1.5")]
    extremes += [decimal.Decimal("9999999999999.99"), decimal.Decimal("-0.00"), decimal.Decimal("1e20")]
    return st.one_of(
        st.sampled_from(c.values),
        st.sampled_from([c.lo, c.hi]),
        st.sampled_from(extremes),
        st.tuples(st.sampled_from(c.values), st.sampled_from([-cent, -mil, mil, cent])).map(sum),
    )


def _decimal_literal(v: decimal.Decimal) -> st.SearchStrategy[str]:
    text = format(v, "f")
    forms = [text, f"{text}::DECIMAL(18, 3)", f"{text}::DOUBLE", f"'{text}'"]
    if abs(v) < decimal.Decimal("1e13") and v == v.quantize(decimal.Decimal("0.01")):
        forms.append(f"CAST('{text}' AS DECIMAL(15, 2))")
    if v == v.to_integral_value():
        forms.append(str(int(v)))
    return st.sampled_from(forms)


def _string_values(c: Column) -> st.SearchStrategy[str]:
    def prefix(v: str, n: int) -> str:
        return v[: max(0, len(v) - n)] if n < 0 else v[:n]

    def successor(v: str) -> str:
        return v[:-1] + chr(ord(v[-1]) + 1) if v else "a"

    odd = ["", "A", "Z", "a", "zzzz", "~", "é", "it's", "\U0001f600", " "]
    return st.one_of(
        st.sampled_from(c.values),
        st.sampled_from([c.lo, c.hi]),
        st.sampled_from(odd),
        st.tuples(st.sampled_from(c.values), st.integers(-3, 6)).map(lambda p: prefix(*p)),
        st.sampled_from(c.values).map(successor),
        st.sampled_from(c.values).map(lambda v: v + "a"),
    )


def _string_literal(v: str) -> st.SearchStrategy[str]:
    q = _sql_string(v)
    forms = [q, q, f"CAST({q} AS VARCHAR)"]
    if len(v) >= 2:
        forms.append(f"{_sql_string(v[:1])} || {_sql_string(v[1:])}")
    return st.sampled_from(forms)


def _date_values(c: Column) -> st.SearchStrategy[dt.date]:
    day = dt.timedelta(days=1)
    extremes = [c.lo - day, c.hi + day, dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(1970, 1, 1)]
    return st.one_of(
        st.sampled_from(c.values),
        st.sampled_from([c.lo, c.hi]),
        st.sampled_from(extremes),
        st.dates(c.lo - 30 * day, c.hi + 30 * day),
    )


def _date_literal(v: dt.date) -> st.SearchStrategy[str]:
    iso = v.isoformat()
    forms = [f"DATE '{iso}'", f"DATE '{iso}'", f"'{iso}'", f"CAST('{iso}' AS DATE)", f"'{iso}'::DATE"]
    forms += [f"TIMESTAMP '{iso} 00:00:00'", f"TIMESTAMP '{iso} 12:34:56'"]
    if dt.date(2, 1, 1) < v < dt.date(9999, 1, 1):
        forms += [f"DATE '{iso}' + INTERVAL 1 DAY", f"DATE '{iso}' - 1"]
    return st.sampled_from(forms)


VALUES = {"int": _int_values, "decimal": _decimal_values, "string": _string_values, "date": _date_values}
LITERALS = {
    "int": _int_literal,
    "decimal": _decimal_literal,
    "string": _string_literal,
    "date": _date_literal,
}


@st.composite
def literal(draw: st.DrawFn, c: Column, nullable: bool = True) -> str:
    if nullable and draw(st.integers(0, 19)) == 0:
        return draw(st.sampled_from(["NULL", f"CAST(NULL AS {_duck_type(c)})"]))
    return draw(VALUES[c.kind](c).flatmap(LITERALS[c.kind]))


def _duck_type(c: Column) -> str:
    types = {"int": "BIGINT", "decimal": "DECIMAL(15, 2)", "string": "VARCHAR", "date": "DATE"}
    return types[c.kind]


# ---------------------------------------------------------------------------------- predicates

# Parts the planner cannot translate (or that need care), mixed into the translatable ones.
UNTRANSLATABLE = [
    "lower(l_comment) LIKE '%the%'",
    "l_comment ILIKE '%QUICK%'",
    "l_quantity * 2 > 10",
    "l_shipdate < l_commitdate",
    "l_receiptdate >= l_shipdate + 5",
    "l_partkey = l_suppkey * 2",
    "length(l_comment) > 30",
    "year(l_shipdate) = 1995",
    "coalesce(l_quantity, 0) > 40",
    "coalesce(l_shipmode, 'NONE') = 'NONE'",
    "l_extendedprice / l_quantity > 1500",
    "CASE WHEN l_discount > 0.05 THEN l_tax ELSE 0 END > 0.04",
    "hash(l_orderkey) % 7 = 0",
    "l_orderkey % 10 = 3",
    "strftime(l_shipdate, '%m') = '03'",
    "CAST(l_linenumber AS VARCHAR) = '2'",
    "l_shipmode || l_returnflag = 'AIRR'",
    "NOT (l_commitdate > l_receiptdate)",
    "l_orderkey IN (SELECT 1 UNION ALL SELECT 7)",
    "l_discount = (SELECT 0.05)",
    "EXISTS (SELECT 1 WHERE l_tax > 0.07)",
    "regexp_matches(l_comment, '^[a-f]')",
    "l_shipdate - l_commitdate > 10",
    "date_trunc('month', l_shipdate) = DATE '1996-01-01'",
]
CONSTANTS = ["TRUE", "FALSE", "NULL", "1 = 1", "NULL IS NULL", "1 = 0", "NOT NULL"]
# Every column, with more weight on those that prune some layout: dates (clustered), the bloom
# filtered key, the partition columns.
WEIGHTED = COLUMNS + DATE * 3 + ["l_orderkey", "l_orderkey", "l_shipmode", "l_linenumber"]
COMPARISONS = ["=", "<>", "!=", "<", "<=", ">", ">=", "==", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"]


@st.composite
def column_ref(draw: st.DrawFn, c: Column, alias: str | None) -> str:
    forms = [c.name, c.name, c.name.upper(), f'"{c.name}"']
    if alias:
        forms += [f"{alias}.{c.name}", f"{alias}.{c.name}"]
    else:
        forms.append(f"lineitem.{c.name}")
    return draw(st.sampled_from(forms))


@st.composite
def leaf(draw: st.DrawFn, columns: dict[str, Column], alias: str | None) -> str:
    form = draw(st.integers(0, 11))
    if form == 11:
        return draw(st.sampled_from(CONSTANTS))
    if form == 10:
        return draw(st.sampled_from(UNTRANSLATABLE))
    c = columns[draw(st.sampled_from(WEIGHTED))]
    ref = draw(column_ref(c, alias))
    lit = literal(c)
    if form <= 3:
        op = draw(st.sampled_from(COMPARISONS))
        if draw(st.booleans()):
            return f"{ref} {op} {draw(lit)}"
        return f"{draw(lit)} {op} {ref}"
    if form == 4:
        items = draw(st.lists(literal(c, nullable=False), min_size=1, max_size=5))
        if draw(st.integers(0, 4)) == 0:
            items.insert(draw(st.integers(0, len(items))), "NULL")
        negated = draw(st.sampled_from(["", "NOT "]))
        return f"{ref} {negated}IN ({', '.join(items)})"
    if form == 5:
        negated = draw(st.sampled_from(["", "NOT "]))
        return f"{ref} {negated}BETWEEN {draw(lit)} AND {draw(lit)}"
    if form == 6:
        return f"{ref} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if c.kind == "string" and form <= 9:
        pattern = draw(_string_values(c))[: draw(st.integers(0, 8))]
        shape = draw(st.sampled_from(["{}%", "{}%", "{}", "%{}", "{}_%", "%{}%"]))
        if form == 7:
            op = draw(st.sampled_from(["LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"]))
            return f"{ref} {op} {_sql_string(shape.format(pattern))}"
        if form == 8:
            negated = draw(st.sampled_from(["", "NOT "]))
            return f"{negated}starts_with({ref}, {_sql_string(pattern)})"
        return f"{ref} ^@ {_sql_string(pattern)}"
    op = draw(st.sampled_from(COMPARISONS[:7]))
    return f"{ref} {op} {draw(lit)}"


@st.composite
def predicate(draw: st.DrawFn, columns: dict[str, Column], alias: str | None, depth: int = 0) -> str:
    form = draw(st.integers(0, 9)) if depth < 3 else 0
    if form <= 4:
        return draw(leaf(columns, alias))
    if form <= 8:
        parts = draw(st.lists(predicate(columns, alias, depth + 1), min_size=2, max_size=3))
        joiner = " AND " if form <= 6 else " OR "
        return "(" + joiner.join(parts) + ")"
    return f"NOT ({draw(predicate(columns, alias, depth + 1))})"


@st.composite
def where_query(draw: st.DrawFn, columns: dict[str, Column]) -> str:
    alias = draw(st.sampled_from([None, None, "l", "li"]))
    source = "lineitem" if alias is None else f"lineitem {draw(st.sampled_from(['AS ', '']))}{alias}"
    return f"SELECT * FROM {source} WHERE {draw(predicate(columns, alias))}"


# -------------------------------------------------------------------------------------- running


def _fingerprint(rel: duckdb.DuckDBPyRelation) -> tuple[Any, ...]:
    [row] = rel.aggregate(FINGERPRINT).fetchall()
    return tuple(row)


def _row_diff(ours: duckdb.DuckDBPyRelation, theirs: duckdb.DuckDBPyRelation) -> str:
    mine, want = Counter(ours.fetchall()), Counter(theirs.fetchall())
    missing, extra = want - mine, mine - want
    return (
        f"{sum(missing.values())} rows missing, e.g. {list(missing)[:3]}; "
        f"{sum(extra.values())} extra, e.g. {list(extra)[:3]}"
    )


def _run(con: duckdb.DuckDBPyConnection, query: str) -> tuple[Any, ...] | str:
    """The fingerprint of the plain query, or the kind of error DuckDB raised."""
    try:
        return _fingerprint(con.sql(query))
    except duckdb.Error as exc:
        return f"error: {type(exc).__name__}"


@pytest.mark.parametrize("layout_name", list(LAYOUTS))
def test_random_predicates(data: tuple[dict[str, Layout], dict[str, Column]], layout_name: str) -> None:
    """Random ``WHERE`` predicates: the pruned read has the rows of a read of every file."""
    layouts, columns = data
    layout = layouts[layout_name]
    seen: Counter[str] = Counter()

    # ``ci`` (2,000 examples) runs 500 per layout, ``deep`` 12,500, ``dev`` 50.
    @settings(max_examples=max(settings().max_examples // 4, 50))
    @given(query=where_query(columns))
    def check(query: str) -> None:
        note(query)
        expected = _run(layout.plain, query)
        try:
            planned = plan(layout.con, query)
            note(str(planned))
            note(planned.sql)
            got = _fingerprint(planned.relation())
        except duckdb.Error as exc:
            # DuckDB rejects the query itself (a literal that does not cast, say): so must we.
            assert isinstance(expected, str), f"{query}\nraised {exc!r} but plain DuckDB answered {expected}"
            seen["errors"] += 1
            return
        assert not isinstance(expected, str), f"{query}\nanswered {got} but plain DuckDB raised"
        if got != expected:
            diff = _row_diff(planned.relation(), layout.plain.sql(query))
            raise AssertionError(f"{query}\n{planned}\n(count, hash) {got} != {expected}: {diff}")
        [table] = planned.tables
        seen["queries"] += 1
        seen["pruned"] += table.kept < table.total
        seen["partly pruned"] += 0 < table.kept < table.total  # not by a contradiction alone
        seen["rows"] += got[0] > 0

    check()
    assert seen["queries"] >= 40, seen
    assert seen["errors"] <= seen["queries"] // 4, seen  # the predicates are mostly valid SQL
    assert seen["rows"] >= seen["queries"] // 5, seen  # and many select rows
    if layout_name in CLUSTERED:  # ci: about 45% pruned, 13% partly
        assert seen["pruned"] >= seen["queries"] // 4, seen
        assert seen["partly pruned"] >= seen["queries"] // 10, seen
    else:
        assert seen["partly pruned"] >= 1, seen  # bloom filter on l_orderkey, the partition column


# ------------------------------------------------------------------------ joins, dynamic pruning

# (lineitem column, orders column): the order key, integers of other widths, a key with NULLs.
JOIN_KEYS = [
    ("l_orderkey", "o_orderkey"),
    ("l_orderkey", "o_orderkey"),
    ("l_orderkey", "o_orderkey"),
    ("l_linenumber", "o_shippriority + 1"),
    ("l_partkey", "o_custkey"),
    ("l_suppkey", "o_custkey"),
    ("l_orderkey", "CAST(o_orderkey AS INTEGER)"),
    ("l_orderkey", "CAST(o_orderkey AS VARCHAR)"),
]
JOIN_KINDS = ["JOIN", "JOIN", ",", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "SEMI JOIN", "ANTI JOIN"]
SUBQUERY_KINDS = ["IN", "IN", "= ANY", "NOT IN", "EXISTS", "NOT EXISTS"]
ORDER_DATES = (dt.date(1992, 1, 1), dt.date(1998, 8, 2))


@st.composite
def orders_filter(draw: st.DrawFn, alias: str) -> str:
    """A conjunct on orders: dates (clustered), keys, statuses, or one the index cannot read."""
    form = draw(st.integers(0, 6))
    if form <= 2:
        start = draw(st.dates(*ORDER_DATES))
        end = start + dt.timedelta(days=draw(st.integers(0, 400)))
        return f"{alias}.o_orderdate BETWEEN DATE '{start}' AND DATE '{end}'"
    if form == 3:
        low = draw(st.integers(1, 60_000))
        return f"{alias}.o_orderkey BETWEEN {low} AND {low + draw(st.integers(0, 3_000))}"
    if form == 4:
        return f"{alias}.o_orderstatus = {_sql_string(draw(st.sampled_from(['F', 'O', 'P'])))}"
    if form == 5:
        return (
            f"{alias}.o_custkey IN ({', '.join(map(str, draw(st.lists(st.integers(1, 1500), min_size=1))))})"
        )
    return f"{alias}.o_comment LIKE {_sql_string('%' + draw(st.sampled_from(['the', 'fox', 'ly'])) + '%')}"


@st.composite
def join_query(draw: st.DrawFn, columns: dict[str, Column]) -> str:
    """``lineitem`` joined to orders (registered, or a DuckDB table) on a key, one side or both
    filtered, in every join shape; the answer as a fingerprint of the rows."""
    big = draw(st.sampled_from(["lineitem", "lineitem", "lineitem_mm"]))
    small = draw(st.sampled_from(["orders", "orders_t"]))
    lkey, okey = draw(st.sampled_from(JOIN_KEYS))
    lk, ok = f"l.{lkey}", okey.replace("o_", "o.o_", 1)
    ofilters = draw(st.lists(orders_filter("o"), min_size=0, max_size=2))
    lfilters = draw(st.lists(leaf(columns, "l"), min_size=0, max_size=1))
    both = ", ".join([f"l.{c}" for c in ("l_orderkey", "l_linenumber", "l_partkey", "l_shipdate")])
    if draw(st.booleans()):
        kind = draw(st.sampled_from(JOIN_KINDS))
        semi = kind in ("SEMI JOIN", "ANTI JOIN")
        select = both if semi else f"{both}, o.o_orderkey, o.o_orderdate"
        flipped = not semi and kind != "," and draw(st.booleans())
        first, second = (f"{small} o", f"{big} l") if flipped else (f"{big} l", f"{small} o")
        on = [f"{lk} = {ok}"]
        where: list[str] = []
        for f in ofilters + lfilters:
            (on if kind != "," and draw(st.booleans()) else where).append(f)
        if kind == ",":
            where = on + where
            source = f"{first}, {second}"
        else:
            source = f"{first} {kind} {second} ON {' AND '.join(on)}"
    else:
        kind = draw(st.sampled_from(SUBQUERY_KINDS))
        select, source = both, f"{big} l"
        inner_where = " AND ".join(ofilters) or "TRUE"
        if kind.endswith("EXISTS"):
            inner = f"SELECT 1 FROM {small} o WHERE {ok} = {lk} AND {inner_where}"
            where = [f"{kind} ({inner})"]
        else:
            inner = f"SELECT {ok} FROM {small} o" + (f" WHERE {inner_where}" if ofilters else "")
            where = [f"{lk} {kind} ({inner})"]
        where += lfilters
    query = f"SELECT {select} FROM {source}" + (f" WHERE {' AND '.join(where)}" if where else "")
    return f"SELECT count(*) AS n, sum(hash(q)) AS h FROM ({query}) q"


@pytest.mark.parametrize("layout_name", list(LAYOUTS))
def test_random_joins(data: tuple[dict[str, Layout], dict[str, Column]], layout_name: str) -> None:
    """Random joins of lineitem with orders: the pruned answer (dynamic pruning included) is DuckDB's."""
    layouts, columns = data
    layout = layouts[layout_name]
    seen: Counter[str] = Counter()

    @settings(max_examples=max(settings().max_examples // 8, 30), deadline=None)
    @given(query=join_query(columns))
    def check(query: str) -> None:
        note(query)
        expected = _run_fingerprint(layout.plain, query)
        try:
            planned = plan(layout.con, query)
            note(str(planned))
            note(planned.sql)
            [got] = planned.relation().fetchall()
        except duckdb.Error as exc:
            assert isinstance(expected, str), f"{query}\nraised {exc!r} but plain DuckDB answered {expected}"
            seen["errors"] += 1
            return
        assert not isinstance(expected, str), f"{query}\nanswered {got} but plain DuckDB raised"
        assert tuple(got) == expected, f"{query}\n{planned}\n{tuple(got)} != {expected}"
        seen["queries"] += 1
        derived = [t for t in planned.tables if any(u.startswith("dynamic:") for u in t.used)]
        seen["dynamic"] += bool(derived)
        seen["dynamic pruned"] += any(t.kept < t.total for t in derived)
        seen["min/max"] += any("above the limit" in u for t in derived for u in t.used)

    check()
    assert seen["queries"] >= 20, seen
    assert seen["dynamic"] >= seen["queries"] // 10, seen  # the guard rails leave many, not all
    assert seen["dynamic pruned"] >= 1, seen


def _run_fingerprint(con: duckdb.DuckDBPyConnection, query: str) -> tuple[Any, ...] | str:
    try:
        [row] = con.sql(query).fetchall()
        return tuple(row)
    except duckdb.Error as exc:
        return f"error: {type(exc).__name__}"


# ------------------------------------------------------------------------------ written queries

D = dt.date
# (query, params, ordered): ordered results are compared in order, the others as multisets.
QUERIES: list[tuple[str, Any, bool]] = [
    # joins
    (
        "SELECT l_orderkey, l_linenumber, o_orderdate, o_orderstatus FROM lineitem JOIN orders"
        " ON l_orderkey = o_orderkey WHERE l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-01-31'"
        " AND o_orderstatus = 'F'",
        None,
        False,
    ),
    (
        "SELECT count(*), sum(l_quantity) FROM lineitem, orders WHERE l_orderkey = o_orderkey"
        " AND o_orderpriority = '1-URGENT' AND l_shipdate < DATE '1992-04-01'",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, o_orderdate FROM lineitem JOIN orders ON l_orderkey = o_orderkey"
        " AND l_shipdate < DATE '1992-03-01' AND o_orderdate >= DATE '1992-01-15'",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, l_shipdate, o_orderdate FROM lineitem JOIN orders ON l_orderkey = o_orderkey"
        " WHERE l_shipdate < DATE '1992-02-01' OR o_orderdate > DATE '1998-07-01'",
        None,
        False,
    ),
    # self-join, each alias with its own predicate
    (
        "SELECT a.l_orderkey, a.l_linenumber, b.l_linenumber, b.l_shipdate FROM lineitem a"
        " JOIN lineitem b ON a.l_orderkey = b.l_orderkey"
        " WHERE a.l_shipdate < DATE '1992-03-01' AND b.l_shipdate > DATE '1992-02-15'",
        None,
        False,
    ),
    # outer joins: predicates in ON, on the NULL-filled side in WHERE, anti-join pattern
    (
        "SELECT o_orderkey, l_linenumber FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"
        " AND l_shipdate < DATE '1992-06-01' WHERE o_orderkey < 500",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, o_orderdate FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"
        " AND l_returnflag = 'R' WHERE l_orderkey IS NULL AND o_orderdate < DATE '1993-01-01'",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, l_shipdate FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"
        " WHERE (l_shipdate IS NULL OR l_shipdate < DATE '1992-02-01') AND o_orderkey < 3000",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, l_linenumber FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"
        " WHERE l_shipdate < DATE '1992-03-01'",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, l_quantity FROM orders LEFT JOIN lineitem ON o_orderkey = l_orderkey"
        " WHERE coalesce(l_quantity, 0) < 2 AND o_orderkey < 2000",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, o_orderkey, o_orderstatus FROM orders RIGHT JOIN lineitem"
        " ON o_orderkey = l_orderkey AND o_orderdate < DATE '1994-01-01'"
        " WHERE l_shipdate > DATE '1998-10-01'",
        None,
        False,
    ),
    (
        "SELECT o_orderkey FROM lineitem RIGHT JOIN orders ON l_orderkey = o_orderkey"
        " AND l_shipdate < DATE '1992-02-01' WHERE l_orderkey IS NULL AND o_orderkey < 300",
        None,
        False,
    ),
    (
        "SELECT a.l_orderkey, a.l_linenumber, b.o_orderkey FROM lineitem a FULL JOIN orders b"
        " ON a.l_orderkey = b.o_orderkey AND a.l_shipdate < DATE '1992-02-01'"
        " WHERE coalesce(a.l_orderkey, b.o_orderkey) < 400",
        None,
        False,
    ),
    (
        "SELECT a.l_orderkey, b.o_orderkey FROM lineitem a FULL OUTER JOIN orders b"
        " ON a.l_orderkey = b.o_orderkey WHERE a.l_shipdate < DATE '1992-02-01' OR a.l_orderkey IS NULL",
        None,
        False,
    ),
    (
        "SELECT o_orderkey FROM orders SEMI JOIN lineitem ON o_orderkey = l_orderkey"
        " AND l_shipdate < DATE '1992-02-01' WHERE o_orderkey < 20000",
        None,
        False,
    ),
    (
        "SELECT o_orderkey FROM orders ANTI JOIN lineitem ON o_orderkey = l_orderkey"
        " AND l_shipdate < DATE '1995-01-01' WHERE o_orderkey < 1000",
        None,
        False,
    ),
    # USING
    (
        "SELECT * FROM lineitem JOIN (SELECT o_orderkey AS l_orderkey, o_orderdate FROM orders) o"
        " USING (l_orderkey) WHERE l_orderkey < 100 AND l_shipdate > DATE '1992-01-01'",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, l_linenumber, a.l_shipdate, b.l_receiptdate FROM lineitem a"
        " JOIN lineitem b USING (l_orderkey, l_linenumber) WHERE a.l_shipdate < DATE '1992-03-01'",
        None,
        False,
    ),
    # CTEs, shadowing, subqueries
    (
        "WITH recent AS (SELECT * FROM lineitem WHERE l_shipdate >= DATE '1998-06-01')"
        " SELECT l_shipmode, count(*), sum(l_quantity) FROM recent WHERE l_quantity > 10 GROUP BY ALL",
        None,
        False,
    ),
    (
        "WITH lineitem AS (SELECT * FROM main.lineitem WHERE l_returnflag = 'A')"
        " SELECT count(*), sum(l_quantity) FROM lineitem WHERE l_shipdate < DATE '1993-01-01'",
        None,
        False,
    ),
    (
        "WITH lineitem AS (SELECT l_orderkey, l_shipdate + 10000 AS l_shipdate FROM main.lineitem)"
        " SELECT * FROM lineitem WHERE l_shipdate > DATE '2020-01-01' AND l_orderkey < 50",
        None,
        False,
    ),
    (
        "WITH orders AS (SELECT * FROM lineitem WHERE l_linenumber = 1)"
        " SELECT count(*) FROM orders WHERE l_shipdate < DATE '1992-06-01'",
        None,
        False,
    ),
    (
        "SELECT * FROM (SELECT * FROM lineitem WHERE l_quantity < 5) sub"
        " WHERE sub.l_shipdate > DATE '1998-01-01'",
        None,
        False,
    ),
    (
        "SELECT * FROM orders WHERE o_orderkey IN"
        " (SELECT l_orderkey FROM lineitem WHERE l_shipdate = DATE '1996-02-29')",
        None,
        False,
    ),
    (
        "SELECT count(*) FROM orders WHERE o_orderkey NOT IN"
        " (SELECT l_orderkey FROM lineitem WHERE l_returnflag = 'R' AND l_shipdate < DATE '1993-01-01')",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, o_totalprice FROM orders o WHERE o_orderdate < DATE '1992-02-01' AND EXISTS"
        " (SELECT 1 FROM lineitem l WHERE l.l_orderkey = o.o_orderkey AND l.l_commitdate < l.l_receiptdate)",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, (SELECT max(l_extendedprice) FROM lineitem WHERE l_orderkey = o_orderkey"
        " AND l_shipdate < DATE '1995-01-01') FROM orders WHERE o_orderkey < 200",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, l_linenumber, l_extendedprice FROM lineitem WHERE l_extendedprice >"
        " (SELECT max(l_extendedprice) * 0.9 FROM lineitem WHERE l_shipdate < DATE '1992-06-01')"
        " AND l_shipdate < DATE '1992-04-01'",
        None,
        False,
    ),
    (
        "SELECT o_orderkey, x.n FROM orders, LATERAL (SELECT count(*) AS n FROM lineitem"
        " WHERE l_orderkey = o_orderkey AND l_shipdate < DATE '1995-01-01') x WHERE o_orderkey < 100",
        None,
        False,
    ),
    # GROUP BY / HAVING, windows, QUALIFY, PIVOT
    (
        "SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice * (1 - l_discount)),"
        " count(*) FROM lineitem WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAY"
        " GROUP BY 1, 2 HAVING count(*) > 10 ORDER BY 1, 2",
        None,
        True,
    ),
    (
        "SELECT sum(l_extendedprice * l_discount) FROM lineitem WHERE l_shipdate >= DATE '1994-01-01'"
        " AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
        None,
        False,
    ),
    (
        "SELECT l_shipmode, sum(CASE WHEN o_orderpriority IN ('1-URGENT', '2-HIGH') THEN 1 ELSE 0 END)"
        " AS high FROM orders, lineitem WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')"
        " AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate"
        " AND l_receiptdate >= DATE '1994-01-01' AND l_receiptdate < DATE '1994-01-01' + INTERVAL 1 YEAR"
        " GROUP BY l_shipmode ORDER BY l_shipmode",
        None,
        True,
    ),
    (
        "SELECT l_orderkey, l_linenumber,"
        " row_number() OVER (PARTITION BY l_orderkey ORDER BY l_linenumber DESC),"
        " sum(l_quantity) OVER (PARTITION BY l_orderkey) FROM lineitem"
        " WHERE l_shipdate BETWEEN DATE '1994-01-01' AND DATE '1994-01-10'",
        None,
        False,
    ),
    (
        "SELECT * FROM (SELECT l_orderkey, l_shipdate, count(*) OVER () AS n FROM lineitem)"
        " WHERE l_shipdate < DATE '1992-02-01'",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_shipdate < DATE '1992-03-01'"
        " QUALIFY row_number() OVER (PARTITION BY l_orderkey ORDER BY l_linenumber) = 1",
        None,
        False,
    ),
    (
        "PIVOT (SELECT l_returnflag, l_linestatus, l_quantity FROM lineitem"
        " WHERE l_shipdate < DATE '1993-01-01') ON l_linestatus USING sum(l_quantity) GROUP BY l_returnflag",
        None,
        False,
    ),
    # set operations
    (
        "SELECT l_orderkey FROM lineitem WHERE l_shipdate < DATE '1992-02-01' UNION ALL"
        " SELECT o_orderkey FROM orders WHERE o_orderdate < DATE '1992-01-10' UNION ALL"
        " SELECT l_orderkey FROM lineitem WHERE l_receiptdate > DATE '1998-12-01'",
        None,
        False,
    ),
    (
        "SELECT l_orderkey FROM lineitem WHERE l_shipdate < DATE '1992-06-01' EXCEPT"
        " SELECT l_orderkey FROM lineitem WHERE l_returnflag = 'R'",
        None,
        False,
    ),
    # aliases: column aliases, renamed columns that swap names, qualified names
    (
        "SELECT a, b, c, l_shipdate FROM lineitem AS l(a, b, c) WHERE l.a < 100 AND c > 50",
        None,
        False,
    ),
    (
        "SELECT l_orderkey, l_partkey FROM lineitem AS l(l_partkey, l_orderkey) WHERE l_orderkey < 20",
        None,
        False,
    ),
    (
        "SELECT count(*) FROM main.lineitem WHERE main.lineitem.l_shipdate < DATE '1992-03-01'",
        None,
        False,
    ),
    ("SELECT * FROM memory.main.lineitem WHERE l_orderkey = 7", None, False),
    ("SELECT l_orderkey, l_linenumber FROM lineitem li WHERE LI.L_SHIPDATE > DATE '1998-11-25'", None, False),
    # ORDER BY + LIMIT (a unique order, so the rows are determined)
    (
        "SELECT l_orderkey, l_linenumber, l_extendedprice FROM lineitem WHERE l_shipmode = 'AIR'"
        " AND l_shipdate > DATE '1997-01-01'"
        " ORDER BY l_extendedprice DESC, l_orderkey, l_linenumber LIMIT 17",
        None,
        True,
    ),
    # partition columns of the hive layouts
    ("SELECT count(*) FROM lineitem WHERE l_shipmode = 'RAIL' AND l_linenumber = 3", None, False),
    ("SELECT count(*), min(l_shipdate) FROM lineitem WHERE l_shipmode IS NULL", None, False),
    # every file pruned: the empty result keeps the schema
    ("SELECT * FROM lineitem WHERE l_shipdate < DATE '1900-01-01'", None, False),
    ("SELECT count(*), min(l_shipdate), sum(l_quantity) FROM lineitem WHERE l_orderkey < 0", None, False),
    (
        "SELECT l.*, o.* FROM lineitem l LEFT JOIN orders o ON l.l_orderkey = o.o_orderkey"
        " WHERE l.l_shipdate > DATE '2100-01-01'",
        None,
        False,
    ),
    # parameters
    ("SELECT * FROM lineitem WHERE l_orderkey = ?", [4421], False),
    ("SELECT * FROM lineitem WHERE l_shipdate BETWEEN ? AND ?", [D(1995, 3, 1), D(1995, 3, 3)], False),
    (
        "SELECT l_orderkey, l_linenumber FROM lineitem WHERE l_orderkey = $k AND l_linenumber <= $n",
        {"k": 37, "n": 2},
        False,
    ),
    (
        "SELECT count(*) FROM lineitem JOIN orders ON l_orderkey = o_orderkey WHERE o_orderdate < ?"
        " AND l_shipdate < DATE '1992-06-01'",
        [D(1992, 2, 1)],
        False,
    ),
]


def _sort_key(row: tuple[Any, ...]) -> str:
    return repr(row)


@pytest.mark.parametrize("layout_name", list(LAYOUTS))
def test_queries(data: tuple[dict[str, Layout], dict[str, Column]], layout_name: str) -> None:
    """Hand-written queries: the same column names, types and rows as plain DuckDB."""
    layout = data[0][layout_name]
    failures = []
    pruned = 0
    for query, params, ordered in QUERIES:
        want = layout.plain.sql(query, params=params)
        planned = plan(layout.con, query, params)
        try:
            got = planned.relation()
        except duckdb.Error as exc:
            failures.append(f"{query}\n{planned}\nraised {exc!r}; plain DuckDB did not\n{planned.sql}")
            continue
        pruned += any(t.kept < t.total for t in planned.tables)
        want_rows, got_rows = want.fetchall(), got.fetchall()
        if not ordered:
            want_rows.sort(key=_sort_key)
            got_rows.sort(key=_sort_key)
        checks = {
            "columns": (got.columns, want.columns),
            "types": ([str(t) for t in got.types], [str(t) for t in want.types]),
            "rows": (got_rows, want_rows),
        }
        for what, (ours, theirs) in checks.items():
            if ours != theirs:
                detail = _row_diff(got, want) if what == "rows" else f"{ours} != {theirs}"
                failures.append(f"{query}\n{planned}\n{what} differ: {detail}")
    assert not failures, f"{len(failures)} of {len(QUERIES)} queries differ:\n\n" + "\n\n".join(failures)
    assert len(QUERIES) >= 30
    if layout_name in CLUSTERED:
        assert pruned >= len(QUERIES) // 2, pruned
