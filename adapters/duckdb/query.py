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
planning it (``str(plan)`` says "run by DuckDB directly" and why). A merge-on-read table's view
is the exception: it reads every column of a stream DuckDB cannot project, so its references read
a stream of only the columns the query uses (``adapters.duckdb.columns``, ``merged``), pruned or not.

Each reference's plan lists every WHERE/ON conjunct that names one of its columns: used, or not
used with the reason (``scope`` places them; ``planner.Planner`` says why a part did not translate).

Dynamic file pruning (``adapters.duckdb.dynamic``): the filtered, smaller side of an equi-join
or an uncorrelated ``IN (SELECT ...)`` is evaluated first, on the user's connection, and its keys
prune the registered side (``l_orderkey IN <keys>``, or min/max above ``dynamic_keys``).

Secondary indexes (RFC-51): when a translated predicate has a leaf on an indexed column and
``IndexedTable.select(expr, rules)`` says the index pays, the reference reads only the rows it
selects, by ``file_row_number`` filters DuckDB pushes into its scan (``adapters.duckdb.rows``);
counts and existence tests it knows exactly are answered from it (``adapters.duckdb.answers``).
Reading the selected rows through DuckDB was chosen over handing DuckDB the Arrow rows of
``t.read`` by measurement (docs/benchmarks.md, "Selected rows: through DuckDB or as Arrow rows").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from adapters.duckdb.answers import CountQuery, count_query, existence_references
from adapters.duckdb.clock import pin_time
from adapters.duckdb.columns import used_columns
from adapters.duckdb.dynamic import (
    Context,
    Derived,
    Refusal,
    Target,
    derive,
)
from adapters.duckdb.planner import Planner, Pruned, Translated
from adapters.duckdb.plans import QueryPlan, TablePlan
from adapters.duckdb.registration import (
    IndexUnusedWarning,
    Registration,
    Session,
    has_registrations,
    live_registrations,
    live_tables,
    open_registered,
    prune,
    read_session,
    register,
    registered,
    unregister,
)
from adapters.duckdb.scope import TableRef, TableReferences, find_references, walk_dicts
from adapters.duckdb.serialized import (
    Key,
    Node,
    Subquery,
    is_base_table,
    parse_error,
    single_statement,
    table_key,
)
from adapters.duckdb.splice import (
    kept_read,
    names_from_text,
    plainly_written,
    quote_name,
    same_but_renamed,
    schema_qualified,
    splice,
    uniform_glob,
)
from hudi_expr import (
    And,
    ColumnStats,
)
from index_store import (
    IndexedTable,
    IndexStoreError,
    UseRules,
)
from index_store.secondary.cost import Choice, Purpose
from index_store.secondary.statements import CreateIndex, StatementError, parse_statement

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


# ------------------------------------------------------------------------------------- planning


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
    itself) reads the registered view, as DuckDB alone would; but a merge-on-read table's reads a
    stream of only the columns the query uses, as every reference to one does.
    An index statement (``CREATE INDEX``, ``DROP INDEX``, ``SHOW INDEXES``, ``REFRESH INDEX``, see
    ``index_store.secondary.statements``) on a registered table is planned to run on it.
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
    (``adapters.duckdb.clock``), whose output names it keeps (``renamed``: a time call named one).

    Runs the ``PASSES`` in order over one ``_State``; the first pass that returns a plan ends it."""
    if not isinstance(query, str):
        raise TypeError(f"expected SQL text, got {type(query).__name__}")
    state = _State(con, query, params, dynamic, written, renamed)
    for step in PASSES:
        done = step(state)
        if done is not None:
            return done
    raise AssertionError("the last planning pass always returns a plan")  # pragma: no cover


@dataclass
class _State:
    """What the passes of one plan share: its inputs, then what each pass found (an attribute
    is set by the pass that finds it, before any later pass reads it)."""

    con: duckdb.DuckDBPyConnection
    query: str  # the text planned (the user's, or it with the time pinned)
    params: Any
    dynamic: bool  # whether dynamic pruning runs (not inside the plan of a join's other side)
    written: str | None  # the user's text, when ``query`` has the time pinned
    renamed: bool  # a pinned time call named an output column
    session: Session = field(init=False)
    registrations: dict[str, Registration] = field(init=False)  # live ones, by lower-case name
    statement: Node = field(init=False)  # the query's one statement, as DuckDB serialized it
    found: TableReferences = field(init=False)
    refs: list[TableRef] = field(init=False)  # the references to registered tables planned
    read: list[Registration] = field(init=False)  # each reference's registration
    planner: Planner = field(init=False)
    counted: CountQuery | None = field(init=False)  # ``SELECT count(*) FROM t WHERE p``
    existence: set[int] = field(init=False)  # ids of references only tested for a row
    translated: list[Translated] = field(init=False)
    derived: dict[int, tuple[list[Derived], list[Refusal]]] = field(init=False)
    pruned: list[Pruned] = field(init=False)
    tables: tuple[TablePlan, ...] = field(init=False)
    rewritten: str = field(init=False)  # the query with the spliced references
    spliced: list[TableRef] = field(init=False)
    sources: list[str] = field(init=False)  # what each spliced reference reads, a parenthesized query
    columns: list[tuple[str, ...] | None] = field(init=False)  # each reference's used (None: all)

    @property
    def shown(self) -> str:
        """What the plan reports, and runs when it does not prune."""
        return self.query if self.written is None else self.written

    def as_written(self, note: str, tables: tuple[TablePlan, ...] = ()) -> QueryPlan:
        """The plan that runs the text as written."""
        return QueryPlan(self.shown, self.shown, tables, note, self.params, self.con)


_NOTHING_REGISTERED = "no table is registered on this connection"


def index_statement(state: _State) -> QueryPlan | None:
    """An index statement (``CREATE INDEX``...) on a registered table is planned to run on it."""
    return _statement_plan(state.con, state.query)


def registered_tables(state: _State) -> QueryPlan | None:
    """Read the session (and the query's syntax tree) when a table is registered on ``con``: with
    none, or none whose view is still the registered one, the query runs as written."""
    if not has_registrations(state.con):
        return state.as_written(_NOTHING_REGISTERED)
    state.session = read_session(state.con, state.query)
    state.registrations = live_registrations(state.con, state.session.views)
    return None if state.registrations else state.as_written(_NOTHING_REGISTERED)


def one_statement(state: _State) -> QueryPlan | None:
    """Only a single statement that DuckDB parses is planned."""
    tree = state.session.tree
    statement = single_statement(tree)
    if statement is None:
        error = parse_error(tree)
        why = "not a single SELECT statement" if error is None else error
        return state.as_written(f"run as written, without pruning ({why})")
    state.statement = statement
    return None


def pinned_time(state: _State) -> QueryPlan | None:
    """now(), current_date ...: one instant, written into the query, so that the constants that
    prune and the ones the query compares with are the same (``adapters.duckdb.clock``); the text
    with it is planned instead."""
    if state.written is not None:
        return None
    pinned = pin_time(state.con, state.query, state.statement)
    if pinned is None:
        return None
    named = names_from_text(state.statement, [], time_calls=True)
    return _plan(state.con, pinned, state.params, state.dynamic, written=state.query, renamed=named)


def references(state: _State) -> QueryPlan | None:
    """Find the references to registered tables, with the conjuncts that may prune each
    (``adapters.duckdb.scope``); with none that can be rewritten, the query runs as written."""
    con, statement, session, registrations = state.con, state.statement, state.session, state.registrations
    # A name reads main's view unless another schema is searched first (unqualified names) or a
    # temporary view or table of that name hides it (DuckDB looks in temp.main first, also for
    # ``main.name``).
    unqualified = session.schema.lower() == "main"

    def registration_of(node: Node) -> Registration | None:
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

    def columns_of(node: Node) -> tuple[str | None, dict[str, str]] | None:
        registration = registration_of(node)
        if registration is not None:
            return registration.name, {c.lower(): c for c, _ in registration.columns}
        known = plain.get(table_key(node))
        return None if known is None else (None, known)

    qualified = schema_qualified(statement, session.database)
    state.found = find_references(statement, columns_of)
    state.refs = [
        ref
        for ref in state.found.references
        if ref.node.get(Key.SAMPLE) is None
        and ref.node.get(Key.AT_CLAUSE) is None
        # ``main.t.col`` cannot name the spliced ``(...) AS t``: such references stay as written.
        and (ref.node.get(Key.ALIAS) or str(ref.node.get(Key.TABLE_NAME)).lower() not in qualified)
    ]
    if not state.refs:
        return state.as_written("")
    state.read = [registrations[str(ref.registered).lower()] for ref in state.refs]
    return None


def splice_check(state: _State) -> QueryPlan | None:
    """Evaluate the literals of every conjunct and check the splice (the query with placeholders
    where the references were, parsed back) in one round trip to DuckDB; a reference written as
    nothing but its name and aliases needs no check. A splice that changes more than the
    references runs the query as written."""
    query, refs = state.query, state.refs
    state.planner = Planner(query, state.session.timezone, state.con)
    placeholders = [f"__hudi_ref_{k}" for k in range(len(refs))]
    check = None if plainly_written(query, refs) else splice(query, refs, placeholders)
    nodes = [p.node for ref in refs for p in ref.pushable]
    checked = state.planner.walker.evaluate_constants(nodes, parse=check)
    if check is not None and not same_but_renamed(checked, state.statement, refs, placeholders):
        return state.as_written(
            "run as written, without pruning: the rewritten text did not parse back to the same query"
        )
    return None


def answerable(state: _State) -> QueryPlan | None:
    """Find the references the index may answer alone (``adapters.duckdb.answers``): a count's,
    and those an existence test reads."""
    state.counted = count_query(state.statement, state.refs)
    state.existence = existence_references(state.statement, state.refs)
    return None


def translation(state: _State) -> QueryPlan | None:
    """Translate and bind each reference's conjuncts, and prune its files by them."""
    state.translated = [
        state.planner.translate(ref, r) for ref, r in zip(state.refs, state.read, strict=True)
    ]
    return None


def dynamic_pruning(state: _State) -> QueryPlan | None:
    """The filtered, smaller side of a join prunes the registered side (``adapters.duckdb.dynamic``)."""
    if not state.dynamic:
        state.derived = {}
        return None
    state.derived = _derive(
        state.con,
        state.refs,
        state.read,
        state.translated,
        state.columns,
        state.found.cte_names,
        state.planner,
    )
    return None


def row_selection(state: _State) -> QueryPlan | None:
    """Prune each reference with its translated and derived filters, and select its rows by the
    secondary index where the rules say it pays. Where the index may answer alone, it is asked
    by the rules priced for that answer (``UseRules.purpose``: a count or EXISTS the index answers
    alone reads nothing, so its lookups are weighed against reading the table's filter columns)."""
    counted = id(state.counted.ref) if state.counted is not None else None

    def rules(ref: TableRef, r: Registration) -> UseRules | None:
        if r.rules is None:
            return None
        purpose: Purpose = (
            "count" if id(ref) == counted else "exists" if id(ref) in state.existence else "rows"
        )
        return dataclasses.replace(r.rules, purpose=purpose, reader="duckdb")

    # The columns an EXISTS's reference may read: a row standing for its matches holds those alone.
    used = (
        used_columns(state.statement, state.refs, [[c for c, _ in r.columns] for r in state.read])
        if state.existence
        else [None] * len(state.refs)
    )
    state.pruned = [
        state.planner.finish(
            ref, r, t, state.derived.get(id(ref)), rules(ref, r), cols if id(ref) in state.existence else None
        )
        for ref, r, t, cols in zip(state.refs, state.read, state.translated, used, strict=True)
    ]
    return None


def count_answer(state: _State) -> QueryPlan | None:
    """``SELECT count(*) FROM t WHERE p`` whose rows the index knows exactly is answered by it: the
    query run is a constant."""
    counted = state.counted
    if counted is None:
        return None
    answered = state.pruned[state.refs.index(counted.ref)].count()
    if answered is None:
        return None
    table, n = answered
    constant = f"SELECT CAST({n} AS BIGINT) AS {quote_name(counted.name)}"
    return QueryPlan(state.shown, constant, (table,), "", None, state.con)


def glob_or_splice(state: _State) -> QueryPlan | None:
    """Each reference reads its kept files or rows, spliced into the text; one the index cannot
    narrow reads the registered view (or a glob of its files), and with none spliced the query
    runs as written."""
    state.tables = tuple(
        _projected(_direct((p.exists() if id(ref) in state.existence else None) or p.read(), r, p), r, used)
        for ref, r, p, used in zip(state.refs, state.read, state.pruned, state.columns, strict=True)
    )
    spliced = [
        (ref, r, t)
        for ref, r, t in zip(state.refs, state.read, state.tables, strict=True)
        if not t.direct or t.glob or t.columns is not None
    ]
    if not spliced:
        return state.as_written("", state.tables)
    state.spliced = [ref for ref, _, _ in spliced]
    state.sources = [kept_read(r, t) for _, r, t in spliced]
    state.rewritten = splice(state.query, state.spliced, state.sources)
    return None


def column_use(state: _State) -> QueryPlan | None:
    """The columns each reference may read (``adapters.duckdb.columns``): a merge-on-read table's
    stream is asked for those alone, as DuckDB cannot push a projection into it. Only such a
    stream is asked for columns (DuckDB projects scans of parquet files itself): with none read,
    the statement is not walked for them."""
    if all(r.merged is None for r in state.read):
        state.columns = [None] * len(state.refs)
        return None
    state.columns = used_columns(state.statement, state.refs, [[c for c, _ in r.columns] for r in state.read])
    return None


def output_names(state: _State) -> QueryPlan | None:
    """DuckDB names an unaliased expression by its text; with a reference spliced into it (or the
    time pinned in it) the text changed, so the original names are put back, by position."""
    rewritten = state.rewritten
    if state.renamed or names_from_text(state.statement, state.spliced):
        as_ctes = _reads_as_ctes(state)
        if as_ctes is not None:
            return QueryPlan(state.shown, as_ctes, state.tables, "", state.params, state.con)
        columns = _names_over_empty(state) or state.con.sql(state.shown, params=state.params).columns
        names = ", ".join(quote_name(c) for c in columns)
        rewritten = f"SELECT * FROM ({rewritten}) AS __hudi_named({names})"
    return QueryPlan(state.shown, rewritten, state.tables, "", state.params, state.con)


def _spliced_names(state: _State) -> set[str] | None:
    """The lower-case names of the spliced references, when a CTE of each name would stand for
    exactly them: the text has no WITH of its own nor a pinned time, and every table reference of
    such a name in it is a spliced one, unqualified (a CTE hides no schema-qualified name)."""
    if state.written is not None or state.found.cte_names:
        return None
    spliced = {id(ref.node) for ref in state.spliced}
    names = {str(ref.node.get(Key.TABLE_NAME) or "").lower() for ref in state.spliced}
    for node in walk_dicts(state.statement):
        if not is_base_table(node) or str(node.get(Key.TABLE_NAME) or "").lower() not in names:
            continue
        if id(node) not in spliced or node.get(Key.SCHEMA_NAME) or node.get(Key.CATALOG_NAME):
            return None
    return names


def _reads_as_ctes(state: _State) -> str | None:
    """The user's text, unchanged, after a CTE of each spliced reference's name reading what the
    splice would: its output names are DuckDB's for the text as written, with nothing to bind
    for them. Only where each name is read once (DuckDB inlines such a CTE as the subquery the
    splice writes; one read more than once it may materialize) and ``_spliced_names`` holds."""
    names = _spliced_names(state)
    if names is None or len(names) != len(state.spliced):
        return None
    if not all(source.startswith("(") and source.endswith(")") for source in state.sources):
        return None
    ctes = ", ".join(
        f"{quote_name(str(ref.node.get(Key.TABLE_NAME)))} AS {source}"
        for ref, source in zip(state.spliced, state.sources, strict=True)
    )
    return f"WITH {ctes} {state.query}"


def _names_over_empty(state: _State) -> list[str] | None:
    """The output names of the user's text, bound with each spliced table name read as an empty
    CTE of the registered columns: DuckDB names a column by its expression's text alone, so the
    names are the ones the registered view gives, without binding the view (which lists and opens
    the table's files: 4 ms on 200 files against 1 ms). None where a CTE could name something
    else than the spliced references (the text has a WITH of its own, a qualified or unspliced
    reference of that name, the time was pinned) or DuckDB refuses the text."""
    if _spliced_names(state) is None:
        return None
    spliced = {id(ref.node) for ref in state.spliced}
    # Only the columns the statement may read (binding a row of 16 typed NULLs costs 1.7 ms, of
    # one 0.5); every column where a reference is renamed by position or expanded by a star.
    used = used_columns(state.statement, state.refs, [[c for c, _ in r.columns] for r in state.read])
    names: dict[str, list[tuple[str, str]]] = {}
    for ref, registration, cols in zip(state.refs, state.read, used, strict=True):
        if id(ref.node) in spliced:
            wanted = list(registration.columns)
            if cols is not None and not ref.node.get(Key.COLUMN_NAME_ALIAS):
                wanted = [(c, t) for c, t in wanted if c in cols]
            name = str(ref.node.get(Key.TABLE_NAME) or "").lower()
            names[name] = list(dict.fromkeys([*names.get(name, []), *wanted]))
    ctes = ", ".join(
        f"{quote_name(name)} AS (SELECT "
        + (", ".join(f"CAST(NULL AS {kind}) AS {quote_name(c)}" for c, kind in columns) or "NULL")
        + " LIMIT 0)"
        for name, columns in names.items()
    )
    try:
        return list(state.con.sql(f"WITH {ctes} {state.query}", params=state.params).columns)
    except duckdb.Error:
        return None


# The planning passes, in order (sqlglot's optimizer ``RULES`` is the model): each reads and sets
# attributes of the ``_State``, and returns the plan when it settles it.
PASSES: tuple[Callable[[_State], QueryPlan | None], ...] = (
    index_statement,
    registered_tables,
    one_statement,
    pinned_time,
    references,
    splice_check,
    answerable,
    translation,
    column_use,
    dynamic_pruning,
    row_selection,
    count_answer,
    glob_or_splice,
    output_names,
)


def _direct(table: TablePlan, registration: Registration, pruned: Pruned) -> TablePlan:
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
            hive and prune(registration.table, And(*hive)).kept == result.kept
        ):
            why = "only hive partition filters pruned, and DuckDB prunes hive partitions itself"
    if not why and (choice := _scan_chosen(table)) is not None:
        why = (
            f"a plain scan is estimated cheaper than the {result.kept} kept files named one by one "
            f"({choice.scan_ms:,.1f} vs {choice.pruning_ms:,.1f} ms)"
        )
    return dataclasses.replace(table, direct=why, glob=uniform_glob(registration) or "") if why else table


def _scan_chosen(table: TablePlan) -> Choice | None:
    """The secondary index's cost choice, when it found a plain scan of every file cheaper than
    both the index and reading the files pruning kept."""
    selection = table.selection
    if selection is None or selection.use.used:
        return None
    choice = selection.use.choice
    return choice if choice is not None and choice.path == "scan" else None


def _projected(table: TablePlan, registration: Registration, used: tuple[str, ...] | None) -> TablePlan:
    """``table`` reading only the ``used`` columns of a merge-on-read table (None: every one), which
    is spliced in even where the index keeps every slice: the registered view reads every column
    (DuckDB pushes no projection into its stream); a table of parquet files is left as it is
    (DuckDB's scan of them reads only the columns the query uses)."""
    if registration.merged is None or used is None or table.answer:
        return table
    return dataclasses.replace(table, columns=used)


def _derive(
    con: duckdb.DuckDBPyConnection,
    refs: Sequence[TableRef],
    read: Sequence[Registration],
    translated: Sequence[Translated],
    columns: Sequence[tuple[str, ...] | None],
    cte_names: set[str],
    planner: Planner,
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
        return table_rows(con, other.node)

    def read_of(other: TableRef) -> str:
        k = by_ref.get(id(other))
        result = None if k is None else translated[k].result
        if k is None or result is None or not result.index_used or result.kept >= result.total:
            return ""  # the registered view, every file
        table = TablePlan(read[k].name, other.alias, result.kept, result.total, (), (), result)
        # Its keys query names only columns of the statement: those the reference uses.
        return kept_read(read[k], _projected(table, read[k], columns[k]))

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
    registration_of: Callable[[dict[str, Any]], Registration | None],
) -> dict[tuple[str, str, str], dict[str, str]]:
    """The columns of the tables and views of DuckDB's own a statement reads, when it also reads a
    registered table: their unqualified columns then belong to them, not to an outer query.

    Read from DuckDB's catalog (``duckdb_columns()``, one query, nothing bound), looking a name up
    as DuckDB does: temporary objects first, then the current schema. A wrong guess costs pruning,
    never an answer: a column two tables seem to have is no one's, and a join key is read by
    DuckDB's own binding of the name."""
    tables = [n for n in walk_dicts(statement) if is_base_table(n)]
    if not any(registration_of(n) is not None for n in tables):
        return {}
    keys = {table_key(n) for n in tables if registration_of(n) is None}
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
    names = {n.lower() for n in live_tables(con)}
    if statement.table.lower() not in names:
        if isinstance(statement, CreateIndex) and statement.table.lower() in _duckdb_tables(con):
            return None
        open_registered(con, statement.table)  # raises, naming the registered tables
    kind = type(statement).__name__
    note = f"index statement ({kind}) on the registered table {statement.table}"
    return QueryPlan(query, query, (), note, None, con, statement)


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
    return not words & {n.lower() for n in live_tables(con)}


def table_rows(con: duckdb.DuckDBPyConnection, node: dict[str, Any]) -> float | None:
    """DuckDB's estimate of the rows of its own table a BASE_TABLE node names (None: not a table
    of DuckDB's, e.g. a view), looked up as DuckDB resolves names (temporary ones first)."""
    catalog, schema, name = table_key(node)
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
