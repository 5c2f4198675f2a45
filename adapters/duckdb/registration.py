"""Registered tables and the user's session: ``register`` makes a table's view, and each plan
reads the connection's settings, views and syntax tree (``read_session``): in one round trip, or
none when the catalog has not changed since and the query was parsed before."""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import duckdb

from adapters.duckdb.dynamic import (
    DYNAMIC_KEYS,
)
from adapters.duckdb.merged import MergedView
from adapters.duckdb.splice import quote_name, sql_string
from adapters.duckdb.view import LiveRead, live_read
from hudi_expr import (
    Expression,
)
from index_store import (
    IndexCorruptError,
    IndexedTable,
    IndexNotBuiltError,
    PruneResult,
    UseRules,
    open_table,
)
from index_store.merged import QueryType, needs_merge, query_type_of


@dataclass(frozen=True)
class Registration:
    """A table registered on a connection under a name: its view, and how its files are read."""

    name: str
    table: IndexedTable
    view_oid: int  # a replaced or dropped view ends the registration
    columns: tuple[tuple[str, str], ...]  # (name, DuckDB type) of a read of every file, in order
    options: str  # read_parquet options after the file list
    union_by_name: bool
    rules: UseRules | None  # when the secondary index is used to read rows (None: always)
    dynamic_keys: int | None = DYNAMIC_KEYS  # join keys above this: min/max only (None: no dynamic)
    partition_columns: frozenset[str] = frozenset()  # hive partition columns DuckDB reads from paths
    merged: MergedView | None = None  # a merge-on-read table: its view reads merged file slices


_registry: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, Registration]] = (
    weakref.WeakKeyDictionary()
)


def register(
    con: duckdb.DuckDBPyConnection,
    name: str,
    table: IndexedTable | str | os.PathLike[str],
    *,
    union_by_name: bool = False,
    rules: UseRules | None = UseRules(),  # noqa: B008 - frozen, never changed
    dynamic_keys: int | None = DYNAMIC_KEYS,
    query_type: QueryType = "snapshot",
) -> None:
    """Make ``name`` a view over every file of ``table`` that ``sql(con, ...)`` reads pruned.

    ``table`` is an ``IndexedTable`` or the path of one (``open_table``); with no index built yet,
    every query reads every file (``IndexUnusedWarning``; the plan says "no index: every file
    read") until ``build`` makes one. ``union_by_name`` reads
    files with different columns as DuckDB's option of that name does. ``rules`` decide when a
    secondary index narrows a read to the rows it selects (RFC-51's rule-based optimizer; None:
    whenever a predicate is on an indexed column). ``dynamic_keys``: the join keys of a filtered
    smaller side prune the table (``adapters.duckdb.dynamic``), by their values up to this many,
    above it by their min and max; None: never.

    A merge-on-read Hudi table's view reads its live file slices merged by hudi-rs, listed anew at
    each query (``adapters.duckdb.merged``); ``query_type="read_optimized"`` reads its base files
    only (Hudi's read-optimized query). Other tables have no log files: both read the same rows.
    """
    query_type_of(query_type)
    if dynamic_keys is not None and (isinstance(dynamic_keys, bool) or dynamic_keys < 0):
        raise ValueError(f"dynamic_keys must be a count of keys or None, got {dynamic_keys!r}")
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise TypeError(f"expected a DuckDB connection, got {type(con).__name__}")
    indexed = table if isinstance(table, IndexedTable) else open_table(table)
    files = [os.path.join(indexed.root, f.path) for f in indexed.reader.list_files()]
    if not files:
        raise ValueError(f"{indexed.root} has no data files: DuckDB cannot read a table without one")
    if not built(indexed):
        warnings.warn(f"{name}: {no_index(indexed)}", IndexUnusedWarning, stacklevel=2)
    if needs_merge(indexed.reader):  # merge-on-read (issue 23): a view over merged file slices
        merged = MergedView(con, name, indexed, query_type)
        _create_view(con, name, merged.view_sql())
        described = con.sql(f"DESCRIBE SELECT * FROM {quote_name(merged.hidden)}").fetchall()
        columns = tuple((str(row[0]), str(row[1])) for row in described)
        _remember(
            con,
            Registration(
                name, indexed, view_oid(con, name), columns, "", False, rules, dynamic_keys, merged=merged
            ),
        )
        return
    partition_columns = indexed.reader.folder_columns()
    options = f"hive_partitioning = {'true' if partition_columns else 'false'}, can_have_nan = true"
    if union_by_name:
        options += ", union_by_name = true"
    described = con.sql(f"DESCRIBE SELECT * FROM read_parquet(?, {options})", params=[files]).fetchall()
    columns = tuple((str(row[0]), str(row[1])) for row in described)
    if partition_columns:
        types = dict(columns)
        hive_types = ", ".join(
            f"{sql_string(c)}: {sql_string(types[c])}" for c in partition_columns if c in types
        )
        options += f", hive_types = {{{hive_types}}}"
    read = live_read(con, name, indexed, options)
    _check_live_read(con, read, files)
    _create_view(con, name, read.view_sql())
    registration = Registration(
        name,
        indexed,
        view_oid(con, name),
        columns,
        options,
        union_by_name,
        rules,
        dynamic_keys,
        frozenset(partition_columns),
    )
    _remember(con, registration)


def _create_view(con: duckdb.DuckDBPyConnection, name: str, query: str) -> None:
    con.sql(f"CREATE OR REPLACE VIEW {quote_name(name)} AS {query}")


def view_oid(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """The oid of main's view ``name``, just created."""
    oid = view_oids(con).get(name.lower())
    if oid is None:  # pragma: no cover - DuckDB just created it
        raise RuntimeError(f"view {name!r} was not created")
    return oid


def _remember(con: duckdb.DuckDBPyConnection, registration: Registration) -> None:
    """Record ``registration``, forgetting what a former one of the name registered."""
    former = _registry.get(con, {}).get(registration.name.lower())
    if former is not None and former.merged is not None and former.merged is not registration.merged:
        former.merged.drop(con, keep=registration.merged.hidden if registration.merged else None)
    _registry.setdefault(con, {})[registration.name.lower()] = registration


NO_INDEX = "no index: every file read"


def no_index(table: IndexedTable) -> str:
    """The note of a table with no index yet."""
    return f"{NO_INDEX} (hudi-index build {table.root} makes one)"


def prune(table: IndexedTable, predicate: Expression) -> PruneResult:
    """``table.prune`` keeping every file when the index is unreadable or not built yet."""
    try:
        return table.prune(predicate, on_corrupt="keep_all")
    except IndexNotBuiltError:
        files = [os.path.join(table.root, f.path) for f in table.reader.list_files()]
        return PruneResult(files, len(files), note=no_index(table), index_error=NO_INDEX)


def built(table: IndexedTable) -> bool:
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


def has_registrations(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a table was ever registered on ``con`` (and not all unregistered by name)."""
    return con in _registry


def unregister(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Forget ``name`` and drop its view."""
    registration = _registry.get(con, {}).pop(name.lower(), None)
    if registration is not None:
        con.sql(f"DROP VIEW IF EXISTS {quote_name(name)}")
        if registration.merged is not None:  # merge-on-read: its hidden streams too
            registration.merged.drop(con)


def registered(con: duckdb.DuckDBPyConnection) -> dict[str, IndexedTable]:
    """The tables registered on ``con``, by name."""
    return {r.name: r.table for r in _registry.get(con, {}).values()}


class IndexUnusedWarning(UserWarning):
    """A query read every file of a table because its index could not be used, or every row of
    some files because their secondary index files could not be read."""


def open_registered(con: duckdb.DuckDBPyConnection, name: str) -> IndexedTable:
    """The table registered on ``con`` as ``name`` (case-insensitive), for ``run_statement``."""
    tables = live_tables(con)
    found = next((t for n, t in tables.items() if n.lower() == name.lower()), None)
    if found is None:
        known = ", ".join(sorted(tables)) or "none"
        raise ValueError(
            f"no table is registered as {name!r} on this connection (registered: {known}); "
            "index statements run on registered tables (adapters.duckdb.register)"
        )
    return found


def live_tables(con: duckdb.DuckDBPyConnection) -> dict[str, IndexedTable]:
    """The tables registered on ``con`` whose view is still the registered one, by name."""
    if not has_registrations(con):
        return {}
    return {r.name: r.table for r in live_registrations(con, view_oids(con)).values()}


def live_registrations(con: duckdb.DuckDBPyConnection, views: dict[str, int]) -> dict[str, Registration]:
    """The registrations whose view is still the one ``register`` made (others are forgotten)."""
    registrations = _registry.get(con, {})
    for key in [k for k, r in registrations.items() if views.get(k) != r.view_oid]:
        del registrations[key]
    return dict(registrations)


# Small queries cost DuckDB less than one that joins their answers (a UNION ALL, lists, filters on
# catalog functions): the settings with the query's syntax tree, the views, the temporary tables.
_SETTINGS = (
    "SELECT current_setting('TimeZone'), current_database(), current_schema(), json_serialize_sql($query)"
)


_TREE = "SELECT json_serialize_sql($query)"


_VIEWS = (
    "SELECT view_name, view_oid, temporary, database_name, schema_name FROM duckdb_views() WHERE NOT internal"
)


_TEMPORARY_TABLES = "SELECT table_name FROM duckdb_tables() WHERE temporary"


@dataclass(frozen=True)
class Session:
    """What a plan needs to know of the user's connection (``read_session``)."""

    timezone: str  # literals are read in it
    database: str
    schema: str  # unqualified names are looked up here first
    views: dict[str, int]  # views of main, by lower-case name: their oids
    temporary: frozenset[str]  # lower-case names of temporary views and tables: they hide main's
    tree: Any  # the syntax tree of the query


@dataclass
class _Known:
    """A connection's session as last read, valid while its catalog version stays ``version``, and
    the syntax trees (JSON text) of the queries parsed since, by query text."""

    version: int
    session: Session
    trees: dict[str, str]


# Syntax trees kept per connection: a dashboard's handful of repeated queries, not every text seen,
# and not the trees of huge texts (a 10,000-term OR), whose parse is the least of their planning.
_TREES_KEPT = 64
_TREE_KEPT_CHARS = 1 << 18


_known: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, _Known] = weakref.WeakKeyDictionary()


def catalog_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """DuckDB's count of the statements run on ``con``'s database that may change what a name binds
    to or how a query reads (every statement but a plain query: DDL, ``SET``, ``ATTACH``, ``LOAD``,
    ``register``, transactions, from any connection to the same database); None where this DuckDB
    does not say (then the session is read at every plan)."""
    version = getattr(con, "_catalog_version", None)
    if version is None:  # pragma: no cover - DuckDB 2.0's Python has it
        return None
    return int(version())


def read_session(con: duckdb.DuckDBPyConnection, query: str = "") -> Session:
    """The session and the syntax tree of ``query``. Settings, views and temporary names are read
    again only when ``catalog_version`` moved since they were last read (they can change no other
    way); a query's tree, a function of its text and the parser's settings alone, is kept too."""
    version = catalog_version(con)
    known = _known.get(con)
    if version is not None and known is not None and known.version == version:
        text = known.trees.get(query)
        if text is None:
            [(text,)] = con.execute(_TREE, {"query": query}).fetchall()
            _keep_tree(known, query, text)
        return dataclasses.replace(known.session, tree=json.loads(text))
    [(timezone, database, schema, text)] = con.execute(_SETTINGS, {"query": query}).fetchall()
    views: dict[str, int] = {}
    temporary = {str(name).lower() for (name,) in con.execute(_TEMPORARY_TABLES).fetchall()}
    for name, oid, is_temporary, view_database, view_schema in con.execute(_VIEWS).fetchall():
        if is_temporary:
            temporary.add(str(name).lower())
        elif view_database == database and view_schema == "main":
            views[str(name).lower()] = int(oid)
    session = Session(
        str(timezone), str(database), str(schema), views, frozenset(temporary), json.loads(text)
    )
    if version is not None:
        _known[con] = known = _Known(version, session, {})
        _keep_tree(known, query, text)
    return session


def _keep_tree(known: _Known, query: str, tree: str) -> None:
    """Keep ``query``'s tree (JSON text), dropping the oldest kept beyond ``_TREES_KEPT``."""
    if len(tree) > _TREE_KEPT_CHARS:
        return
    if len(known.trees) >= _TREES_KEPT:
        known.trees.pop(next(iter(known.trees)))
    known.trees[query] = tree


def view_oids(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The oids of main's views, by lower-case name."""
    return read_session(con).views
