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
    if ref is None or statement.get("modifiers") or statement.get("where_clause") is None:
        return None
    items = statement.get("select_list") or []
    if len(items) != 1 or not _is_count_star(items[0]):
        return None
    return CountQuery(ref, str(items[0].get("alias") or COUNT_NAME))


def existence_references(statement: Node, refs: Sequence[TableRef]) -> set[int]:
    """``id``s of the references whose SELECT needs only to know whether one row passes its WHERE."""
    found: set[int] = set()
    ref = _sole_reference(statement, refs)
    modifiers = statement.get("modifiers") or []
    if (
        ref is not None
        and len(modifiers) == 1
        and _is_limit_one(modifiers[0])
        and all(item.get("class") == "CONSTANT" for item in statement.get("select_list") or [])
    ):
        found.add(id(ref))
    for node in walk_dicts(statement):
        if node.get("class") == "SUBQUERY" and node.get("subquery_type") == "EXISTS":
            inner = (node.get("subquery") or {}).get("node") or {}
            ref = _sole_reference(inner, refs)
            if ref is not None and not inner.get("modifiers"):
                found.add(id(ref))
    return found


def _sole_reference(select: Node, refs: Sequence[TableRef]) -> TableRef | None:
    """The reference that is the whole FROM of a plain SELECT node, every conjunct of whose WHERE
    may prune it, or None."""
    if select.get("type") != "SELECT_NODE" or select.get("group_expressions") or select.get("group_sets"):
        return None
    if any(select.get(k) is not None for k in ("having", "qualify", "sample")):
        return None
    if (select.get("aggregate_handling") or "STANDARD_HANDLING") != "STANDARD_HANDLING":
        return None
    source = select.get("from_table")
    ref = next((r for r in refs if r.node is source), None)
    if ref is None or ref.refused or ref.node.get("sample") is not None:
        return None
    where = select.get("where_clause")
    wanted = conjuncts(where) if where is not None else []
    pushed = {id(p.node) for p in ref.pushable}
    if len(pushed) != len(wanted) or any(id(c) not in pushed for c in wanted):
        return None
    if any(p.needs_null_rejection for p in ref.pushable):
        return None
    return ref


def _is_count_star(item: Node) -> bool:
    return (
        item.get("class") == "FUNCTION"
        and item.get("function_name") == "count_star"
        and not item.get("schema")
        and not item.get("catalog")
        and not item.get("arguments")
        and item.get("filter") is None
        and not item.get("distinct")
        and not ((item.get("order_bys") or {}).get("orders"))
        and not item.get("export_state")
    )


def _is_limit_one(modifier: Node) -> bool:
    limit = modifier.get("limit") or {}
    literal = limit.get("literal") or {}
    return (
        modifier.get("type") == "LIMIT_MODIFIER"
        and modifier.get("offset") is None
        and modifier.get("limit_type", "ROW_COUNT") == "ROW_COUNT"
        and limit.get("class") == "CONSTANT"
        and str(literal.get("text")) == "1"
        and literal.get("kind") in ("INTEGER", "BIGINT")
    )
