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
  since which row pairs with which depends on the rows that are there;
- a SEMI join's ON conjuncts may prune either side (a row failing them has no partner: it is
  dropped, or never pairs), an ANTI join's only its right side (its left rows are all kept, with
  or without a partner), a FULL JOIN's and an ASOF join's neither.

An unqualified column belongs to the reference whose table has that column: if two did, DuckDB
would reject the query as ambiguous, and a table's own columns hide outer ones and SELECT aliases.
Columns merged by USING or NATURAL joins are left alone, as is anything named through an outer
query (a correlated reference), so a conjunct with such a column prunes nothing.

Every conjunct of a WHERE or ON that names a column of a registered table and cannot prune it is
recorded on that reference with the reason (``TableRef.refused``), also a conjunct of a subquery
that names it from outside (a correlated one). An equality of a column of the reference with a
column of another table in the same FROM, where the reference may be pruned by it, is a
``JoinKey``: the keys of the other side may prune it (``adapters.duckdb.dynamic``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from adapters.duckdb.serialized import Class, Key, Type, column_aliases, column_names, is_base_table

__all__ = [
    "JoinKey",
    "Pushable",
    "TableRef",
    "TableReferences",
    "column_refs",
    "conjuncts",
    "find_references",
    "same_ignoring_locations",
    "walk_dicts",
]

Node = dict[str, Any]
QUERY_NODES = (Type.SELECT_NODE,)
_PAIRED = "rows pair up by position or ASOF, or it is the inner side of SEMI/ANTI"
_CORRELATED = "a condition of a correlated subquery"


@dataclass(eq=False)
class TableRef:
    """One table reference in a FROM clause (``lineitem AS l``), registered or not."""

    node: Node
    alias: str  # the name the query qualifies its columns with
    columns: dict[str, str] | None  # visible name (lower case) -> table column; None: not known
    registered: str | None  # the registered table it reads, or None
    pushable: list[Pushable] = field(default_factory=list)
    refused: list[tuple[Node, str]] = field(default_factory=list)  # conjuncts about it, not usable
    joins: list[JoinKey] = field(default_factory=list)  # equi-joins whose other side may prune it

    @property
    def span(self) -> tuple[int, int]:
        """Byte offset and length of the reference's text (name, alias, column aliases)."""
        return int(self.node[Key.QUERY_LOCATION]), int(self.node[Key.QUERY_LOCATION_LENGTH])

    def column_path(self, parts: list[str]) -> str | None:
        """The column path that name parts mean in this reference, or None."""
        if self.columns is None:
            return None
        if len(parts) > 1 and parts[0].lower() == self.alias.lower():
            parts = parts[1:]
        elif len(parts) > 2 and not self.node.get(Key.ALIAS) and _qualifies(self.node, parts):
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


@dataclass(frozen=True)
class JoinKey:
    """``column = other_column`` (a conjunct), where rows of the reference whose ``column`` is none
    of the values ``other_column`` takes in ``other``'s rows can be left out: each output row needs
    the equality TRUE, which NULLs never make it (so NULL-filled rows fail it as well)."""

    conjunct: Node
    column: Node  # COLUMN_REF of this reference
    other: TableRef  # the other table reference, of the same FROM
    other_column: Node  # COLUMN_REF of ``other``


@dataclass
class TableReferences:
    """The references of a statement to registered tables, each with the conjuncts it may use."""

    references: list[TableRef]
    cte_names: set[str]


def find_references(
    statement: Node, columns_of: Callable[[Node], tuple[str | None, dict[str, str]] | None]
) -> TableReferences:
    """Every reference to a registered table in ``statement`` (one parsed statement's ``node``).

    ``columns_of(base_table_node)`` gives the registered name (None for a table of DuckDB's own)
    and the columns (lower case name -> column) of a BASE_TABLE node, or None when not known.
    """
    ctes = {name.lower() for name in cte_names(statement)}
    found: list[TableRef] = []
    # (item, the innermost SELECT scope around it): scopes are analyzed outside in, so a subquery's
    # correlated conjunct can be recorded on the outer reference it names.
    stack: list[tuple[Any, _SelectScope | None]] = [(statement, None)]
    while stack:
        item, outer = stack.pop()
        if isinstance(item, dict):
            scope = outer
            if item.get(Key.TYPE) in QUERY_NODES and Key.FROM_TABLE in item:
                scope = _SelectScope(item, columns_of, ctes, outer)
                found.extend(scope.analyze())
            stack.extend((value, scope) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, outer) for value in item)
    return TableReferences(found, ctes)


class _SelectScope:
    """The FROM tree and the conjuncts of one SELECT node."""

    def __init__(
        self,
        node: Node,
        columns_of: Callable[[Node], tuple[str | None, dict[str, str]] | None],
        ctes: set[str],
        outer: _SelectScope | None = None,
    ) -> None:
        self.node = node
        self.columns_of = columns_of
        self.ctes = ctes
        self.outer = outer
        self.leaves: list[TableRef] = []
        self.merged: set[str] = set()  # USING columns: unqualified, they are no one table's
        self.natural = False
        # (condition, leaves it may prune, why it may not prune the other leaves of this scope)
        self.attached: list[tuple[Node | None, list[tuple[TableRef, bool, bool]], str]] = []

    def analyze(self) -> list[TableRef]:
        leaves = self._from(self.node.get(Key.FROM_TABLE) or {})
        self.attached.append((self.node.get(Key.WHERE_CLAUSE), leaves, ""))
        for condition, allowed, why in self.attached:
            if condition is not None:
                self._attach(condition, allowed, why)
        return [leaf for leaf in self.leaves if leaf.registered is not None]

    # -- the FROM tree ---------------------------------------------------------------------------

    def _from(self, ref: Node) -> list[tuple[TableRef, bool, bool]]:
        """The leaves under ``ref``: (reference, NULL-filled relative to ref, blocked from above)."""
        if ref.get(Key.TYPE) != Type.JOIN:
            return [] if ref.get(Key.TYPE) in (None, Type.EMPTY) else [(self._leaf(ref), False, False)]
        left = self._from(ref.get(Key.LEFT) or {})
        right = self._from(ref.get(Key.RIGHT) or {})
        join, kind = ref.get(Key.JOIN_TYPE), ref.get(Key.REF_TYPE)
        using = [str(c).lower() for c in ref.get(Key.USING_COLUMNS) or []]
        self.merged.update(using)
        self.natural = self.natural or kind == "NATURAL"
        condition = ref.get(Key.CONDITION)
        plain = kind in ("REGULAR", "CROSS", "NATURAL", "DEPENDENT")
        if plain and join == "INNER":
            self.attached.append((condition, left + right, ""))
            return left + right
        if plain and join == "LEFT":
            self.attached.append((condition, right, "a LEFT JOIN condition on its preserved side"))
            return left + _null_filled(right)
        if plain and join == "RIGHT":
            self.attached.append((condition, left, "a RIGHT JOIN condition on its preserved side"))
            return _null_filled(left) + right
        if plain and join in ("FULL", "OUTER"):
            self.attached.append((condition, [], "a FULL JOIN condition: both sides keep every row"))
            return _null_filled(left + right)
        if kind == "REGULAR" and join == "SEMI":
            # A row failing the condition has no partner: a left row is dropped, a right one unused.
            self.attached.append((condition, left + right, ""))
            return left + _blocked(right)
        if kind == "REGULAR" and join == "ANTI":
            # Left rows are kept exactly when no right row passes: only right rows may go.
            self.attached.append((condition, right, "an ANTI JOIN condition on its preserved side"))
            return left + _blocked(right)
        what = f"an {kind} JOIN condition" if kind == "ASOF" else f"a {kind} {join} JOIN condition"
        self.attached.append((condition, [], f"{what}: which rows pair up depends on the rows there"))
        return _blocked(left + right)

    def _leaf(self, ref: Node) -> TableRef:
        alias = str(ref.get(Key.ALIAS) or "")
        registered: str | None = None
        columns: dict[str, str] | None = None
        if ref.get(Key.TYPE) == "BASE_TABLE":
            name = str(ref.get(Key.TABLE_NAME) or "")
            alias = alias or name
            qualified = ref.get(Key.SCHEMA_NAME) or ref.get(Key.CATALOG_NAME)
            shadowed = not qualified and name.lower() in self.ctes  # a CTE of that name is read
            known = None if shadowed else self.columns_of(ref)
            if known is not None:
                registered, table_columns = known
                columns = _visible(table_columns, column_aliases(ref))
        leaf = TableRef(ref, alias, columns, registered)
        self.leaves.append(leaf)
        return leaf

    # -- conjuncts -------------------------------------------------------------------------------

    def _attach(self, condition: Node, allowed: list[tuple[TableRef, bool, bool]], why: str) -> None:
        """Record each conjunct of ``condition`` on the references it names: pushable where it may
        prune them (``allowed``), else with the reason (``why`` for the others of this scope)."""
        flags = {id(leaf): (null_filled, blocked) for leaf, null_filled, blocked in allowed}
        for conjunct in conjuncts(condition):
            owners, unplaced, outer = self._owners(conjunct)
            for leaf in outer:
                _refuse(leaf, conjunct, _CORRELATED)
            if unplaced:
                for leaf in owners:
                    _refuse(leaf, conjunct, unplaced)
                continue
            if len(owners) > 1:
                self._relating(conjunct, owners, flags, why)
                continue
            targets = owners or [leaf for leaf, _, _ in allowed]  # a constant: about every table
            for leaf in targets:
                if id(leaf) not in flags:
                    _refuse(leaf, conjunct, why)
                    continue
                null_filled, blocked = flags[id(leaf)]
                if blocked or leaf.node.get(Key.SAMPLE) is not None:
                    _refuse(leaf, conjunct, _PAIRED)
                else:
                    # Also on DuckDB's own tables: their filters select the keys of a join.
                    leaf.pushable.append(Pushable(conjunct, null_filled))

    def _relating(
        self, conjunct: Node, owners: list[TableRef], flags: dict[int, tuple[bool, bool]], why: str
    ) -> None:
        """A conjunct naming columns of several references: a ``JoinKey`` where it is an equality of
        two columns and may prune the reference, else refused."""
        relates = "compares columns of two tables" if len(owners) == 2 else f"relates {len(owners)} tables"
        pair = _equality(conjunct) if len(owners) == 2 else None
        for leaf in owners:
            if leaf.registered is None:
                continue
            if id(leaf) not in flags:
                _refuse(leaf, conjunct, f"{relates}; {why}")
            elif flags[id(leaf)][1] or leaf.node.get(Key.SAMPLE) is not None:
                _refuse(leaf, conjunct, f"{relates}; {_PAIRED}")
            elif pair is None:
                _refuse(leaf, conjunct, relates)
            else:
                mine, theirs = pair if self._owner(_parts(pair[0])) is leaf else (pair[1], pair[0])
                other = owners[1] if owners[0] is leaf else owners[0]
                leaf.joins.append(JoinKey(conjunct, mine, other, theirs))

    def _owners(self, conjunct: Node) -> tuple[list[TableRef], str, list[TableRef]]:
        """The references of this scope the conjunct's columns belong to; why a column is no one's
        here ("" if each is someone's); registered references of outer scopes it names."""
        owners: list[TableRef] = []
        unplaced = ""
        outer: list[TableRef] = []
        for column in column_refs(conjunct):
            parts = _parts(column)
            owner = self._owner(parts)
            if owner is not None:
                if owner not in owners:
                    owners.append(owner)
                continue
            found = self._outer_owner(parts)
            if found is not None and found.registered is not None and found not in outer:
                outer.append(found)
            unplaced = unplaced or self._unplaced(parts, found is not None)
            if found is None and len(parts) == 1:
                # A merged USING column: each table that has it is told why it was not used.
                head = parts[0].lower()
                having = [leaf for leaf in self.leaves if leaf.columns is not None and head in leaf.columns]
                owners += [leaf for leaf in having if leaf not in owners]
        return owners, unplaced, outer

    def _outer_owner(self, parts: list[str]) -> TableRef | None:
        """The reference of an enclosing query a name not placeable here means (a correlated
        column), when no table here could hold it unseen."""
        if len(parts) == 1 and any(leaf.columns is None for leaf in self.leaves):
            return None  # perhaps a column of a subquery or table function here
        scope = self.outer
        while scope is not None:
            owner = scope._owner(parts)
            if owner is not None:
                return owner
            scope = scope.outer
        return None

    def _unplaced(self, parts: list[str], outer: bool) -> str:
        name = ".".join(parts)
        head = parts[0].lower()
        if outer:
            return f"correlated subquery: {name} is a column of an outer query"
        if len(parts) == 1 and head in self.merged:
            return f"{name} is a column merged by USING: it is no one table's"
        if len(parts) == 1 and self.natural:
            return f"{name} may be a column merged by a NATURAL JOIN: it is no one table's"
        if len(parts) > 1 and sum(leaf.alias.lower() == head for leaf in self.leaves) > 1:
            return f"{name}: the alias {parts[0]} names several tables"
        return f"{name} is not known to be a column of one table here (a subquery's, or an outer query's)"

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
                    if not leaf.node.get(Key.ALIAS) and is_base_table(leaf.node)
                    if _qualifies(leaf.node, parts)
                ]
                if len(by_name) == 1:
                    return by_name[0]
        if self.natural or head in self.merged:
            return None
        having = [leaf for leaf in self.leaves if leaf.columns is not None and head in leaf.columns]
        return having[0] if len(having) == 1 else None


def _refuse(leaf: TableRef, conjunct: Node, why: str) -> None:
    if leaf.registered is not None and all(c is not conjunct for c, _ in leaf.refused):
        leaf.refused.append((conjunct, why))


def _parts(column: Node) -> list[str]:
    return column_names(column)


def _equality(conjunct: Node) -> tuple[Node, Node] | None:
    """The two column references of ``a = b``, or None when the conjunct is not that."""
    if conjunct.get(Key.CLASS) != Class.COMPARISON or conjunct.get(Key.TYPE) != "COMPARE_EQUAL":
        return None
    left, right = conjunct.get(Key.LEFT) or {}, conjunct.get(Key.RIGHT) or {}
    if left.get(Key.CLASS) != Class.COLUMN_REF or right.get(Key.CLASS) != Class.COLUMN_REF:
        return None
    return left, right


def conjuncts(condition: Node) -> list[Node]:
    """The AND-ed parts of a condition (nested ANDs flattened)."""
    out: list[Node] = []
    stack = [condition]
    while stack:
        node = stack.pop()
        if node.get(Key.TYPE) == "CONJUNCTION_AND":
            stack.extend(reversed(node.get(Key.CHILDREN) or []))
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
            cls = item.get(Key.CLASS)
            if cls == Class.COLUMN_REF:
                yield item
                continue
            if cls in (Class.SUBQUERY, Class.LAMBDA) and not into_subqueries:
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


_LOCATION_KEYS = frozenset((Key.QUERY_LOCATION, Key.QUERY_LOCATION_LENGTH))


def same_ignoring_locations(a: Any, b: Any) -> bool:
    """Whether two JSON syntax trees are equal but for source positions (they move when text is
    replaced); walked with a stack, as trees of 10,000-term filters are deep."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, dict):
            if not isinstance(y, dict) or x.keys() - _LOCATION_KEYS != y.keys() - _LOCATION_KEYS:
                return False
            stack.extend((x[k], y[k]) for k in x.keys() - _LOCATION_KEYS)
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif type(x) is not type(y) or x != y:
            return False
    return True


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


def cte_names(root: Node) -> Iterator[str]:
    """The names of the CTEs defined anywhere in a statement."""
    for node in walk_dicts(root):
        cte_map = node.get(Key.CTE_MAP)
        if isinstance(cte_map, dict):
            for entry in cte_map.get(Key.MAP) or []:
                if isinstance(entry, dict) and entry.get(Key.KEY):
                    yield str(entry[Key.KEY])


def _qualifies(node: Node, parts: list[str]) -> bool:
    """``schema.table.column``: the first two parts name the BASE_TABLE node."""
    schema = str(node.get(Key.SCHEMA_NAME) or "main").lower()
    return parts[0].lower() == schema and parts[1].lower() == str(node.get(Key.TABLE_NAME, "")).lower()


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
