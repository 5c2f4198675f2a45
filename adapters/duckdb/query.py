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
are not). References the planner does not rewrite (inside PIVOT, with TABLESAMPLE or AT) read the
registered view, and so does a reference the index cannot narrow: every file kept and no row
selection, or only hive partitions pruned (DuckDB prunes those itself from the folder names). The
view then costs what DuckDB alone costs, where a spliced list of files would add parsing and
planning it (``str(plan)`` says "run by DuckDB directly" and why).

Each reference's plan lists every WHERE/ON conjunct that names one of its columns: used, or not
used with the reason (``scope`` places them; ``_Planner`` says why a part did not translate).

Dynamic file pruning (``adapters.duckdb.dynamic``): the filtered, smaller side of an equi-join
or an uncorrelated ``IN (SELECT ...)`` is evaluated first, on the user's connection, and its keys
prune the registered side (``l_orderkey IN <keys>``, or min/max above ``dynamic_keys``).

Secondary indexes (RFC-51): when a translated predicate has a leaf on an indexed column and
``IndexedTable.select(expr, rules)`` says the index pays, the reference reads only the rows it
selects, by ``file_row_number`` filters DuckDB pushes into its scan (``adapters.duckdb.rows``);
counts and existence tests it knows exactly are answered from it (``adapters.duckdb.answers``).
Reading through DuckDB (a) was chosen over handing DuckDB the Arrow rows of ``t.read`` (b) by
measurement: 20 files of 300k rows in 16,384-row groups ("big") and 2,000 files of 3k rows
("many"), 8 columns, value indexes on a unique unclustered ``id`` and on ``qty`` (1..49); best of
7 runs in ms, on a shared 2-core machine (``select`` is the index lookup both pay):

    query                   DuckDB  files only  select  (a) *  (b) *  (a) 2 cols  (b) 2 cols
    big  id = X                 31          14       5     13     10          12           8
    big  id IN (10 values)     177          88      37     72     57          54          52
    big  qty = 7 (2%)          250         263      28    285    428         102         142
    many id = X (rules: no)    131          32      11     33     28          32          23
    many id IN (10 values)     289          69      68    104     94         115          96
    many qty = 7 (2%)          655         754     782   1669   1964        1132        1475

(b) is a few ms quicker on a handful of rows, but only because it skips planning (12 ms here, of
which the DuckDB read of the one row is 3.4 ms against pyarrow's 5); it holds every selected row
in Python before DuckDB sees one, needs the query's columns worked out from the SQL, and is
1.3-1.5x slower on dense selections. (a) keeps DuckDB's streaming, projection pushdown, types and
hive columns. ``count(*)`` from the index: 10 ms against DuckDB's 30 (big, id = X) and 36 against
116 (many), but 34 against 15 and 612 against 155 for qty = 7, where DuckDB's count is a fast scan
of one column and the index opens every file's index.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from adapters import walker as walker_module
from adapters.duckdb.answers import count_query, existence_references
from adapters.duckdb.clock import pin_time
from adapters.duckdb.clock import time_calls as time_calls_of
from adapters.duckdb.dynamic import (
    DYNAMIC_KEYS,
    Context,
    Derived,
    Refusal,
    Target,
    derive,
)
from adapters.duckdb.parse import (
    REFUSALS,
    Walker,
    column_types,
    consistent_functions,
    is_utc,
    select_text,
)
from adapters.duckdb.parse import refusal as invalid_predicate
from adapters.duckdb.rows import ROW_COLUMN, Reads, RowRead, first_row, plan_reads
from adapters.duckdb.scope import TableRef, column_refs, find_references, same_ignoring_locations, walk_dicts
from adapters.duckdb.serialized import Class, Key, Subquery, Type
from adapters.duckdb.view import LiveRead, live_read
from adapters.statements import CreateIndex, IndexStatement, StatementError, parse_statement, run_statement
from hudi_expr import (
    AlwaysTrue,
    And,
    BindError,
    ColumnStats,
    Expression,
    bind,
    to_pyarrow,
)
from hudi_expr.expressions import LiteralPredicate, Reference, SetPredicate
from hudi_expr.visitors import transform_leaves
from index_store import (
    IndexCorruptError,
    IndexedTable,
    IndexNotBuiltError,
    IndexStoreError,
    PruneResult,
    RowSelection,
    UseRules,
    open_table,
)
from index_store import tables as _tables
from index_store.tables.base import Listing

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
    rules: UseRules | None  # when the secondary index is used to read rows (None: always)
    dynamic_keys: int | None = DYNAMIC_KEYS  # join keys above this: min/max only (None: no dynamic)
    partition_columns: frozenset[str] = frozenset()  # hive partition columns DuckDB reads from paths


_registry: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, _Registration]] = (
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
    """
    if dynamic_keys is not None and (isinstance(dynamic_keys, bool) or dynamic_keys < 0):
        raise ValueError(f"dynamic_keys must be a count of keys or None, got {dynamic_keys!r}")
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise TypeError(f"expected a DuckDB connection, got {type(con).__name__}")
    indexed = table if isinstance(table, IndexedTable) else open_table(table)
    files = [os.path.join(indexed.root, f.path) for f in indexed.reader.list_files()]
    if not files:
        raise ValueError(f"{indexed.root} has no data files: DuckDB cannot read a table without one")
    if not _built(indexed):
        warnings.warn(f"{name}: {_no_index(indexed)}", IndexUnusedWarning, stacklevel=2)
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
    registration = _Registration(
        name,
        indexed,
        view_oid,
        columns,
        options,
        union_by_name,
        rules,
        dynamic_keys,
        frozenset(partition_columns),
    )
    _registry.setdefault(con, {})[name.lower()] = registration


_NO_INDEX = "no index: every file read"


def _no_index(table: IndexedTable) -> str:
    return f"{_NO_INDEX} (hudi-index build {table.root} makes one)"


def _prune(table: IndexedTable, predicate: Expression) -> PruneResult:
    """``table.prune`` keeping every file when the index is unreadable or not built yet."""
    try:
        return table.prune(predicate, on_corrupt="keep_all")
    except IndexNotBuiltError:
        files = [os.path.join(table.root, f.path) for f in table.reader.list_files()]
        return PruneResult(files, len(files), note=_no_index(table), index_error=_NO_INDEX)


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
    """How one reference to a registered table is read: ``kept`` of ``total`` files, and why.

    ``index`` says whether the secondary index narrowed the read to selected rows, and why
    (``IndexUse.explain()``); ``rows`` how those rows are read; ``answer`` what the index answered
    alone (a count, or whether a row exists), when it did.
    """

    name: str
    alias: str
    kept: int  # files read
    total: int
    used: tuple[str, ...]  # SQL text of the conjuncts that pruned
    not_used: tuple[str, ...]  # conjuncts (or parts) about this table that could not, with why
    result: PruneResult | None = field(default=None, repr=False, compare=False)
    note: str = ""  # e.g. why the index could not be used
    index: str = ""  # "secondary index used: ..." or "secondary index not used: ..." ("" if no predicate)
    rows: str = ""  # how the selected rows are read
    answer: str = ""  # "count(*) answered by the secondary index: ..."
    selection: RowSelection | None = field(default=None, repr=False, compare=False)
    reads: Reads | None = field(default=None, repr=False, compare=False)  # None: ``result``'s files
    direct: str = ""  # why the registered view is read as it is (DuckDB alone), "" when rewritten
    glob: str = ""  # a direct read's glob that reads the view's files without its hidden-file filter

    @property
    def index_used(self) -> bool:
        """Whether the secondary index selected the rows read (or answered the query)."""
        return self.selection is not None and self.selection.use.used

    def __str__(self) -> str:
        shown = self.name if self.alias.lower() == self.name.lower() else f"{self.name} AS {self.alias}"
        lines = [f"{shown}: kept {self.kept} of {self.total} files"]
        lines += [f"  used:     {text}" for text in self.used]
        lines += [f"  not used: {text}" for text in self.not_used]
        if self.result is not None:
            lines += [f"  note: {line}" for line in self.result.notes() if line != self.result.note]
        if self.note:
            lines.append(f"  note: {self.note}")
        if self.direct:
            lines.append(f"  note: run by DuckDB directly: {self.direct}")
        if self.glob:
            lines.append(f"  note: read as {self.glob} (every data file, no hidden one, at one depth)")
        lines += [f"  {text}" for text in (self.index, self.rows, self.answer) if text]
        return "\n".join(lines)


class IndexUnusedWarning(UserWarning):
    """A query read every file of a table because its index could not be used, or every row of
    some files because their secondary index files could not be read."""


@dataclass(frozen=True)
class QueryPlan:
    """A query, the text DuckDB will run for it, and how each registered table is read.

    An index statement (``CREATE INDEX``...) has ``statement`` set: ``relation()`` runs it.
    """

    query: str
    sql: str
    tables: tuple[TablePlan, ...]
    note: str
    params: Any = field(repr=False)
    con: duckdb.DuckDBPyConnection = field(repr=False, compare=False)
    statement: IndexStatement | None = None

    def relation(self) -> duckdb.DuckDBPyRelation:
        """Run the planned query (``con.sql`` of the rewritten text), or the index statement."""
        if self.statement is not None:
            return self.con.from_arrow(run_statement(self.statement, functools.partial(_open, self.con)))
        return self.con.sql(self.sql, params=self.params)

    def execute(self) -> duckdb.DuckDBPyConnection:
        """Run it as ``con.execute`` does: the result is fetched from what this returns (``fetchall``,
        ``arrow``...). Cheaper than ``relation()``, which DuckDB binds once more to type it."""
        if self.statement is not None:
            # On a cursor: its temporary name lives on the cursor, not on the user's connection.
            cursor = self.con.cursor()
            cursor.register(
                "index_statement", run_statement(self.statement, functools.partial(_open, self.con))
            )
            return cursor.execute("SELECT * FROM index_statement")
        return self.con.execute(self.sql, self.params)

    def __str__(self) -> str:
        lines = [str(t) for t in self.tables] or ["no registered table is read"]
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)


def sql(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> duckdb.DuckDBPyRelation:
    """``con.sql(query, params=params)``, with every registered table read pruned (see ``plan``)."""
    return plan(con, query, params).relation()


def execute(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> duckdb.DuckDBPyConnection:
    """``con.execute(query, params)``, with every registered table read pruned (see ``plan``); fetch
    the result from what it returns, as after ``con.execute``."""
    return plan(con, query, params).execute()


def plan(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> QueryPlan:
    """Plan ``query`` on ``con``: prune each registered table it reads, say how (``str(plan)``).

    Each reference reads the files that may hold a match and, where a predicate is on a column
    with a secondary index and the registration's rules say it pays, only the rows the index
    selects (``adapters.duckdb.rows``). ``SELECT count(*) FROM t WHERE p`` and existence tests
    (``EXISTS (SELECT ... FROM t WHERE p)``, ``SELECT 1 FROM t WHERE p LIMIT 1``) whose ``p``
    translates exactly are answered from exact selections alone (``adapters.duckdb.answers``).
    The filtered, smaller side of an equi-join or an uncorrelated ``IN (SELECT ...)`` is evaluated
    first, on ``con``, and its keys prune the registered side (``adapters.duckdb.dynamic``). A
    reference the index cannot narrow (every file kept, or only hive partitions DuckDB prunes
    itself) reads the registered view, as DuckDB alone would.
    An index statement (``CREATE INDEX``, ``DROP INDEX``, ``SHOW INDEXES``, ``REFRESH INDEX``, see
    ``adapters.statements``) on a registered table is planned to run on it.
    """
    return _plan(con, query, params, dynamic=True)


def _plan(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: Any,
    dynamic: bool,
    written: str | None = None,
    renamed: bool = False,
) -> QueryPlan:
    """``plan``; ``written``: the user's text when ``query`` is it with the time pinned
    (``adapters.duckdb.clock``), whose output names it keeps (``renamed``: a time call named one)."""
    if not isinstance(query, str):
        raise TypeError(f"expected SQL text, got {type(query).__name__}")
    shown = query if written is None else written  # what the plan reports, and runs unpruned
    indexing = _statement_plan(con, query)
    if indexing is not None:
        return indexing
    if con not in _registry:
        return QueryPlan(shown, shown, (), "no table is registered on this connection", params, con)
    session = _session(con, query)
    registrations = _live_registrations(con, session.views)
    if not registrations:
        return QueryPlan(shown, shown, (), "no table is registered on this connection", params, con)
    statements = session.tree.get(Key.STATEMENTS) or []
    if session.tree.get(Key.ERROR) or len(statements) != 1:
        error = session.tree.get(Key.ERROR_MESSAGE, "")
        why = error if session.tree.get(Key.ERROR) else "not a single SELECT statement"
        return QueryPlan(shown, shown, (), f"run as written, without pruning ({why})", params, con)
    statement = statements[0][Key.NODE]
    if written is None:
        # now(), current_date ...: one instant, written into the query, so that the constants
        # that prune and the ones the query compares with are the same (adapters.duckdb.clock).
        pinned = pin_time(con, query, statement)
        if pinned is not None:
            named = _names_from_text(statement, [], time_calls=True)
            return _plan(con, pinned, params, dynamic, written=query, renamed=named)
    # A name reads main's view unless another schema is searched first (unqualified names) or a
    # temporary view or table of that name hides it (DuckDB looks in temp.main first, also for
    # ``main.name``).
    unqualified = session.schema.lower() == "main"

    def registration_of(node: dict[str, Any]) -> _Registration | None:
        name = str(node.get(Key.TABLE_NAME, "")).lower()
        registration = registrations.get(name)
        catalog = str(node.get(Key.CATALOG_NAME) or "").lower()
        schema = str(node.get(Key.SCHEMA_NAME) or "").lower()
        if (
            registration is None
            or schema not in ("main", "")
            or catalog not in ("", session.database.lower())
        ):
            return None
        if not catalog and (name in session.temporary or (not schema and not unqualified)):
            return None
        return registration

    plain = _plain_columns(con, statement, registration_of)

    def columns_of(node: dict[str, Any]) -> tuple[str | None, dict[str, str]] | None:
        registration = registration_of(node)
        if registration is not None:
            return registration.name, {c.lower(): c for c, _ in registration.columns}
        known = plain.get(_table_key(node))
        return None if known is None else (None, known)

    qualified = _schema_qualified(statement, session.database)
    found = find_references(statement, columns_of)
    refs = [
        ref
        for ref in found.references
        if ref.node.get(Key.SAMPLE) is None
        and ref.node.get(Key.AT_CLAUSE) is None
        # ``main.t.col`` cannot name the spliced ``(...) AS t``: such references stay as written.
        and (ref.node.get(Key.ALIAS) or str(ref.node.get(Key.TABLE_NAME)).lower() not in qualified)
    ]
    if not refs:
        return QueryPlan(shown, shown, (), "", params, con)
    planner = _Planner(query, session.timezone, con)
    placeholders = [f"__hudi_ref_{k}" for k in range(len(refs))]
    # The literals of every conjunct, and the check of the splice (the query with placeholders
    # where the references were, parsed back), in one round trip to DuckDB. A reference written
    # as nothing but its name and aliases needs no check.
    check = None if _plainly_written(query, refs) else _spliced(query, refs, placeholders)
    checked = planner.walker.evaluate_constants([p.node for ref in refs for p in ref.pushable], parse=check)
    if check is not None and not _same_but_renamed(checked, statement, refs, placeholders):
        note = "run as written, without pruning: the rewritten text did not parse back to the same query"
        return QueryPlan(shown, shown, (), note, params, con)
    read = [registrations[str(ref.registered).lower()] for ref in refs]
    counted = count_query(statement, refs)
    existence = existence_references(statement, refs)
    answerable = existence | ({id(counted.ref)} if counted is not None else set())
    translated = [planner.translate(ref, r) for ref, r in zip(refs, read, strict=True)]
    derived = _derive(con, refs, read, translated, found.cte_names, planner) if dynamic else {}
    # Where the index may answer alone, it is asked regardless of the rules (which weigh reads).
    pruned = [
        planner.finish(ref, r, t, derived.get(id(ref)), None if id(ref) in answerable else r.rules)
        for ref, r, t in zip(refs, read, translated, strict=True)
    ]
    if counted is not None:
        answered = pruned[refs.index(counted.ref)].count()
        if answered is not None:
            table, n = answered
            constant = f"SELECT CAST({n} AS BIGINT) AS {_quote(counted.name)}"
            return QueryPlan(shown, constant, (table,), "", None, con)
    tables = tuple(
        _direct((p.exists() if id(ref) in existence else None) or p.read(), r, p)
        for ref, r, p in zip(refs, read, pruned, strict=True)
    )
    spliced = [(ref, r, t) for ref, r, t in zip(refs, read, tables, strict=True) if not t.direct or t.glob]
    if not spliced:
        return QueryPlan(shown, shown, tables, "", params, con)
    rewritten = _spliced(query, [ref for ref, _, _ in spliced], [_source(r, t) for _, r, t in spliced])
    if renamed or _names_from_text(statement, [ref for ref, _, _ in spliced]):
        # DuckDB names an unaliased expression by its text; with a reference spliced into it (or
        # the time pinned in it) the text changed, so the original names are put back, by position.
        names = ", ".join(_quote(c) for c in con.sql(shown, params=params).columns)
        rewritten = f"SELECT * FROM ({rewritten}) AS __hudi_named({names})"
    return QueryPlan(shown, rewritten, tables, "", params, con)


def _direct(table: TablePlan, registration: _Registration, pruned: _Pruned) -> TablePlan:
    """``table``, marked to read the registered view when the index cannot narrow the read: every
    file is kept, or only hive partitions are pruned (DuckDB prunes those itself, from the folder
    names, without opening a file). Reading the view then costs DuckDB nothing more than the
    query alone, where a spliced list of files costs parsing and planning it."""
    result = table.result
    if table.answer or table.reads is not None or result is None or table.index_used:
        return table
    why = ""
    if result.kept >= result.total:
        why = "the index keeps every file"
    elif registration.partition_columns and pruned.parts and not pruned.dynamic:
        hive = [p for p in pruned.parts if set(p.references()) <= registration.partition_columns]
        # The other conjuncts pruned nothing more when the hive ones alone keep as many files.
        if len(hive) == len(pruned.parts) or (
            hive and _prune(registration.table, And(*hive)).kept == result.kept
        ):
            why = "only hive partition filters pruned, and DuckDB prunes hive partitions itself"
    return dataclasses.replace(table, direct=why, glob=_uniform_glob(registration) or "") if why else table


# The last glob worked out per table, with the listing it came from (the same object until the
# table changes on disk).
_GLOBS: weakref.WeakKeyDictionary[IndexedTable, tuple[Listing, str | None]] = weakref.WeakKeyDictionary()


def _uniform_glob(registration: _Registration) -> str | None:
    """A glob that reads exactly the files the registered view reads, without its per-row filter
    on the file name (which costs DuckDB up to a fifth of a scan): there is one when every data
    file is a ``.parquet`` at the same depth under the root and no folder or file name on the way
    starts with ``.`` or ``_`` (which the view's filter is for, and ``[!._]*`` leaves out)."""
    table = registration.table
    if table.reader.kind != "parquet":
        return None
    listing = _tables.listing(table.reader)
    cached = _GLOBS.get(table)
    if cached is not None and cached[0] is listing:
        return cached[1]
    paths = listing.paths
    glob: str | None = None
    if len(paths):
        depth = pc.count_substring(paths, "/")
        shallow, deep = pc.min_max(depth).values()
        hidden = pc.any(pc.match_substring_regex(paths, r"(^|/)[._]")).as_py()
        plain = pc.all(pc.ends_with(paths, ".parquet")).as_py()
        if shallow == deep and not hidden and plain:
            glob = table.root.rstrip("/") + "/" + "[!._]*/" * deep.as_py() + "[!._]*.parquet"
    _GLOBS[table] = (listing, glob)
    return glob


def _derive(
    con: duckdb.DuckDBPyConnection,
    refs: Sequence[TableRef],
    read: Sequence[_Registration],
    translated: Sequence[_Translated],
    cte_names: set[str],
    planner: _Planner,
) -> dict[int, tuple[list[Derived], list[Refusal]]]:
    """Dynamic pruning (``adapters.duckdb.dynamic``): by reference id, the filters the other sides
    of its joins give it, and the joins that gave none, with why."""
    wanted = [
        k
        for k, ref in enumerate(refs)
        if ref.joins or any(p.node.get(Key.SUBQUERY_TYPE) == Subquery.ANY for p in ref.pushable)
    ]
    if not wanted:
        return {}
    by_ref = {id(ref): k for k, ref in enumerate(refs)}

    def rows(other: TableRef) -> float | None:
        k = by_ref.get(id(other))
        if k is not None:
            return translated[k].rows(read[k])
        if other.registered is not None:
            return None  # a registered table not rewritten (sampled, read AT a version)
        return _table_rows(con, other.node)

    def read_of(other: TableRef) -> str:
        k = by_ref.get(id(other))
        result = None if k is None else translated[k].result
        if k is None or result is None or not result.index_used or result.kept >= result.total:
            return ""  # the registered view, every file
        return _source(
            read[k], TablePlan(read[k].name, other.alias, result.kept, result.total, (), (), result)
        )

    def relation(text: str) -> duckdb.DuckDBPyRelation:
        return _plan(con, text, None, dynamic=False).relation()

    context = Context(con, cte_names, planner.walker.source_text, rows, read_of, relation)
    out: dict[int, tuple[list[Derived], list[Refusal]]] = {}
    for k in wanted:
        ref, registration, t = refs[k], read[k], translated[k]
        conjuncts = [j.conjunct for j in ref.joins] + [
            p.node for p in ref.pushable if p.node.get(Key.SUBQUERY_TYPE) == Subquery.ANY
        ]
        if registration.dynamic_keys is None:
            why = "dynamic pruning: off for this table (register(dynamic_keys=None))"
            out[id(ref)] = ([], [Refusal(c, why) for c in conjuncts])
            continue
        if t.result is None or not t.result.index_used or t.result.kept == 0:
            out[id(ref)] = ([], [Refusal(c, "dynamic pruning: no file left to prune") for c in conjuncts])
            continue
        types = {c: kind for c, kind in registration.columns}

        def stats(column: str, table: IndexedTable = registration.table) -> ColumnStats | None:
            try:
                return table.stats([column]).columns.get(column)
            except IndexStoreError:
                return None

        target = Target(types, registration.dynamic_keys, t.rows(registration), t.result.kept, stats)
        out[id(ref)] = derive(ref, target, context)
    return out


def _plain_columns(
    con: duckdb.DuckDBPyConnection,
    statement: dict[str, Any],
    registration_of: Callable[[dict[str, Any]], _Registration | None],
) -> dict[tuple[str, str, str], dict[str, str]]:
    """The columns of the tables and views of DuckDB's own a statement reads, when it also reads a
    registered table: their unqualified columns then belong to them, not to an outer query.

    Read from DuckDB's catalog (``duckdb_columns()``, one query, nothing bound), looking a name up
    as DuckDB does: temporary objects first, then the current schema. A wrong guess costs pruning,
    never an answer: a column two tables seem to have is no one's, and a join key is read by
    DuckDB's own binding of the name."""
    tables = [n for n in walk_dicts(statement) if n.get(Key.TYPE) == Type.BASE_TABLE]
    if not any(registration_of(n) is not None for n in tables):
        return {}
    keys = {_table_key(n) for n in tables if registration_of(n) is None}
    if not keys:
        return {}
    rows = con.execute(
        "SELECT current_database(), current_schema(), database_name, schema_name, table_name, "
        "list(column_name ORDER BY column_index) FROM duckdb_columns() "
        "WHERE NOT internal AND list_contains($names, lower(table_name)) "
        "GROUP BY database_name, schema_name, table_name",
        {"names": sorted({key[2].lower() for key in keys})},
    ).fetchall()
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    current = (str(rows[0][0]).lower(), str(rows[0][1]).lower()) if rows else ("", "")
    for key in keys:
        catalog, schema, name = (part.lower() for part in key)
        found = {
            (str(db).lower(), str(sch).lower()): [str(c) for c in columns]
            for _, _, db, sch, table, columns in rows
            if str(table).lower() == name
        }
        if catalog:
            places = [(catalog, schema or "main")]
        elif schema:  # temp.main hides main.name too
            places = [("temp", schema), (current[0], schema), (schema, "main")]
        else:
            places = [("temp", "main"), current]
        columns = next((found[p] for p in places if p in found), None)
        if columns is not None:
            out[key] = {c.lower(): c for c in columns}
    return out


def _table_key(node: dict[str, Any]) -> tuple[str, str, str]:
    return (
        str(node.get(Key.CATALOG_NAME) or ""),
        str(node.get(Key.SCHEMA_NAME) or ""),
        str(node.get(Key.TABLE_NAME) or ""),
    )


def _table_rows(con: duckdb.DuckDBPyConnection, node: dict[str, Any]) -> float | None:
    """DuckDB's estimate of the rows of its own table a BASE_TABLE node names (None: not a table
    of DuckDB's, e.g. a view), looked up as DuckDB resolves names (temporary ones first)."""
    catalog, schema, name = _table_key(node)
    [(rows,)] = con.execute(
        """SELECT max_by(estimated_size, temporary) FROM duckdb_tables()
           WHERE lower(table_name) = lower($name) AND CASE
             WHEN $catalog <> '' THEN lower(database_name) = lower($catalog)
                                      AND lower(schema_name) = lower(coalesce(nullif($schema, ''), 'main'))
             WHEN $schema <> '' THEN (lower(schema_name) = lower($schema)
                                      AND database_name = current_database())
                                     OR (lower(database_name) = lower($schema) AND schema_name = 'main')
             ELSE temporary OR (database_name = current_database() AND schema_name = current_schema()) END""",
        {"name": name, "catalog": catalog, "schema": schema},
    ).fetchall()
    return None if rows is None else float(rows)


class _Recording(Walker):
    """The walker, also keeping the nodes it could not translate (to say why each was not)."""

    def __init__(self, query: bytes, timezone: str) -> None:
        super().__init__(query, lambda parts: None, 0, timezone)
        self.failed: list[dict[str, Any]] = []
        self.recording = False

    def translate(self, node: dict[str, Any], negated: bool) -> Expression:
        self.failed, self.recording = [], True
        try:
            return super().translate(node, negated)
        finally:
            self.recording = False

    def source_text(self, node: dict[str, Any]) -> str:
        if self.recording:
            self.failed.append(node)
        return super().source_text(node)


@dataclass
class _Translated:
    """A reference's conjuncts, translated: what prunes, and what does not with why."""

    schema: pa.Schema | None
    used: list[str]
    bound: list[Expression]
    not_used: list[tuple[dict[str, Any] | None, str, str]]  # (conjunct, text, why)
    exact: bool
    result: PruneResult | None = None  # pruned by ``bound`` alone

    @property
    def predicate(self) -> Expression:
        return And(*self.bound) if self.bound else AlwaysTrue()

    def rows(self, registration: _Registration) -> float:
        """Rows in the files the translated conjuncts keep (the average file's, times the files)."""
        result = self.result
        if result is None:
            return float("inf")
        try:
            counts = registration.table.stats([], with_blooms=False).row_count
        except IndexStoreError:
            return float("inf")
        known = counts.drop_null()
        average = (pc.sum(known).as_py() or 0) / len(known) if len(known) else 0.0
        return average * result.kept


class _Planner:
    """Translates and checks the conjuncts of one query; prunes each reference with them."""

    def __init__(self, query: str, timezone: str, con: duckdb.DuckDBPyConnection) -> None:
        self.walker = _Recording(query.encode(), timezone)
        self.timezone = timezone
        self.utc = is_utc(timezone)
        self.con = con

    def translate(self, ref: TableRef, registration: _Registration) -> _Translated:
        """Translate and bind the reference's conjuncts, and prune its files by them."""
        self.walker.resolve = ref.column_path
        try:
            snapshot = registration.table.snapshot()
            schema: pa.Schema | None = snapshot.schema if snapshot.version else None
            unusable = "no index"
        except IndexCorruptError:
            schema = None  # prune below keeps every file and says why (so with no index built)
            unusable = "the index is unreadable"
        self.walker.column_type = (lambda path: None) if schema is None else column_types(schema)
        used: list[str] = []
        bound: list[Expression] = []
        text = self.walker.source_text
        not_used: list[tuple[dict[str, Any] | None, str, str]] = [
            (node, text(node), why) for node, why in ref.refused
        ]
        exact = True  # every conjunct translated to an expression TRUE on exactly its rows
        unchecked: list[dict[str, Any]] = []  # conjuncts not used: DuckDB may refuse them
        for pushable in ref.pushable:
            node = pushable.node
            conjunct_text = text(node)
            if schema is None:
                not_used.append((node, conjunct_text, unusable))
                continue
            expr = self.walker.translate(node, negated=False)
            failed = list(self.walker.failed)
            if failed:
                unchecked.append(node)
            whys = list(dict.fromkeys(self._why(part) for part in failed))
            why = "; ".join(whys) if whys else "always TRUE"
            if not self.utc and not isinstance(expr, AlwaysTrue):
                expr, mixed = _without_zone_mixing(expr, schema)
                exact = exact and not mixed
                why = f"mixes time zones under session TimeZone {self.timezone}"
            if isinstance(expr, AlwaysTrue):
                not_used.append((node, conjunct_text, why))
                continue
            not_used += [(None, text(part), self._why(part)) for part in failed]
            if pushable.needs_null_rejection and _true_on_nulls(expr, schema):
                not_used.append((node, conjunct_text, "TRUE on the NULL rows of an outer join"))
                continue
            try:
                expr = bind(expr, schema)
            except BindError as exc:
                not_used.append((node, conjunct_text, f"untranslatable type: {exc}"))
                unchecked.append(node)
                continue
            used.append(conjunct_text)
            bound.append(expr)
        self._check(unchecked, registration, ref.alias)
        translated = _Translated(schema, used, bound, not_used, exact)
        translated.result = _prune(registration.table, translated.predicate)
        return translated

    def _check(self, conjuncts: list[dict[str, Any]], registration: _Registration, alias: str) -> None:
        """Raise ``InvalidPredicateError`` (also the DuckDB error) for a conjunct DuckDB refuses.

        The conjuncts the index used were bound and their constants evaluated; a conjunct it could
        not use may be one DuckDB cannot bind (``abs(date_col) = 3``) or whose constant is no value
        of the column's type (``int_col = 'abc'``, an error only when DuckDB evaluates it), which a
        read of few or no files, or an answer from the index, would hide. DuckDB evaluates each
        such conjunct on one row of NULLs of the table's columns, on ``con`` (its macros and
        types): an error it raises whatever the data is the query's error. Conjuncts with a
        subquery, a parameter, another table's column or a function that is not one of DuckDB's
        consistent ones (``nextval``, a macro) are left to the query itself.
        """
        checkable = [c for c in conjuncts if self._checkable(c)]
        if not checkable:
            return
        # VALUES, not SELECT: DuckDB folds a comparison with a column it knows is NULL (statistics)
        # without evaluating the constant, and would not raise.
        nulls = ", ".join(f"CAST(NULL AS {t})" for _, t in registration.columns)
        names = ", ".join(_quote(c) for c, _ in registration.columns)
        source = f" FROM (VALUES ({nulls})) AS {_quote(alias)}({names})"

        def run(nodes: list[dict[str, Any]]) -> duckdb.Error | None:
            select = select_text(nodes)
            if select is None:
                return None
            try:
                self.con.execute(select + source).fetchall()
            except REFUSALS as exc:
                return exc
            except duckdb.Error:
                return None  # not known to be the query's error: DuckDB reports it when it runs
            return None

        error = run(checkable)
        if error is None:
            return
        culprit = checkable[0]
        if len(checkable) > 1:  # which one, for the message
            for node in checkable:
                found = run([node])
                if found is not None:
                    culprit, error = node, found
                    break
        raise invalid_predicate(error, self.walker.source_text(culprit))

    def _checkable(self, node: dict[str, Any]) -> bool:
        """Whether ``node`` reads only the reference's columns, through DuckDB's consistent functions."""
        functions = consistent_functions()
        for n in walk_dicts(node):
            cls = n.get(Key.CLASS)
            if cls in (Class.SUBQUERY, Class.PARAMETER, Class.LAMBDA, Class.WINDOW):
                return False
            if cls == Class.FUNCTION and (
                n.get(Key.SCHEMA)
                or n.get(Key.CATALOG)
                or str(n.get(Key.FUNCTION_NAME, "")).lower() not in functions
            ):
                return False
            if (
                cls == Class.COLUMN_REF
                and self.walker.resolve([str(p) for p in n.get(Key.COLUMN_NAMES) or []]) is None
            ):
                return False
        return True

    def _why(self, node: dict[str, Any]) -> str:
        """Why the index cannot use a part of a conjunct, in a few words."""
        inside = list(walk_dicts(node))
        if any(n.get(Key.CLASS) == Class.SUBQUERY for n in inside):
            return "a subquery"
        if any(n.get(Key.CLASS) == Class.PARAMETER for n in inside):
            return "a query parameter: its value is not known when planning"
        resolve = self.walker.resolve
        columns = {resolve([str(p) for p in c.get(Key.COLUMN_NAMES) or []]) for c in column_refs(node)}
        if len(columns) > 1:
            return "compares columns of the table with each other"
        if None in columns:
            return "names a column the table does not have"
        shape = self.walker.shape(node)
        if shape is None:
            return f"{_called(node)}: not a form the index reads"
        if isinstance(shape, walker_module.TruthTest):
            # An IS [NOT] TRUE/FALSE/NULL test is used only when all of its operand translates
            # exactly: a part read as TRUE there could turn the test FALSE on a matching row.
            return "a truth test (IS TRUE/FALSE/NULL) of a predicate that does not translate exactly"
        for operand in _operands(shape):
            if not any(True for _ in column_refs(operand)):
                try:
                    self.walker.literal(operand)
                except walker_module.Untranslatable:
                    return f"{self.walker.source_text(operand)}: not a constant known when planning"
                continue
            try:
                self.walker.column(operand)
            except walker_module.Untranslatable:
                if operand.get(Key.CLASS) == Class.COLUMN_REF:
                    return "untranslatable type"
                return f"a function of a column that is not monotonic ({_called(operand)})"
        if isinstance(shape, walker_module.LikeTest):
            return "a LIKE pattern that is no equality, prefix or substring test"
        return "untranslatable type"

    def finish(
        self,
        ref: TableRef,
        registration: _Registration,
        translated: _Translated,
        dynamic: tuple[list[Derived], list[Refusal]] | None,
        rules: UseRules | None,
    ) -> _Pruned:
        """Add the derived filters, prune the files, and select the reference's rows by the
        secondary index when ``rules`` say it pays."""
        derived, refusals = dynamic or ([], [])
        schema = translated.schema
        used, parts = list(translated.used), list(translated.bound)
        dropped: dict[int, str] = {}  # conjunct id -> why dynamic pruning did not use it
        for refusal in refusals:
            dropped.setdefault(id(refusal.conjunct), refusal.why)
        gave: set[int] = set()
        for d in derived:
            try:
                expr = bind(d.expr, schema) if schema is not None else None
            except BindError as exc:
                dropped.setdefault(id(d.conjunct), f"dynamic pruning: untranslatable type: {exc}")
                continue
            if expr is not None:
                used.append(d.text)
                parts.append(expr)
                gave.add(id(d.conjunct))
        not_used = []
        for node, text, why in translated.not_used:
            if node is not None and id(node) in gave:
                continue  # shown as the filter it gave
            extra = dropped.get(id(node)) if node is not None else None
            not_used.append(f"{text}  ({why}; {extra})" if extra else f"{text}  ({why})")
        for join in ref.joins:
            if id(join.conjunct) not in gave:
                extra = dropped.get(id(join.conjunct))
                why = "compares columns of two tables" + (f"; {extra}" if extra else "")
                not_used.append(f"{self.walker.source_text(join.conjunct)}  ({why})")
        result = translated.result
        if gave or result is None:
            predicate = And(*parts) if parts else AlwaysTrue()
            result = _prune(registration.table, predicate)
        predicate = And(*parts) if parts else AlwaysTrue()
        note = ""
        if not result.index_used:
            # Nothing was pruned: no conjunct counts as used, and the user hears why.
            why = "no index" if result.index_error == _NO_INDEX else "the index is unreadable"
            not_used = [f"{text}  ({why})" for text in used] + not_used
            used = []
            note = result.note
            if result.index_error != _NO_INDEX:
                note = f"the index is unreadable, every file is read: {result.index_error}"
            warnings.warn(f"{registration.name}: {note}", IndexUnusedWarning, stacklevel=5)
        selection, index = None, ""
        if used:
            selection, index = _select(registration, predicate, rules)
            if selection is not None and selection.corrupt:
                # As for unreadable statistics: the answer is right, but the user hears why rows
                # the index should have skipped (or a count it should have known) were read.
                unread = "; ".join(selection.corrupt)
                note = f"{note}; {unread}" if note else unread
                warnings.warn(f"{registration.name}: {unread}", IndexUnusedWarning, stacklevel=5)
        elif ref.pushable or ref.refused or ref.joins:
            index = "secondary index not used: no conjunct about the table could be translated"
        table = TablePlan(
            registration.name,
            ref.alias,
            result.kept,
            result.total,
            tuple(used),
            tuple(not_used),
            result,
            note,
            index,
            selection=selection,
        )
        exact = translated.exact and not not_used and bool(used) and not gave
        return _Pruned(table, exact, tuple(parts) if result.index_used else (), bool(gave))


def _operands(shape: Any) -> list[dict[str, Any]]:
    """The operands of a walker shape (columns and constants), in order."""
    fields = ("left", "right", "value", "low", "high", "operand", "prefix", "substring", "word", "pattern")
    found = [getattr(shape, f) for f in fields if isinstance(getattr(shape, f, None), dict)]
    found += list(getattr(shape, "items", []) or [])
    if isinstance(getattr(shape, "node", None), dict):
        found.append(shape.node)
    return found


def _called(node: dict[str, Any]) -> str:
    """What a node applies: a function's name, CAST, CASE, or the node's kind."""
    cls = node.get(Key.CLASS)
    if cls == Class.FUNCTION:
        name = str(node.get(Key.FUNCTION_NAME, "?"))
        return {"~~*": "ILIKE", "!~~*": "NOT ILIKE", "~~": "LIKE", "!~~": "NOT LIKE"}.get(name, name)
    if cls in (Class.CAST, Class.CASE):
        return str(cls)
    if cls == Class.OPERATOR:
        return str(node.get(Key.TYPE, "")).removeprefix("OPERATOR_").lower()
    return str(node.get(Key.TYPE) or cls or "?").lower().replace("_", " ")


@dataclass(frozen=True)
class _Pruned:
    """A reference's plan so far; ``exact``: its WHERE is exactly the translated predicate."""

    table: TablePlan
    exact: bool
    parts: tuple[Expression, ...] = ()  # the bound conjuncts (translated and derived) that pruned
    dynamic: bool = False  # whether join keys (``adapters.duckdb.dynamic``) were among them

    def exact_rows(self) -> RowSelection | None:
        """The selection, when it is exactly the rows of the reference the query keeps."""
        selection = self.table.selection
        if not self.exact or selection is None:
            return None
        for n, rows in zip(selection.row_counts, selection.rows, strict=True):
            if not rows.exact and n and (rows.mask is None or rows.mask.any()):
                return None
        return selection

    def read(self) -> TablePlan:
        """The plan reading the selected rows (when the index was used) or the pruned files."""
        selection = self.table.selection
        if selection is None or not selection.use.used:
            return self.table
        reads = plan_reads(selection)
        return dataclasses.replace(self.table, kept=reads.files, rows=_describe(reads), reads=reads)

    def count(self) -> tuple[TablePlan, int] | None:
        """The plan answering ``count(*)`` from the index alone (as ``IndexedTable.count`` does), or
        None when a file's rows are not known exactly."""
        selection = self.exact_rows()
        if selection is None:
            return None
        n = sum(
            count if rows.mask is None else int(rows.mask.sum())
            for count, rows in zip(selection.row_counts, selection.rows, strict=True)
            if rows.exact
        )
        rows = "1 row matches" if n == 1 else f"{n:,} rows match"
        answer = f"count(*) answered by {_by(selection)} alone: {rows}, no data file read"
        return dataclasses.replace(self.table, kept=0, answer=answer, reads=Reads((), 0, 0, 0, n)), n

    def exists(self) -> TablePlan | None:
        """The plan reading one row the index found to match, or none when it found that none does
        (as ``IndexedTable.exists`` answers); None when a file's rows are not known exactly."""
        selection = self.exact_rows()
        if selection is None:
            return None
        found = first_row(selection)
        if found is None:
            answer = f"EXISTS answered by {_by(selection)} alone: no row matches, no data file read"
            return dataclasses.replace(self.table, kept=0, answer=answer, reads=Reads((), 0, 0, 0, 0))
        path, row = found
        answer = f"EXISTS answered by {_by(selection)} alone: a matching row is read ({path} row {row})"
        one = Reads((RowRead((path,), f"{ROW_COLUMN} = {row}"),), 1, 1, 0, 1)
        return dataclasses.replace(self.table, kept=1, answer=answer, reads=one)


def _select(
    registration: _Registration, predicate: Expression, rules: UseRules | None
) -> tuple[RowSelection | None, str]:
    """``IndexedTable.select`` of the predicate when a leaf is on an indexed column; what was decided."""
    table = registration.table
    try:
        definitions = table.snapshot().config.secondary_indexes
    except IndexCorruptError as exc:
        return None, f"secondary index not used: the index is unreadable ({exc})"
    if not definitions:
        return None, "secondary index not used: the table has none"
    indexed = {c for d in definitions for c in d.columns}
    if not any(leaf.term.name in indexed for leaf in predicate.leaves()):
        return None, "secondary index not used: no predicate on an indexed column"
    if any(c.lower() == ROW_COLUMN for c, _ in registration.columns):
        why = f"the table has a column {ROW_COLUMN}, which DuckDB's row reads add"
        return None, f"secondary index not used: {why}"
    try:
        selection = table.select(predicate, rules=rules, on_corrupt="scan")
    except IndexStoreError as exc:
        return None, f"secondary index not used: {exc}"
    return selection, selection.use.explain()


def _by(selection: RowSelection) -> str:
    """Who knew the rows exactly: the index, or statistics proving every row of a file matches."""
    return "the secondary index" if selection.use.used else "column statistics"


def _describe(reads: Reads) -> str:
    whole = reads.files - reads.by_rows
    parts = [f"rows: {reads.by_rows} file(s) read by row number, {whole} read whole"]
    if reads.dropped:
        parts.append(f"{reads.dropped} file(s) with no selected row not read")
    if reads.selected is not None:
        parts.append(f"{reads.selected:,} row(s) selected")
    return "; ".join(parts)


def _without_zone_mixing(expr: Expression, schema: pa.Schema) -> tuple[Expression, bool]:
    """Drop timestamp comparisons whose meaning depends on a session time zone other than UTC.

    Binding reads a zone-less literal against a TIMESTAMPTZ column (and the reverse) in UTC, as the
    session would with TimeZone UTC; under another zone DuckDB shifts one side, so those tests
    are left out (TRUE) rather than guessed. Also says whether any was.
    """
    import datetime as dt

    dropped: list[Expression] = []

    def keep(leaf: Expression) -> Expression:
        kept = zone_free(leaf)
        if kept is not leaf:
            dropped.append(leaf)
        return kept

    def zone_free(leaf: Expression) -> Expression:
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

    out = transform_leaves(expr, keep)
    return out, bool(dropped)


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


# ------------------------------------------------------------------------------ index statements


def _statement_plan(con: duckdb.DuckDBPyConnection, query: str) -> QueryPlan | None:
    """The plan of ``query`` as an index statement on a registered table, or None when it is not
    one (DuckDB runs it). ``CREATE INDEX`` on a table of DuckDB's own, or in a syntax only DuckDB
    knows, is DuckDB's."""
    try:
        statement = parse_statement(query)
    except StatementError:
        if _only_duckdb(con, query):
            return None
        raise
    if statement is None:
        return None
    names = {n.lower() for n in _live_tables(con)}
    if statement.table.lower() not in names:
        if isinstance(statement, CreateIndex) and statement.table.lower() in _duckdb_tables(con):
            return None
        _open(con, statement.table)  # raises, naming the registered tables
    kind = type(statement).__name__
    note = f"index statement ({kind}) on the registered table {statement.table}"
    return QueryPlan(query, query, (), note, None, con, statement)


def _open(con: duckdb.DuckDBPyConnection, name: str) -> IndexedTable:
    """The table registered on ``con`` as ``name`` (case-insensitive), for ``run_statement``."""
    tables = _live_tables(con)
    found = next((t for n, t in tables.items() if n.lower() == name.lower()), None)
    if found is None:
        known = ", ".join(sorted(tables)) or "none"
        raise ValueError(
            f"no table is registered as {name!r} on this connection (registered: {known}); "
            "index statements run on registered tables (adapters.duckdb.register)"
        )
    return found


def _live_tables(con: duckdb.DuckDBPyConnection) -> dict[str, IndexedTable]:
    if con not in _registry:
        return {}
    return {r.name: r.table for r in _live_registrations(con, _view_oids(con)).values()}


def _duckdb_tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {str(row[0]).lower() for row in con.sql("SELECT table_name FROM duckdb_tables()").fetchall()}


def _only_duckdb(con: duckdb.DuckDBPyConnection, query: str) -> bool:
    """Whether a text that is no valid index statement is DuckDB's own (it parses it) and names no
    registered table: e.g. ``CREATE INDEX i ON tbl USING ART (x)`` on a DuckDB table."""
    try:
        con.extract_statements(query)
    except duckdb.Error:
        return False
    words = {w.lower() for w in re.findall(r"[^\s(),;.\"']+", query)}
    return not words & {n.lower() for n in _live_tables(con)}


# ------------------------------------------------------------------------------------ the rewrite


def _source(registration: _Registration, table: TablePlan) -> str:
    """The text of a read of ``table``'s files (or selected rows) with the registered schema, as a
    subquery: one ``read_parquet`` per ``RowRead``, their rows put together by ``UNION ALL``."""
    nulls = "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {_quote(c)}" for c, t in registration.columns)
    if table.glob:
        return f"(SELECT * FROM read_parquet({_string(table.glob)}, {registration.options}))"
    if table.reads is not None:
        reads = table.reads.reads
    elif table.result is not None and table.result.files:
        reads = (RowRead(tuple(table.result.files), None),)
    else:
        reads = ()
    if not reads:
        return f"({nulls} WHERE false)"
    projection = ", ".join(f"CAST({_quote(c)} AS {t}) AS {_quote(c)}" for c, t in registration.columns)
    parts = []
    for each in reads:
        if each.condition is None:
            read = _read(each.files, registration.options)
        else:
            options = f"{ROW_COLUMN} = true, {registration.options}"
            read = f"(SELECT * FROM {_read(each.files, options)} WHERE {each.condition})"
        if registration.union_by_name:
            # The files read may lack columns others have: a typed empty row set supplies them all.
            read = f"({nulls} WHERE false UNION ALL BY NAME SELECT * FROM {read})"
        parts.append(f"SELECT {projection} FROM {read}")
    return "(" + " UNION ALL ".join(parts) + ")"


def _same_but_renamed(
    checked: Any, statement: Any, refs: Sequence[TableRef], placeholders: Sequence[str]
) -> bool:
    """Whether ``checked`` (the parsed text with ``placeholders`` spliced in for ``refs``) is
    ``statement`` with exactly those references renamed, each keeping its alias."""
    statements = (checked or {}).get(Key.STATEMENTS) or []
    if (checked or {}).get(Key.ERROR) or len(statements) != 1:
        return False
    tree = statements[0][Key.NODE]
    by_name = {p: ref.node for p, ref in zip(placeholders, refs, strict=True)}
    seen: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get(Key.TYPE) == Type.BASE_TABLE and item.get(Key.TABLE_NAME) in by_name:
                name = item[Key.TABLE_NAME]
                if name in seen or str(item.get(Key.ALIAS)) != _alias_of(by_name[name]):
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
        parts = [str(p).lower() for p in column.get(Key.COLUMN_NAMES) or []]
        if len(parts) >= 3 and parts[0] == "main":
            found.add(parts[1])
        if len(parts) >= 4 and parts[0] == database.lower() and parts[1] == "main":
            found.add(parts[2])
    return found


def _names_from_text(statement: Any, refs: Sequence[TableRef], time_calls: bool = False) -> bool:
    """Whether an output column is named by the text of an expression holding a rewritten reference
    (or, with ``time_calls``, a call of a time function, which ``pin_time`` rewrites)."""
    node = statement
    while node.get(Key.TYPE) == "SET_OPERATION_NODE":
        node = node.get(Key.LEFT) or {}
    marked = {id(ref.node) for ref in refs}
    if time_calls:
        marked |= {id(call) for call, _ in time_calls_of(node)}
    for item in node.get(Key.SELECT_LIST) or []:
        if item.get(Key.ALIAS) or (item.get(Key.CLASS) == Class.STAR):
            continue
        if item.get(Key.CLASS) == Class.COLUMN_REF and not time_calls:
            continue
        stack: list[Any] = [item]
        while stack:
            part = stack.pop()
            if isinstance(part, dict):
                if id(part) in marked:
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
        renamed = ref.node.get(Key.COLUMN_NAME_ALIAS) or []
        if renamed:
            alias += "(" + ", ".join(_quote(str(c)) for c in renamed) + ")"
        pieces.append(text[start + length : end])
        pieces.append(f"{source} AS {alias}".encode())
        end = start
    pieces.append(text[:end])
    return b"".join(reversed(pieces)).decode()


_NAME = r'(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")'
_WRITTEN_REFERENCE = re.compile(
    rf"(?P<names>{_NAME}(?:\s*\.\s*{_NAME}){{0,2}})"
    rf"(?:\s+(?:AS\s+)?(?P<alias>{_NAME})(?:\s*\((?P<columns>\s*{_NAME}(?:\s*,\s*{_NAME})*)\s*\))?)?",
    re.IGNORECASE,
)
_NAME_TOKEN = re.compile(_NAME)


def _plainly_written(query: str, refs: Sequence[TableRef]) -> bool:
    """Whether the text of each reference is exactly ``[catalog.][schema.]name [[AS] alias
    [(columns)]]`` naming what its node names, so that splicing another source in its place
    changes nothing else in the query (otherwise the spliced text is parsed back and compared)."""
    text = query.encode()
    for ref in refs:
        start, length = ref.span
        try:
            written = text[start : start + length].decode()
        except UnicodeDecodeError:
            return False
        match = _WRITTEN_REFERENCE.fullmatch(written)
        if match is None:
            return False
        node = ref.node
        named = [str(node.get(k) or "") for k in ("catalog_name", "schema_name", "table_name")]
        if _names(match["names"]) != [n for n in named if n]:
            return False
        alias = str(node.get(Key.ALIAS) or "")
        if (match["alias"] is None) != (not alias) or (alias and _names(match["alias"]) != [alias]):
            return False
        columns = [str(c) for c in node.get(Key.COLUMN_NAME_ALIAS) or []]
        if _names(match["columns"] or "") != columns:
            return False
    return True


def _names(text: str) -> list[str]:
    """The identifiers of a dotted or comma-separated list, as DuckDB's syntax tree spells them:
    quoted ones unquoted, unquoted ones as written (DuckDB keeps their case)."""
    return [t[1:-1].replace('""', '"') if t.startswith('"') else t for t in _NAME_TOKEN.findall(text)]


def _alias_of(node: dict[str, Any]) -> str:
    return str(node.get(Key.ALIAS) or node.get(Key.TABLE_NAME))


_same_ignoring_locations = same_ignoring_locations


# ---------------------------------------------------------------------------------------- helpers


def _live_registrations(con: duckdb.DuckDBPyConnection, views: dict[str, int]) -> dict[str, _Registration]:
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
_VIEWS = (
    "SELECT view_name, view_oid, temporary, database_name, schema_name FROM duckdb_views() WHERE NOT internal"
)
_TEMPORARY_TABLES = "SELECT table_name FROM duckdb_tables() WHERE temporary"


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
    [(timezone, database, schema, tree)] = con.execute(_SETTINGS, {"query": query}).fetchall()
    views: dict[str, int] = {}
    temporary = {str(name).lower() for (name,) in con.execute(_TEMPORARY_TABLES).fetchall()}
    for name, oid, is_temporary, view_database, view_schema in con.execute(_VIEWS).fetchall():
        if is_temporary:
            temporary.add(str(name).lower())
        elif view_database == database and view_schema == "main":
            views[str(name).lower()] = int(oid)
    return _Session(str(timezone), str(database), str(schema), views, frozenset(temporary), json.loads(tree))


def _view_oids(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return _session(con).views


def _read(files: Sequence[str], options: str) -> str:
    return f"read_parquet([{', '.join(_string(f) for f in files)}], {options})"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
