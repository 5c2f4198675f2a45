"""Queries the secondary index can answer without reading rows: counts and existence tests.

Read off DuckDB's syntax tree, two shapes qualify, each over a single reference to a registered
table whose every WHERE conjunct is about that table (the planner then checks that each one
translated exactly):

- ``SELECT count(*) [AS name] FROM t WHERE p`` as the whole statement (no GROUP BY, HAVING,
  QUALIFY, DISTINCT, LIMIT, ORDER BY, sample, FILTER): the answer is the number of rows where
  ``p`` is TRUE, which ``IndexedTable.count`` gets from exact selections alone;
- a SELECT whose rows only matter by whether there is one: the subquery of ``[NOT] EXISTS (SELECT
  ... FROM t WHERE p)`` (no GROUP BY, HAVING, QUALIFY or modifiers: then it has a row exactly when
  a row of ``t`` passes ``p``, or always, with an aggregate), and ``SELECT <constants> FROM t WHERE
  p LIMIT 1`` as the whole statement. One matching row gives the same answer as all of them, so
  such a reference reads one row the index found, or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from adapters.duckdb.scope import TableRef, conjuncts, walk_dicts
from adapters.duckdb.serialized import ROW_COUNT, STANDARD_HANDLING, Class, Key, LiteralKind, Subquery, Type

__all__ = ["COUNT_NAME", "CountQuery", "count_query", "existence_references"]

COUNT_NAME = "count_star()"  # DuckDB's name for an unaliased count(*) or count()

Node = dict[str, Any]


@dataclass(frozen=True)
class CountQuery:
    """``SELECT count(*) AS name FROM ref WHERE ...``."""

    ref: TableRef
    name: str


def count_query(statement: Node, refs: Sequence[TableRef]) -> CountQuery | None:
    """The count the statement is, if it is ``SELECT count(*) FROM t WHERE p`` over ``refs[i]``."""
    ref = _sole_reference(statement, refs)
    if ref is None or statement.get(Key.MODIFIERS) or statement.get(Key.WHERE_CLAUSE) is None:
        return None
    items = statement.get(Key.SELECT_LIST) or []
    if len(items) != 1 or not _is_count_star(items[0]):
        return None
    return CountQuery(ref, str(items[0].get(Key.ALIAS) or COUNT_NAME))


def existence_references(statement: Node, refs: Sequence[TableRef]) -> set[int]:
    """``id``s of the references whose SELECT needs only to know whether one row passes its WHERE."""
    found: set[int] = set()
    ref = _sole_reference(statement, refs)
    modifiers = statement.get(Key.MODIFIERS) or []
    if (
        ref is not None
        and len(modifiers) == 1
        and _is_limit_one(modifiers[0])
        and all(item.get(Key.CLASS) == Class.CONSTANT for item in statement.get(Key.SELECT_LIST) or [])
    ):
        found.add(id(ref))
    for node in walk_dicts(statement):
        if node.get(Key.CLASS) == Class.SUBQUERY and node.get(Key.SUBQUERY_TYPE) == Subquery.EXISTS:
            inner = (node.get(Key.SUBQUERY) or {}).get(Key.NODE) or {}
            ref = _sole_reference(inner, refs)
            if ref is not None and not inner.get(Key.MODIFIERS):
                found.add(id(ref))
    return found


def _sole_reference(select: Node, refs: Sequence[TableRef]) -> TableRef | None:
    """The reference that is the whole FROM of a plain SELECT node, every conjunct of whose WHERE
    may prune it, or None."""
    if (
        select.get(Key.TYPE) != Type.SELECT_NODE
        or select.get(Key.GROUP_EXPRESSIONS)
        or select.get(Key.GROUP_SETS)
    ):
        return None
    if any(select.get(k) is not None for k in (Key.HAVING, Key.QUALIFY, Key.SAMPLE)):
        return None
    if (select.get(Key.AGGREGATE_HANDLING) or STANDARD_HANDLING) != STANDARD_HANDLING:
        return None
    source = select.get(Key.FROM_TABLE)
    ref = next((r for r in refs if r.node is source), None)
    if ref is None or ref.refused or ref.node.get(Key.SAMPLE) is not None:
        return None
    where = select.get(Key.WHERE_CLAUSE)
    wanted = conjuncts(where) if where is not None else []
    pushed = {id(p.node) for p in ref.pushable}
    if len(pushed) != len(wanted) or any(id(c) not in pushed for c in wanted):
        return None
    if any(p.needs_null_rejection for p in ref.pushable):
        return None
    return ref


def _is_count_star(item: Node) -> bool:
    return (
        item.get(Key.CLASS) == Class.FUNCTION
        and item.get(Key.FUNCTION_NAME) == "count_star"
        and not item.get(Key.SCHEMA)
        and not item.get(Key.CATALOG)
        and not item.get(Key.ARGUMENTS)
        and item.get(Key.FILTER) is None
        and not item.get(Key.DISTINCT)
        and not ((item.get(Key.ORDER_BYS) or {}).get(Key.ORDERS))
        and not item.get(Key.EXPORT_STATE)
    )


def _is_limit_one(modifier: Node) -> bool:
    limit = modifier.get(Key.LIMIT) or {}
    literal = limit.get(Key.LITERAL) or {}
    return (
        modifier.get(Key.TYPE) == Type.LIMIT_MODIFIER
        and modifier.get(Key.OFFSET) is None
        and modifier.get(Key.LIMIT_TYPE, ROW_COUNT) == ROW_COUNT
        and limit.get(Key.CLASS) == Class.CONSTANT
        and str(literal.get(Key.TEXT)) == "1"
        and literal.get(Key.KIND) in (LiteralKind.INTEGER, LiteralKind.BIGINT)
    )
