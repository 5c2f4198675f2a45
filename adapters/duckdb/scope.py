"""Which conjuncts of a query may prune which table reference, read off DuckDB's syntax tree.

Every SELECT node of a statement (in CTEs, subqueries in FROM or in expressions, set operations) is
looked at on its own: its FROM tree gives the table references in scope and the join nodes, its
WHERE clause and INNER JOIN conditions give conjuncts. A conjunct may prune a reference when every
column it names belongs to that reference and reading fewer of that reference's files cannot change
the rows the conjunct lets through:

- below an INNER or CROSS join (and on the outer side of a LEFT/RIGHT join, and the left side of a
  SEMI/ANTI join), any conjunct may;
- on the NULL-filled side of an outer join, only a conjunct that is not TRUE on an all-NULL row
  (the caller checks: ``Pushable.needs_null_rejection``), because the rows the join fills with
  NULLs would otherwise pass a test like ``b.x IS NULL``; a LEFT JOIN's own ON conjuncts about its
  right side may, as filtering that side first is what ON means (a FULL JOIN's may not);
- under ASOF and POSITIONAL joins and on the right of SEMI/ANTI joins nothing from above may,
  since which row pairs with which depends on the rows that are there.

An unqualified column belongs to the reference whose table has that column: if two did, DuckDB
would reject the query as ambiguous, and a table's own columns hide outer ones and SELECT aliases.
Columns merged by USING or NATURAL joins are left alone, as is anything named through an outer
query (a correlated reference), so a conjunct with such a column prunes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Pushable",
    "TableRef",
    "TableReferences",
    "column_refs",
    "conjuncts",
    "find_references",
    "walk_dicts",
]

Node = dict[str, Any]
QUERY_NODES = ("SELECT_NODE",)
_PAIRED = "rows pair up by position or ASOF, or it is the inner side of SEMI/ANTI"


@dataclass(eq=False)
class TableRef:
    """One table reference in a FROM clause (``lineitem AS l``), registered or not."""

    node: Node
    alias: str  # the name the query qualifies its columns with
    columns: dict[str, str] | None  # visible name (lower case) -> table column; None: not known
    registered: str | None  # the registered table it reads, or None
    pushable: list[Pushable] = field(default_factory=list)
    refused: list[tuple[Node, str]] = field(default_factory=list)  # conjuncts about it, not usable

    @property
    def span(self) -> tuple[int, int]:
        """Byte offset and length of the reference's text (name, alias, column aliases)."""
        return int(self.node["query_location"]), int(self.node["query_location_length"])

    def column_path(self, parts: list[str]) -> str | None:
        """The column path that name parts mean in this reference, or None."""
        if self.columns is None:
            return None
        if len(parts) > 1 and parts[0].lower() == self.alias.lower():
            parts = parts[1:]
        elif len(parts) > 2 and not self.node.get("alias") and _qualifies(self.node, parts):
            parts = parts[2:]
        if not parts or not all(parts):
            return None
        column = self.columns.get(parts[0].lower())
        return None if column is None else ".".join([column, *parts[1:]])


@dataclass(frozen=True)
class Pushable:
    """A conjunct that may prune a reference; ``needs_null_rejection``: only if NULLs fail it."""

    node: Node
    needs_null_rejection: bool


@dataclass
class TableReferences:
    """The references of a statement to registered tables, each with the conjuncts it may use."""

    references: list[TableRef]
    cte_names: set[str]


def find_references(
    statement: Node, columns_of: Callable[[Node], tuple[str, dict[str, str]] | None]
) -> TableReferences:
    """Every reference to a registered table in ``statement`` (one parsed statement's ``node``).

    ``columns_of(base_table_node)`` gives the registered name and the visible columns (lower case
    name -> column) of a BASE_TABLE node that reads a registered table, else None.
    """
    cte_names = {name.lower() for name in _cte_names(statement)}
    found: list[TableRef] = []
    for node in walk_dicts(statement):
        if node.get("type") in QUERY_NODES and "from_table" in node:
            found.extend(_SelectScope(node, columns_of, cte_names).analyze())
    return TableReferences(found, cte_names)


class _SelectScope:
    """The FROM tree and the conjuncts of one SELECT node."""

    def __init__(
        self, node: Node, columns_of: Callable[[Node], tuple[str, dict[str, str]] | None], ctes: set[str]
    ) -> None:
        self.node = node
        self.columns_of = columns_of
        self.ctes = ctes
        self.leaves: list[TableRef] = []
        self.merged: set[str] = set()  # USING columns: unqualified, they are no one table's
        self.natural = False
        # (condition, leaves it may prune, whether only conjuncts about those leaves count)
        self.attached: list[tuple[Node | None, list[tuple[TableRef, bool, bool]]]] = []

    def analyze(self) -> list[TableRef]:
        leaves = self._from(self.node.get("from_table") or {})
        self.attached.append((self.node.get("where_clause"), leaves))
        for condition, allowed in self.attached:
            if condition is not None:
                self._attach(condition, allowed)
        return [leaf for leaf in self.leaves if leaf.registered is not None]

    # -- the FROM tree ---------------------------------------------------------------------------

    def _from(self, ref: Node) -> list[tuple[TableRef, bool, bool]]:
        """The leaves under ``ref``: (reference, NULL-filled relative to ref, blocked from above)."""
        if ref.get("type") != "JOIN":
            return [] if ref.get("type") in (None, "EMPTY") else [(self._leaf(ref), False, False)]
        left = self._from(ref.get("left") or {})
        right = self._from(ref.get("right") or {})
        join, kind = ref.get("join_type"), ref.get("ref_type")
        using = [str(c).lower() for c in ref.get("using_columns") or []]
        self.merged.update(using)
        self.natural = self.natural or kind == "NATURAL"
        condition = ref.get("condition")
        plain = kind in ("REGULAR", "CROSS", "NATURAL", "DEPENDENT")
        if plain and join == "INNER":
            self.attached.append((condition, left + right))
            return left + right
        if plain and join == "LEFT":
            self.attached.append((condition, right))
            return left + _null_filled(right)
        if plain and join == "RIGHT":
            self.attached.append((condition, left))
            return _null_filled(left) + right
        if plain and join in ("FULL", "OUTER"):
            return _null_filled(left + right)
        if kind == "REGULAR" and join in ("SEMI", "ANTI"):
            return left + _blocked(right)
        return _blocked(left + right)

    def _leaf(self, ref: Node) -> TableRef:
        alias = str(ref.get("alias") or "")
        registered: str | None = None
        columns: dict[str, str] | None = None
        if ref.get("type") == "BASE_TABLE":
            name = str(ref.get("table_name") or "")
            alias = alias or name
            qualified = ref.get("schema_name") or ref.get("catalog_name")
            shadowed = not qualified and name.lower() in self.ctes  # a CTE of that name is read
            known = None if shadowed else self.columns_of(ref)
            if known is not None:
                registered, table_columns = known
                columns = _visible(table_columns, [str(c) for c in ref.get("column_name_alias") or []])
        leaf = TableRef(ref, alias, columns, registered)
        self.leaves.append(leaf)
        return leaf

    # -- conjuncts -------------------------------------------------------------------------------

    def _attach(self, condition: Node, allowed: list[tuple[TableRef, bool, bool]]) -> None:
        flags = {id(leaf): (null_filled, blocked) for leaf, null_filled, blocked in allowed}
        for conjunct in conjuncts(condition):
            owners = self._owners(conjunct)
            if owners is None:
                continue  # names something this scope cannot place: no one's conjunct
            if len(owners) > 1:
                for leaf in owners:
                    if leaf.registered is not None:
                        leaf.refused.append((conjunct, "relates several tables"))
                continue
            targets = owners or [leaf for leaf, _, _ in allowed]  # a constant: about every table
            for leaf in targets:
                if leaf.registered is None:
                    continue
                if id(leaf) not in flags:
                    leaf.refused.append((conjunct, "an outer join condition on its preserved side"))
                    continue
                null_filled, blocked = flags[id(leaf)]
                if blocked or leaf.node.get("sample") is not None:
                    leaf.refused.append((conjunct, _PAIRED))
                else:
                    leaf.pushable.append(Pushable(conjunct, null_filled))

    def _owners(self, conjunct: Node) -> list[TableRef] | None:
        """The references the conjunct's columns belong to; None if a column is not placeable."""
        owners: list[TableRef] = []
        for column in column_refs(conjunct):
            owner = self._owner([str(p) for p in column.get("column_names") or []])
            if owner is None:
                return None
            if owner not in owners:
                owners.append(owner)
        return owners

    def _owner(self, parts: list[str]) -> TableRef | None:
        if not parts:
            return None
        head = parts[0].lower()
        if len(parts) > 1:
            by_alias = [leaf for leaf in self.leaves if leaf.alias.lower() == head]
            if len(by_alias) == 1:
                return by_alias[0]
            if by_alias:
                return None
            if len(parts) > 2:
                by_name = [
                    leaf
                    for leaf in self.leaves
                    if not leaf.node.get("alias") and leaf.node.get("type") == "BASE_TABLE"
                    if _qualifies(leaf.node, parts)
                ]
                if len(by_name) == 1:
                    return by_name[0]
        if self.natural or head in self.merged:
            return None
        having = [leaf for leaf in self.leaves if leaf.columns is not None and head in leaf.columns]
        return having[0] if len(having) == 1 else None


def conjuncts(condition: Node) -> list[Node]:
    """The AND-ed parts of a condition (nested ANDs flattened)."""
    out: list[Node] = []
    stack = [condition]
    while stack:
        node = stack.pop()
        if node.get("type") == "CONJUNCTION_AND":
            stack.extend(reversed(node.get("children") or []))
        else:
            out.append(node)
    return out


def column_refs(node: Node, into_subqueries: bool = False) -> Iterator[Node]:
    """Column references in an expression, by default not looking into subqueries or lambdas.

    Subqueries and lambdas have their own columns; an expression holding one is not translated.
    """
    stack: list[Any] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            cls = item.get("class")
            if cls == "COLUMN_REF":
                yield item
                continue
            if cls in ("SUBQUERY", "LAMBDA") and not into_subqueries:
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def walk_dicts(root: Any) -> Iterator[Node]:
    """Every JSON object inside DuckDB's serialized statement ``root``, without recursion."""
    stack = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _cte_names(root: Node) -> Iterator[str]:
    for node in walk_dicts(root):
        cte_map = node.get("cte_map")
        if isinstance(cte_map, dict):
            for entry in cte_map.get("map") or []:
                if isinstance(entry, dict) and entry.get("key"):
                    yield str(entry["key"])


def _qualifies(node: Node, parts: list[str]) -> bool:
    """``schema.table.column``: the first two parts name the BASE_TABLE node."""
    schema = str(node.get("schema_name") or "main").lower()
    return parts[0].lower() == schema and parts[1].lower() == str(node.get("table_name", "")).lower()


def _visible(table_columns: dict[str, str], aliases: list[str]) -> dict[str, str]:
    """Visible names after ``t AS x(a, b)``: the first columns renamed, in table order."""
    if not aliases:
        return table_columns
    ordered = list(table_columns.values())
    renamed = {alias.lower(): ordered[i] for i, alias in enumerate(aliases) if i < len(ordered)}
    renamed.update({c.lower(): c for c in ordered[len(aliases) :]})
    return renamed


def _null_filled(leaves: list[tuple[TableRef, bool, bool]]) -> list[tuple[TableRef, bool, bool]]:
    return [(leaf, True, blocked) for leaf, _, blocked in leaves]


def _blocked(leaves: list[tuple[TableRef, bool, bool]]) -> list[tuple[TableRef, bool, bool]]:
    return [(leaf, null_filled, True) for leaf, null_filled, _ in leaves]
