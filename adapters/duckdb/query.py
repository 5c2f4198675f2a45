"""SQL over indexed tables in DuckDB, each table reference reading only the files that can matter.

``register(con, "lineitem", table)`` makes ``lineitem`` a view over all the table's files, so plain
DuckDB queries keep working. ``sql(con, query)`` plans first: DuckDB parses the query
(``json_serialize_sql``), every reference to a registered table gets the conjuncts that may prune
it (``scope``), the index prunes, and the reference's text is replaced by a read of the kept files,
``(SELECT ... FROM read_parquet([kept], ...)) AS alias``. The rest of the query text is untouched,
and the splice is checked by parsing the result again, so the query DuckDB runs is the user's.

Two things keep the answer identical to DuckDB reading every file:
- the kept read has the registered schema: columns in registered order, cast to the registered
  types (DuckDB otherwise takes both from whichever file comes first), and hive partition columns
  typed as over all files (``hive_types``), not as the kept paths alone would suggest;
- ``can_have_nan = true`` on every read: DuckDB 2.0's own row-group pruning otherwise skips NaN
  rows (duckdb/duckdb#25521).

Planning lists the table each time (files added since the last index sync are read, deleted ones
are not), so a reference that prunes nothing still reads the table as it is now. References the
planner does not rewrite (inside PIVOT, with TABLESAMPLE or AT) read the registered view.
"""

from __future__ import annotations

import json
import os
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from adapters.duckdb.parse import Walker, is_utc
from adapters.duckdb.scope import TableRef, column_refs, find_references
from adapters.duckdb.view import LiveRead, live_read
from hudi_expr import (
    AlwaysTrue,
    And,
    BindError,
    Expression,
    bind,
    to_pyarrow,
)
from hudi_expr.expressions import LiteralPredicate, Reference, SetPredicate
from hudi_expr.visitors import transform_leaves
from index_store import IndexCorruptError, IndexedTable, IndexNotBuiltError, PruneResult, open_table

__all__ = [
    "IndexUnusedWarning",
    "QueryPlan",
    "TablePlan",
    "plan",
    "register",
    "registered",
    "sql",
    "unregister",
]


@dataclass(frozen=True)
class _Registration:
    name: str
    table: IndexedTable
    view_oid: int  # a replaced or dropped view ends the registration
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type) of a read of every file, in order
    options: str  # read_parquet options after the file list
    union_by_name: bool


_registry: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, _Registration]] = (
    weakref.WeakKeyDictionary()
)


def register(
    con: duckdb.DuckDBPyConnection,
    name: str,
    table: IndexedTable | str | os.PathLike[str],
    *,
    union_by_name: bool = False,
) -> None:
    """Make ``name`` a view over every file of ``table`` that ``sql(con, ...)`` reads pruned.

    ``table`` is an ``IndexedTable`` or the path of one (``open_table``). ``union_by_name`` reads
    files with different columns as DuckDB's option of that name does.
    """
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise TypeError(f"expected a DuckDB connection, got {type(con).__name__}")
    indexed = table if isinstance(table, IndexedTable) else open_table(table)
    files = [os.path.join(indexed.root, f.path) for f in indexed.reader.list_files()]
    if not files:
        raise ValueError(f"{indexed.root} has no data files: DuckDB cannot read a table without one")
    if not _built(indexed):
        raise IndexNotBuiltError(indexed.root)
    partition_columns = indexed.reader.partition_schema().names if indexed.reader.kind == "parquet" else []
    options = f"hive_partitioning = {'true' if partition_columns else 'false'}, can_have_nan = true"
    if union_by_name:
        options += ", union_by_name = true"
    described = con.sql(f"DESCRIBE SELECT * FROM read_parquet(?, {options})", params=[files]).fetchall()
    columns = tuple((str(row[0]), str(row[1])) for row in described)
    if partition_columns:
        types = dict(columns)
        hive_types = ", ".join(f"{_string(c)}: {_string(types[c])}" for c in partition_columns if c in types)
        options += f", hive_types = {{{hive_types}}}"
    read = live_read(con, name, indexed, options)
    _check_live_read(con, read, files)
    con.sql(f"CREATE OR REPLACE VIEW {_quote(name)} AS {read.view_sql()}")
    view_oid = _view_oids(con).get(name.lower())
    if view_oid is None:  # pragma: no cover - DuckDB just created it
        raise RuntimeError(f"view {name!r} was not created")
    registration = _Registration(name, indexed, view_oid, columns, options, union_by_name)
    _registry.setdefault(con, {})[name.lower()] = registration


def _built(table: IndexedTable) -> bool:
    """Whether ``table`` has an index; an unreadable one counts (queries then read every file and
    say why, rather than fail)."""
    try:
        return bool(table.snapshot().version)
    except IndexCorruptError:
        return True


def _check_live_read(con: duckdb.DuckDBPyConnection, read: LiveRead, files: list[str]) -> None:
    """The view must read every file the index lists, or its answers would differ from ``sql``'s."""
    missing = set(files) - read.files(con)
    if missing:
        raise ValueError(
            f"DuckDB's glob of the table does not reach {sorted(missing)[:3]}, so a view could not read "
            "them: are the hive partition folders (k=v) the top folders of the table?"
        )


def unregister(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Forget ``name`` and drop its view."""
    if _registry.get(con, {}).pop(name.lower(), None) is not None:
        con.sql(f"DROP VIEW IF EXISTS {_quote(name)}")


def registered(con: duckdb.DuckDBPyConnection) -> dict[str, IndexedTable]:
    """The tables registered on ``con``, by name."""
    return {r.name: r.table for r in _registry.get(con, {}).values()}


# ------------------------------------------------------------------------------------------ plans


@dataclass(frozen=True)
class TablePlan:
    """How one reference to a registered table is read: ``kept`` of ``total`` files, and why."""

    name: str
    alias: str
    kept: int
    total: int
    used: tuple[str, ...]  # SQL text of the conjuncts that pruned
    not_used: tuple[str, ...]  # conjuncts (or parts) about this table that could not, with why
    result: PruneResult | None = field(default=None, repr=False, compare=False)
    note: str = ""  # e.g. why the index could not be used

    def __str__(self) -> str:
        shown = self.name if self.alias.lower() == self.name.lower() else f"{self.name} AS {self.alias}"
        lines = [f"{shown}: kept {self.kept} of {self.total} files"]
        lines += [f"  used:     {text}" for text in self.used]
        lines += [f"  not used: {text}" for text in self.not_used]
        if self.result is not None:
            lines += [f"  note: {line}" for line in self.result.notes() if line != self.result.note]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)


class IndexUnusedWarning(UserWarning):
    """A query read every file of a table because its index could not be used."""


@dataclass(frozen=True)
class QueryPlan:
    """A query, the text DuckDB will run for it, and how each registered table is read."""

    query: str
    sql: str
    tables: tuple[TablePlan, ...]
    note: str
    params: Any = field(repr=False)
    con: duckdb.DuckDBPyConnection = field(repr=False, compare=False)

    def relation(self) -> duckdb.DuckDBPyRelation:
        """Run the planned query (``con.sql`` of the rewritten text)."""
        return self.con.sql(self.sql, params=self.params)

    def __str__(self) -> str:
        lines = [str(t) for t in self.tables] or ["no registered table is read"]
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)


def sql(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> duckdb.DuckDBPyRelation:
    """``con.sql(query, params=params)``, with every registered table read pruned (see ``plan``)."""
    return plan(con, query, params).relation()


def plan(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> QueryPlan:
    """Plan ``query`` on ``con``: prune each registered table it reads, say how (``str(plan)``)."""
    if not isinstance(query, str):
        raise TypeError(f"expected SQL text, got {type(query).__name__}")
    if con not in _registry:
        return QueryPlan(query, query, (), "no table is registered on this connection", params, con)
    session = _session(con, query)
    registrations = _live_registrations(con, session.views)
    if not registrations:
        return QueryPlan(query, query, (), "no table is registered on this connection", params, con)
    statements = session.tree.get("statements") or []
    if session.tree.get("error") or len(statements) != 1:
        error = session.tree.get("error_message", "")
        why = error if session.tree.get("error") else "not a single SELECT statement"
        return QueryPlan(query, query, (), f"run as written, without pruning ({why})", params, con)
    statement = statements[0]["node"]
    # A name reads main's view unless another schema is searched first (unqualified names) or a
    # temporary view or table of that name hides it (DuckDB looks in temp.main first, also for
    # ``main.name``).
    unqualified = session.schema.lower() == "main"

    def columns_of(node: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
        name = str(node.get("table_name", "")).lower()
        registration = registrations.get(name)
        catalog = str(node.get("catalog_name") or "").lower()
        schema = str(node.get("schema_name") or "").lower()
        if (
            registration is None
            or schema not in ("main", "")
            or catalog not in ("", session.database.lower())
        ):
            return None
        if not catalog and (name in session.temporary or (not schema and not unqualified)):
            return None
        return registration.name, {c.lower(): c for c, _ in registration.columns}

    qualified = _schema_qualified(statement, session.database)
    refs = [
        ref
        for ref in find_references(statement, columns_of).references
        if ref.node.get("sample") is None
        and ref.node.get("at_clause") is None
        # ``main.t.col`` cannot name the spliced ``(...) AS t``: such references stay as written.
        and (ref.node.get("alias") or str(ref.node.get("table_name")).lower() not in qualified)
    ]
    if not refs:
        return QueryPlan(query, query, (), "", params, con)
    planner = _Planner(query, session.timezone)
    placeholders = [f"__hudi_ref_{k}" for k in range(len(refs))]
    # The literals of every conjunct, and the check of the splice (the query with placeholders
    # where the references were, parsed back), in one round trip to DuckDB.
    checked = planner.walker.evaluate_constants(
        [p.node for ref in refs for p in ref.pushable], parse=_spliced(query, refs, placeholders)
    )
    if not _same_but_renamed(checked, statement, refs, placeholders):
        note = "run as written, without pruning: the rewritten text did not parse back to the same query"
        return QueryPlan(query, query, (), note, params, con)
    read = [registrations[str(ref.registered).lower()] for ref in refs]
    tables = tuple(planner.prune(ref, r) for ref, r in zip(refs, read, strict=True))
    sources = [_source(r, table.result) for r, table in zip(read, tables, strict=True)]
    rewritten = _spliced(query, refs, sources)
    if _names_from_text(statement, refs):
        # DuckDB names an unaliased expression by its text; with a reference spliced into it the
        # text changed, so the original names are put back, by position.
        names = ", ".join(_quote(c) for c in con.sql(query, params=params).columns)
        rewritten = f"SELECT * FROM ({rewritten}) AS __hudi_named({names})"
    return QueryPlan(query, rewritten, tables, "", params, con)


class _Planner:
    """Translates and checks the conjuncts of one query; prunes each reference with them."""

    def __init__(self, query: str, timezone: str) -> None:
        self.walker = Walker(query.encode(), lambda parts: None, 0, timezone)
        self.timezone = timezone
        self.utc = is_utc(timezone)

    def prune(self, ref: TableRef, registration: _Registration) -> TablePlan:
        self.walker.resolve = ref.column_path
        try:
            schema: pa.Schema | None = registration.table.snapshot().schema
        except IndexCorruptError:
            schema = None  # prune below keeps every file and says why
        used: list[str] = []
        bound: list[Expression] = []
        not_used = [f"{self.walker.source_text(node)}  ({why})" for node, why in ref.refused]
        for pushable in ref.pushable:
            self.walker.not_used = []
            text = self.walker.source_text(pushable.node)
            if schema is None:
                not_used.append(f"{text}  (the index is unreadable)")
                continue
            expr = self.walker.translate(pushable.node, negated=False)
            why = "not translatable" if self.walker.not_used else "always TRUE"
            if not self.utc and not isinstance(expr, AlwaysTrue):
                expr = _without_zone_mixing(expr, schema)
                why = f"mixes time zones under session TimeZone {self.timezone}"
            if isinstance(expr, AlwaysTrue):
                not_used.append(f"{text}  ({why})")
                continue
            not_used += [f"{part}  (not translatable)" for part in self.walker.not_used]
            if pushable.needs_null_rejection and _true_on_nulls(expr, schema):
                not_used.append(f"{text}  (TRUE on the NULL rows of an outer join)")
                continue
            try:
                expr = bind(expr, schema)
            except BindError as exc:
                not_used.append(f"{text}  ({exc})")
                continue
            used.append(text)
            bound.append(expr)
        result = registration.table.prune(And(*bound) if bound else AlwaysTrue(), on_corrupt="keep_all")
        note = ""
        if not result.index_used:
            # Nothing was pruned: no conjunct counts as used, and the user hears why.
            not_used = [f"{text}  (the index is unreadable)" for text in used] + not_used
            used = []
            note = f"the index is unreadable, every file is read: {result.index_error}"
            warnings.warn(f"{registration.name}: {note}", IndexUnusedWarning, stacklevel=4)
        return TablePlan(
            registration.name,
            ref.alias,
            result.kept,
            result.total,
            tuple(used),
            tuple(not_used),
            result,
            note,
        )


def _without_zone_mixing(expr: Expression, schema: pa.Schema) -> Expression:
    """Drop timestamp comparisons whose meaning depends on a session time zone other than UTC.

    Binding reads a zone-less literal against a TIMESTAMPTZ column (and the reverse) in UTC, as the
    session would with TimeZone UTC; under another zone DuckDB shifts one side, so those tests
    are left out (TRUE) rather than guessed.
    """
    import datetime as dt

    def keep(leaf: Expression) -> Expression:
        if not isinstance(leaf, LiteralPredicate | SetPredicate) or not isinstance(leaf.term, Reference):
            return leaf
        name = leaf.term.name
        if name not in schema.names or not pa.types.is_timestamp(column_type := schema.field(name).type):
            return leaf
        literals = list(leaf.values) if isinstance(leaf, SetPredicate) else [leaf.literal]
        for value in literals:
            aware = isinstance(value, dt.datetime) and value.tzinfo is not None
            if value is not None and (column_type.tz is not None) != aware:
                return AlwaysTrue()
            if value is not None and not isinstance(value, dt.datetime):
                return AlwaysTrue()
        return leaf

    return transform_leaves(expr, keep)


def _true_on_nulls(expr: Expression, schema: pa.Schema) -> bool:
    """Whether ``expr`` (unbound) may be TRUE on a row of NULLs (what an outer join adds).

    It is bound to the schema with every column nullable: against the table, ``a IS NULL`` on a
    NOT NULL column is FALSE, but the NULL-filled rows of an outer join have it NULL all the same.
    Unknown: True.
    """
    try:
        nullable = pa.schema([_nullable(f) for f in schema])
        row = pa.Table.from_pylist([{}], schema=nullable)
        return row.filter(to_pyarrow(bind(expr, nullable), nullable)).num_rows > 0
    except (pa.ArrowException, BindError, TypeError, ValueError):
        return True


def _nullable(f: pa.Field) -> pa.Field:
    if pa.types.is_struct(f.type):
        f = f.with_type(pa.struct([_nullable(child) for child in f.type]))
    return f.with_nullable(True)


# ------------------------------------------------------------------------------------ the rewrite


def _source(registration: _Registration, result: PruneResult | None) -> str:
    """The text of a read of ``result``'s files with the registered schema, as a subquery."""
    nulls = "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {_quote(c)}" for c, t in registration.columns)
    if result is None or not result.files:
        return f"({nulls} WHERE false)"
    read = _read(result.files, registration.options)
    if registration.union_by_name:
        # The kept files may lack columns others have: a typed empty row set supplies them all.
        read = f"({nulls} WHERE false UNION ALL BY NAME SELECT * FROM {read})"
    projection = ", ".join(f"CAST({_quote(c)} AS {t}) AS {_quote(c)}" for c, t in registration.columns)
    return f"(SELECT {projection} FROM {read})"


def _same_but_renamed(
    checked: Any, statement: Any, refs: Sequence[TableRef], placeholders: Sequence[str]
) -> bool:
    """Whether ``checked`` (the parsed text with ``placeholders`` spliced in for ``refs``) is
    ``statement`` with exactly those references renamed, each keeping its alias."""
    statements = (checked or {}).get("statements") or []
    if (checked or {}).get("error") or len(statements) != 1:
        return False
    tree = statements[0]["node"]
    by_name = {p: ref.node for p, ref in zip(placeholders, refs, strict=True)}
    seen: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "BASE_TABLE" and item.get("table_name") in by_name:
                name = item["table_name"]
                if name in seen or str(item.get("alias")) != _alias_of(by_name[name]):
                    return False
                seen.add(name)
                item.clear()
                item.update(by_name[name])  # compared below, never changed: no copy needed
                continue
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return seen == set(placeholders) and _same_ignoring_locations(tree, statement)


def _schema_qualified(statement: Any, database: str) -> set[str]:
    """Table names that a column reference of the statement qualifies with a schema."""
    found: set[str] = set()
    for column in column_refs(statement, into_subqueries=True):
        parts = [str(p).lower() for p in column.get("column_names") or []]
        if len(parts) >= 3 and parts[0] == "main":
            found.add(parts[1])
        if len(parts) >= 4 and parts[0] == database.lower() and parts[1] == "main":
            found.add(parts[2])
    return found


def _names_from_text(statement: Any, refs: Sequence[TableRef]) -> bool:
    """Whether an output column is named by the text of an expression holding a rewritten reference."""
    node = statement
    while node.get("type") == "SET_OPERATION_NODE":
        node = node.get("left") or {}
    spliced = {id(ref.node) for ref in refs}
    for item in node.get("select_list") or []:
        if item.get("alias") or item.get("class") in ("STAR", "COLUMN_REF"):
            continue
        stack: list[Any] = [item]
        while stack:
            part = stack.pop()
            if isinstance(part, dict):
                if id(part) in spliced:
                    return True
                stack.extend(part.values())
            elif isinstance(part, list):
                stack.extend(part)
    return False


def _spliced(query: str, refs: Sequence[TableRef], sources: Sequence[str]) -> str:
    text = query.encode()
    pieces: list[bytes] = []
    end = len(text)
    for ref, source in sorted(zip(refs, sources, strict=True), key=lambda p: -p[0].span[0]):
        start, length = ref.span
        alias = _quote(_alias_of(ref.node))
        renamed = ref.node.get("column_name_alias") or []
        if renamed:
            alias += "(" + ", ".join(_quote(str(c)) for c in renamed) + ")"
        pieces.append(text[start + length : end])
        pieces.append(f"{source} AS {alias}".encode())
        end = start
    pieces.append(text[:end])
    return b"".join(reversed(pieces)).decode()


def _alias_of(node: dict[str, Any]) -> str:
    return str(node.get("alias") or node.get("table_name"))


_LOCATION_KEYS = frozenset(("query_location", "query_location_length"))


def _same_ignoring_locations(a: Any, b: Any) -> bool:
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


# ---------------------------------------------------------------------------------------- helpers


def _live_registrations(con: duckdb.DuckDBPyConnection, views: dict[str, int]) -> dict[str, _Registration]:
    """The registrations whose view is still the one ``register`` made (others are forgotten)."""
    registrations = _registry.get(con, {})
    for key in [k for k, r in registrations.items() if views.get(k) != r.view_oid]:
        del registrations[key]
    return dict(registrations)


_MAIN = "NOT temporary AND database_name = current_database() AND schema_name = 'main'"
_SESSION = (
    "SELECT current_setting('TimeZone'), current_database(), current_schema(), "
    f"list(view_name) FILTER ({_MAIN}), list(view_oid) FILTER ({_MAIN}), "
    "list(view_name) FILTER (temporary), "
    "(SELECT list(table_name) FROM duckdb_tables() WHERE temporary), "
    "json_serialize_sql({query}) FROM duckdb_views() WHERE NOT internal"
)


@dataclass(frozen=True)
class _Session:
    """What a plan needs to know of the user's connection, read in one round trip."""

    timezone: str  # literals are read in it
    database: str
    schema: str  # unqualified names are looked up here first
    views: dict[str, int]  # views of main, by lower-case name: their oids
    temporary: frozenset[str]  # lower-case names of temporary views and tables: they hide main's
    tree: Any  # the syntax tree of the query


def _session(con: duckdb.DuckDBPyConnection, query: str = "") -> _Session:
    [row] = con.execute(_SESSION.replace("{query}", _string(query))).fetchall()
    timezone, database, schema, names, oids, temp_views, temp_tables, tree = row
    return _Session(
        str(timezone),
        str(database),
        str(schema),
        {str(n).lower(): int(oid) for n, oid in zip(names or [], oids or [], strict=True)},
        frozenset(str(n).lower() for n in [*(temp_views or []), *(temp_tables or [])]),
        json.loads(tree),
    )


def _view_oids(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return _session(con).views


def _read(files: Sequence[str], options: str) -> str:
    return f"read_parquet([{', '.join(_string(f) for f in files)}], {options})"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
