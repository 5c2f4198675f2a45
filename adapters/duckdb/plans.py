"""What planning returns: ``TablePlan``, how one reference to a registered table is read, and
``QueryPlan``, the query DuckDB runs for the user's text."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import duckdb

from adapters.duckdb.registration import open_registered
from adapters.duckdb.rows import Reads
from index_store import (
    PruneResult,
    RowSelection,
)
from index_store.secondary.statements import IndexStatement, run_statement


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
    columns: tuple[str, ...] | None = None  # a merge-on-read read's columns (None: every one)
    # A one-row query read instead of any file: an EXISTS the index answered, by a row its filter keeps.
    constant: str = ""

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
        if self.direct and self.columns is not None:
            lines.append(f"  note: every slice read, listed at each scan as the view does: {self.direct}")
        elif self.direct:
            lines.append(f"  note: run by DuckDB directly: {self.direct}")
        if self.columns is not None:
            lines.append(f"  columns read: {', '.join(self.columns) or '(none: rows counted)'}")
        if self.glob:
            lines.append(f"  note: read as {self.glob} (every data file, no hidden one, at one depth)")
        lines += [f"  {text}" for text in (self.index, self.rows, self.answer) if text]
        return "\n".join(lines)


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
            return self.con.from_arrow(
                run_statement(self.statement, functools.partial(open_registered, self.con))
            )
        return self.con.sql(self.sql, params=self.params)

    def execute(self) -> duckdb.DuckDBPyConnection:
        """Run it as ``con.execute`` does: the result is fetched from what this returns (``fetchall``,
        ``arrow``...). Cheaper than ``relation()``, which DuckDB binds once more to type it."""
        if self.statement is not None:
            # On a cursor: its temporary name lives on the cursor, not on the user's connection.
            cursor = self.con.cursor()
            cursor.register(
                "index_statement", run_statement(self.statement, functools.partial(open_registered, self.con))
            )
            return cursor.execute("SELECT * FROM index_statement")
        return self.con.execute(self.sql, self.params)

    def __str__(self) -> str:
        lines = [str(t) for t in self.tables] or ["no registered table is read"]
        if self.note:
            lines.append(f"note: {self.note}")
        return "\n".join(lines)
