"""Dynamic file pruning: a filtered, small side of an equi-join prunes a registered table by its keys.

As Spark's dynamic partition pruning and Databricks' dynamic file pruning do, ``sql``/``plan``
evaluate the join keys of the small side first, on the user's connection, and prune the large
registered side with them: ``col IN (the keys)`` (range and bloom filters), or ``col BETWEEN
min AND max`` when there are more than the registration's ``dynamic_keys``, added to the
reference's pruning predicate. Two shapes qualify:

- ``col = other.col`` between two references of one FROM (``scope.JoinKey``), where the
  reference may be pruned by the equality (an inner join or WHERE, the right side of a LEFT JOIN,
  the left of a RIGHT JOIN, either side of a SEMI join, the right side of an ANTI join; never
  the preserved side of an outer join, nor a FULL join): the other side is a table of DuckDB's own
  or a registered one (read pruned), read with its own filters (the conjuncts that may prune it);
- ``col IN (SELECT ...)`` / ``col = ANY (SELECT ...)`` as a conjunct that may prune the reference,
  with an uncorrelated subquery: it runs on its own (a correlated one does not bind alone, and a
  name that binds alone binds the same way inside the query: inner scopes come first).

Why it is sound: every output row needs the equality TRUE, so a row of the pruned side pairs with a
row of the other side whose key equals its own; the other side's rows are read through filters each
of which may prune it alone (a superset of the rows that reach the join), so every key that can pair
is among those read. NULL keys never make an equality TRUE: they are dropped. ``NOT IN``, anti
joins and NOT EXISTS keep rows that have no partner: never used. Keys are used only when DuckDB
compares them exactly as the index holds the column's values: integers of any width, or one type
(strings, under no collation; dates; timestamps; decimals); anything else is refused, and said why.

Evaluating the other side costs a query, so it is done only when that side has a filter (its keys
would otherwise be all of them), is smaller than the pruned side (its rows in the files the index
keeps, or DuckDB's estimate for its own table), the pruned side still has files to skip, and its
statistics could use keys at all (``_hopeless``: clustered ranges on the column, or bloom filters
and few keys). A registered other side is read from the files its own filters kept (the plan's
read of it, not planned a second time); a subquery is planned as a query of its own.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow.compute as pc

from adapters.duckdb.clock import TIME_FUNCTIONS
from adapters.duckdb.parse import consistent_functions
from adapters.duckdb.scope import JoinKey, TableRef, column_refs, same_ignoring_locations, walk_dicts
from adapters.duckdb.serialized import (
    Class,
    Key,
    Subquery,
    Type,
    column_names,
    conjunction_and,
    is_base_table,
    parse_result,
    select_node,
)
from hudi_expr import And, ColumnStats, Expression, GreaterThanOrEqual, In, LessThanOrEqual, Reference

__all__ = [
    "DYNAMIC_KEYS",
    "SMALL_SIDE",
    "Context",
    "Derived",
    "Refusal",
    "Target",
    "derive",
    "no_replacements",
]

_PLACEHOLDER = "__hudi_keys_source"
DYNAMIC_KEYS = 10_000
"""Above this many distinct keys, only their min and max prune (``register(dynamic_keys=...)``)."""
SMALL_SIDE = 10_000
"""A side of at most this many rows is read for keys even when only bloom filters could use them."""

Node = dict[str, Any]

_INTEGERS = frozenset(
    {
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
    }
)
# Aggregates whose value does not depend on the order rows come in (with consistent arguments).
_AGGREGATES = frozenset({"min", "max", "count", "count_star", "sum", "bool_and", "bool_or"})
# Types whose values DuckDB compares exactly as the index holds them, when both sides have the type.
_SAME_TYPE = ("VARCHAR", "DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "DECIMAL(")


@dataclass(frozen=True)
class Derived:
    """A filter derived from a conjunct: ``expr`` (unbound) is TRUE on every row that can pair."""

    conjunct: Node
    expr: Expression
    text: str  # "dynamic: l_orderkey IN 1,234 keys from orders (o_orderdate >= ...)"


@dataclass(frozen=True)
class Refusal:
    """A conjunct that could have given keys, and why it did not."""

    conjunct: Node
    why: str


@dataclass(frozen=True)
class Context:
    """What deriving needs of the plan: the connection, and the planner's answers."""

    con: duckdb.DuckDBPyConnection
    cte_names: set[str]  # of the statement: a subquery naming one does not run alone
    text: Callable[[Node], str]  # the SQL text a node came from
    rows: Callable[[TableRef], float | None]  # rows the other side reads (None: not known)
    read: Callable[[TableRef], str]  # a registered reference's read of its kept files ("": the view)
    relation: Callable[[str], duckdb.DuckDBPyRelation]  # a query, registered tables read pruned


@dataclass(frozen=True)
class _Source:
    conjunct: Node
    inner: Node  # a query node whose one output column holds the keys
    described: str  # where the keys come from, for the plan ("": the query's text)
    rows: float | None  # rows the other side reads (None: not known)
    read: str | None = None  # the text read in place of _PLACEHOLDER; None: plan the query


@dataclass(frozen=True)
class Target:
    """The registered table a reference reads, as far as deriving filters for it goes."""

    types: dict[str, str]  # DuckDB type of each column
    limit: int  # above this many keys only their min and max are used
    rows: float  # rows in the files the index keeps for the reference
    kept: int  # those files
    stats: Callable[[str], ColumnStats | None]  # a column's statistics over the table's files


def derive(ref: TableRef, target: Target, context: Context) -> tuple[list[Derived], list[Refusal]]:
    """The filters the other sides of ``ref``'s equi-joins and IN subqueries give it."""
    derived: list[Derived] = []
    refused: list[Refusal] = []
    candidates: list[tuple[Node, Node, Callable[[], _Source | str]]] = []
    for join in ref.joins:
        candidates.append((join.conjunct, join.column, _bind(_join_source, join, target.rows, context)))
    for pushable in ref.pushable:
        node = pushable.node
        if node.get(Key.CLASS) == Class.SUBQUERY and node.get(Key.SUBQUERY_TYPE) == Subquery.ANY:
            child = node.get(Key.CHILD) or {}
            if node.get(Key.COMPARISON_TYPE) != "COMPARE_EQUAL":
                refused.append(Refusal(node, "dynamic pruning: a subquery compared by other than ="))
                continue
            candidates.append((node, child, _bind(_subquery_source, node, context)))
    for conjunct, column_node, source_of in candidates:
        column = _column(ref, column_node, target.types)
        if column is None:
            why = "the joined side is not a column of the table"
            refused.append(Refusal(conjunct, f"dynamic pruning: {why}"))
            continue
        found = source_of()
        if isinstance(found, str):
            refused.append(Refusal(conjunct, f"dynamic pruning: {found}"))
            continue
        hopeless = _hopeless(target.stats(column), column, target.kept, found.rows)
        if hopeless:
            refused.append(Refusal(conjunct, f"dynamic pruning: {hopeless}"))
            continue
        result = _keys(found, column, target.types[column], target.limit, context)
        if isinstance(result, str):
            refused.append(Refusal(conjunct, f"dynamic pruning: {result}"))
        else:
            derived.append(result)
    return derived, refused


def _bind(function: Callable[..., _Source | str], *args: Any) -> Callable[[], _Source | str]:
    return lambda: function(*args)


def _column(ref: TableRef, node: Node, types: dict[str, str]) -> str | None:
    """The table column a COLUMN_REF node names (a top-level column), or None."""
    if node.get(Key.CLASS) != Class.COLUMN_REF:
        return None
    path = ref.column_path(column_names(node))
    return path if path is not None and path in types else None


# --------------------------------------------------------------------------------------- sources


def _join_source(join: JoinKey, target_rows: float, context: Context) -> _Source | str:
    other = join.other
    node = other.node
    if node.get(Key.TYPE) != Type.BASE_TABLE or other.columns is None:
        return f"{other.alias} is not a table (a CTE, subquery or table function)"
    if node.get(Key.SAMPLE) is not None or node.get(Key.AT_CLAUSE) is not None:
        return f"{other.alias} is sampled or read at another version"
    filters = [p.node for p in other.pushable if not p.needs_null_rejection and _plain_filter(p.node)]
    if not filters:
        return f"{other.alias} has no filter: its keys would be all of them"
    rows = context.rows(other)
    if rows is None:
        return f"{other.alias} is neither a registered table nor a table of DuckDB's (its size is not known)"
    if rows >= target_rows:
        return f"{other.alias} is not smaller (about {rows:,.0f} rows against {target_rows:,.0f})"
    where = filters[0] if len(filters) == 1 else conjunction_and(filters)
    read = context.read(other) if other.registered is not None else ""
    if read:
        # The files its own filters keep, as the plan reads them (no second planning of it).
        node = {**node, Key.TABLE_NAME: _PLACEHOLDER, Key.SCHEMA_NAME: "", Key.CATALOG_NAME: ""}
        node[Key.ALIAS] = other.alias
        if Key.QUALIFIED_NAME in node:
            node[Key.QUALIFIED_NAME] = {Key.PATH: [_PLACEHOLDER]}
    inner = select_node([join.other_column], node, where)
    shown = str(other.node.get(Key.TABLE_NAME))
    if other.alias.lower() != shown.lower():
        shown += f" AS {other.alias}"
    described = f"{shown} ({' AND '.join(context.text(f) for f in filters)})"
    return _Source(join.conjunct, inner, described, rows, read)


def _subquery_source(conjunct: Node, context: Context) -> _Source | str:
    inner = (conjunct.get(Key.SUBQUERY) or {}).get(Key.NODE) or {}
    nodes = list(walk_dicts(inner))
    if any(n.get(Key.CLASS) == Class.PARAMETER for n in nodes):
        return "the subquery has a query parameter"
    inner_ctes = {
        str(e.get(Key.KEY)).lower() for n in nodes for e in (n.get(Key.CTE_MAP) or {}).get(Key.MAP) or []
    }
    for n in nodes:
        name = str(n.get(Key.TABLE_NAME) or "").lower()
        qualified = n.get(Key.SCHEMA_NAME) or n.get(Key.CATALOG_NAME)
        if is_base_table(n) and not qualified and name in context.cte_names - inner_ctes:
            return f"the subquery reads {name}, a CTE of the query"
    if not any(n.get(Key.WHERE_CLAUSE) is not None for n in nodes if Key.FROM_TABLE in n):
        return "the subquery has no WHERE: its keys would be all of a table's"
    changing = _changing(nodes)
    if changing:
        return f"the subquery may give other rows when the query runs: {changing}"
    return _Source(conjunct, inner, "", None)


def _plain_filter(node: Node) -> bool:
    """A conjunct that may filter the other side in a query of its own: it names a column, holds
    no subquery, lambda or parameter (which could name or need the rest of the query), and keeps
    the same rows when the query runs later (no ``now()``, no ``random()``)."""
    if not any(True for _ in column_refs(node)):
        return False
    nodes = list(walk_dicts(node))
    if any(n.get(Key.CLASS) in (Class.SUBQUERY, Class.LAMBDA, Class.PARAMETER) for n in nodes):
        return False
    return not _changing(nodes)


def _changing(nodes: list[Node]) -> str:
    """What, among the nodes of a query, may give other rows in another run ("" if nothing): the
    keys are read before the query runs, so they must be the ones it will see. A function must be
    one of DuckDB's consistent scalar functions or an aggregate blind to row order; a LIMIT,
    DISTINCT ON, a window or a sample may pick other rows; the time keywords read the clock."""
    functions = consistent_functions()
    # A table function (range(), read_parquet()) reads the same rows again; its arguments count.
    tables = {id(n.get(Key.FUNCTION)) for n in nodes if n.get(Key.TYPE) == Type.TABLE_FUNCTION}
    for n in nodes:
        cls, kind = n.get(Key.CLASS), n.get(Key.TYPE)
        if cls == Class.FUNCTION and id(n) not in tables:
            name = str(n.get(Key.FUNCTION_NAME, "")).lower()
            if name not in functions and name not in _AGGREGATES:
                return f"{name}()"
        elif cls == Class.WINDOW:
            return "a window function"
        elif cls == Class.COLUMN_REF and len(parts := n.get(Key.COLUMN_NAMES) or []) == 1:
            if str(parts[0]).lower() in TIME_FUNCTIONS:
                return str(parts[0])  # current_date and kin, unless a column has the name
        elif kind in (Type.LIMIT_MODIFIER, Type.LIMIT_PERCENT_MODIFIER):
            return "a LIMIT"
        elif kind == Type.DISTINCT_MODIFIER and n.get(Key.DISTINCT_ON_TARGETS):
            return "DISTINCT ON"
        elif n.get(Key.SAMPLE) is not None and (
            Key.FROM_TABLE in n or kind in (Type.BASE_TABLE, Type.TABLE_FUNCTION)
        ):
            return "a sample"
    return ""


def _hopeless(stats: ColumnStats | None, column: str, kept: int, rows: float | None) -> str:
    """Why no set of keys could skip files ("" when some may): reading the other side first costs
    a query, paid only where the table's statistics can use its keys. Ranges can when the files
    hold distinct stretches of the column (on average a file's range overlaps fewer than half of
    the others'); membership filters (bloom, value index) when the keys are few: with more than
    a few per file, each file holds one of them about as surely as not."""
    if stats is None:
        return ""
    keys = stats.sort_keys
    valid = np.asarray(pc.and_(stats.min.is_valid(), stats.max.is_valid()))
    if keys is None or valid.sum() < 2:
        return ""  # nothing known: the keys may tell
    lo, hi = keys[0][valid], keys[1][valid]
    # Per file, how many files' ranges meet its own: those not wholly above it nor wholly below.
    meeting = np.searchsorted(np.sort(lo), hi, side="right") - np.searchsorted(np.sort(hi), lo, side="left")
    if meeting.mean() < len(lo) / 2:
        return ""
    few = rows is None or rows <= max(3 * kept, SMALL_SIDE)
    if (stats.bloom is not None or stats.membership) and few:
        return ""
    if stats.bloom is not None or stats.membership:
        return (
            f"the files' {column} ranges overlap and the other side has too many rows (about "
            f"{rows:,.0f}) for bloom filters to skip files"
        )
    return f"the files' {column} ranges overlap and it has no bloom filter: no keys could skip a file"


# ------------------------------------------------------------------------------------------- keys


def _keys(source: _Source, column: str, column_type: str, limit: int, context: Context) -> Derived | str:
    """Evaluate the source's keys and make the filter, or say why not."""
    con = context.con
    text = _sql_text(con, source.inner)
    if text is None:
        return "its query could not be written back as SQL text"
    if source.read:
        if len(re.findall(_PLACEHOLDER, text)) != 1:
            return "its query could not be written back as SQL text"
        text = re.sub(f'"?{_PLACEHOLDER}"?', lambda _: source.read or "", text)
    query = (
        f"SELECT count(DISTINCT k) AS n, min(k) AS lo, max(k) AS hi, "
        f"CASE WHEN count(DISTINCT k) <= {int(limit)} THEN list(DISTINCT k) END AS keys "
        f"FROM ({text}) AS __hudi_keys(k) WHERE k IS NOT NULL"
    )
    with no_replacements(con):
        try:
            # Bound, not run; a subquery is planned (registered tables in it read pruned).
            relation = context.relation(query) if source.read is None else con.sql(query)
        except duckdb.BinderException as exc:
            if not source.described:  # a subquery of the query: alone, an outer name is unbound
                return f"correlated subquery (alone it does not bind: {_first_line(exc)})"
            return f"its keys could not be read ({_first_line(exc)})"
        except duckdb.Error as exc:
            return f"its keys could not be read ({_first_line(exc)})"
        key_type = str(relation.types[1])
        why = _comparable(key_type, column_type, column)
        if why is None and key_type == "VARCHAR":
            why = _collation(con, text)
        if why is not None:
            return why
        try:
            row = relation.to_arrow_table().to_pylist()[0]
        except duckdb.Error as exc:
            return f"its keys could not be read ({_first_line(exc)})"
    n = int(row["n"])
    described = source.described or f"({text})"
    integers = key_type in _INTEGERS
    ref = Reference(column)
    if row["keys"] is not None or n == 0:
        values = [_value(v, integers) for v in row["keys"] or []]
        keys = "1 key" if n == 1 else f"{n:,} keys"
        text = f"dynamic: {column} IN {keys} from {described}"
        return Derived(source.conjunct, In(ref, values), text)
    lo, hi = _value(row["lo"], integers), _value(row["hi"], integers)
    expr = And(GreaterThanOrEqual(ref, lo), LessThanOrEqual(ref, hi))
    text = (
        f"dynamic: {column} BETWEEN {_show(lo)} AND {_show(hi)} (min and max of {n:,} keys from "
        f"{described}: above the limit of {limit:,})"
    )
    return Derived(source.conjunct, expr, text)


def _comparable(key_type: str, column_type: str, column: str) -> str | None:
    """None when DuckDB's ``column = key`` compares exactly the values the index holds, else why not."""
    key, col = key_type.upper(), column_type.upper()
    if key in _INTEGERS and col in _INTEGERS:
        return None  # DuckDB widens both to an integer type holding both: exact
    if key == col and key.startswith(_SAME_TYPE):
        return None
    if key == col:
        return f"keys of type {key_type} are not used (floating point, nested or other types)"
    return (
        f"the keys are {key_type} and {column} is {column_type}: DuckDB casts one to the other's type "
        "to compare, which is not the values the index holds"
    )


def _collation(con: duckdb.DuckDBPyConnection, text: str) -> str | None:
    """Why string keys may not compare byte for byte (a collation), or None."""
    if "collate" in text.lower():
        return "the keys' query names a collation"
    [(default, collated)] = con.execute(
        "SELECT current_setting('default_collation'), "
        "EXISTS (SELECT 1 FROM duckdb_tables() WHERE sql ILIKE '%collate%') "
        "OR EXISTS (SELECT 1 FROM duckdb_views() WHERE NOT internal AND sql ILIKE '%collate%')"
    ).fetchall()
    if default:
        return f"strings compare under the collation {default!r} (default_collation)"
    if collated:
        return "a table or view declares a collation: string keys may not compare byte for byte"
    return None


def _sql_text(con: duckdb.DuckDBPyConnection, node: Node) -> str | None:
    """SQL text of a query node, checked to parse back to the same node; None if it does not."""
    statement = parse_result(node)
    try:
        [(text, tree)] = con.execute(
            "SELECT t, json_serialize_sql(t) FROM (SELECT json_deserialize_sql(?::JSON) AS t)",
            [json.dumps(statement)],
        ).fetchall()
    except duckdb.Error:
        return None
    parsed = json.loads(tree)
    statements = parsed.get(Key.STATEMENTS) or []
    if parsed.get(Key.ERROR) or len(statements) != 1:
        return None
    return str(text) if same_ignoring_locations(statements[0][Key.NODE], node) else None


@contextlib.contextmanager
def no_replacements(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Python replacement scans off: a name must be the catalog's, not a variable of this module."""
    [(before,)] = con.execute("SELECT current_setting('python_enable_replacements')").fetchall()
    if not before:
        yield
        return
    con.execute("SET python_enable_replacements = false")
    try:
        yield
    finally:
        con.execute("SET python_enable_replacements = true")


def _value(value: Any, integer: bool) -> Any:
    if integer and isinstance(value, decimal.Decimal):
        return int(value)  # HUGEINT comes back as a DECIMAL(38, 0)
    return value


def _show(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    return str(value)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
