"""Which columns of each registered table reference a query may read, read off DuckDB's syntax tree.

A merge-on-read table is an Arrow stream DuckDB cannot ask for fewer columns (``merged``), so the
planner asks it only for the columns the query uses. Soundness comes first: a column left out is
a wrong answer (its values read as NULL), one read for nothing only costs time. So the rule is by
name over the whole statement, not by scope: a column of the reference is used when any column
reference anywhere in the statement (subqueries, lambdas, every clause) has a name part equal to
its name, ignoring case, as DuckDB matches names. Every column is used when

- a ``*`` or ``COLUMNS(...)`` may expand the reference: an unqualified one in a SELECT whose FROM
  reads it directly (or in no SELECT with a FROM), a qualified one naming its alias or table;
- a column reference ends with its alias or table name (``SELECT t FROM t``: the row as a struct);
- a positional reference (``#1``), a NATURAL join or a POSITIONAL join (which pairs rows by their
  order in each stream: read as before, every column) is anywhere in the statement;
- its visible columns are not known.

``USING (k)`` names ``k`` without a column reference, and ``s.*`` of a struct column ``s`` names
``s``: both count as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.duckdb.scope import TableRef
from adapters.duckdb.serialized import Class, Key, Node, Type, column_names

__all__ = ["used_columns"]


def used_columns(
    statement: Node, refs: Sequence[TableRef], columns: Sequence[Sequence[str]]
) -> list[tuple[str, ...] | None]:
    """For each reference (of ``refs``, whose table has ``columns`` in registered order), the
    columns the statement may read from it, in that order; None: every column."""
    names: set[str] = set()
    every: set[int] = set()  # indexes of the references whose every column is used
    by_node = {id(ref.node): k for k, ref in enumerate(refs)}
    called = {
        k: {ref.alias.lower(), str(ref.node.get(Key.TABLE_NAME) or "").lower()} - {""}
        for k, ref in enumerate(refs)
    }
    stack: list[tuple[Any, Node | None]] = [(statement, None)]
    while stack:
        item, select = stack.pop()
        if isinstance(item, list):
            stack.extend((value, select) for value in item)
            continue
        if not isinstance(item, dict):
            continue
        if item.get(Key.TYPE) == Type.SELECT_NODE:
            select = item
        cls = item.get(Key.CLASS)
        if cls == Class.COLUMN_REF:
            parts = [str(p).lower() for p in column_names(item)]
            names.update(parts)
            if parts:
                every.update(k for k, known in called.items() if parts[-1] in known)
        elif cls == Class.STAR:
            every.update(_expanded(item, select, by_node, called))
            # ``s.*`` of a struct column ``s`` expands its fields: ``s`` is used.
            relation = str(item.get(Key.RELATION_NAME) or "").lower()
            names.update([relation, *relation.split(".")])
        elif cls == Class.POSITIONAL_REFERENCE or item.get(Key.REF_TYPE) in ("NATURAL", "POSITIONAL"):
            every.update(range(len(refs)))
        names.update(str(c).lower() for c in item.get(Key.USING_COLUMNS) or [])
        stack.extend((value, select) for value in item.values())
    out: list[tuple[str, ...] | None] = []
    for k, (ref, table) in enumerate(zip(refs, columns, strict=True)):
        if k in every or ref.columns is None:
            out.append(None)
            continue
        seen = {column for visible, column in ref.columns.items() if visible in names}
        used = tuple(c for c in table if c in seen or c.lower() in names)
        out.append(None if len(used) == len(table) else used)
    return out


def _expanded(
    star: Node, select: Node | None, by_node: dict[int, int], called: dict[int, set[str]]
) -> set[int]:
    """The references a ``*`` (or ``COLUMNS(...)``) may expand to."""
    relation = str(star.get(Key.RELATION_NAME) or "").lower()
    if relation:
        last = relation.rsplit(".", 1)[-1]
        return {k for k, known in called.items() if relation in known or last in known}
    if select is None or not select.get(Key.FROM_TABLE):
        return set(called)
    return {by_node[id(leaf)] for leaf in _leaves(select[Key.FROM_TABLE]) if id(leaf) in by_node}


def _leaves(ref: Node) -> list[Node]:
    """The table references a FROM tree reads directly (not those inside its subqueries)."""
    out: list[Node] = []
    stack = [ref]
    while stack:
        node = stack.pop()
        if node.get(Key.TYPE) == Type.JOIN:
            stack += [node.get(Key.LEFT) or {}, node.get(Key.RIGHT) or {}]
        else:
            out.append(node)
    return out
