"""DuckDB reads of merge-on-read tables: Arrow streams of merged file slices
(``index_store.merged.MergedSlices``).

DuckDB reads an object registered with ``con.register`` that has ``__arrow_c_stream__`` by asking it
for a new stream at every scan, and pushes neither projections nor filters into it. So:

- ``register`` registers a stream of the table's live slices, every column, under a hidden name
  (``__hudi_index_mor_<name>``) and makes the view a read of it: each query lists the slices anew
  (a delta commit is seen by the next query) and merges them;
- a reference the planner rewrites reads a stream of only the columns the query uses
  (``adapters.duckdb.columns``): of its kept slices when pruned, else of the live slices (listed at
  each scan, as the view). A base-file-only slice then reads only those parquet columns; hudi-rs
  merges a slice with log files with the columns merging needs and projects. The subquery gives the
  other columns as typed NULLs, so its columns stay the registered ones (order, ``AS x(a, b)``);
- such a stream is registered under a name derived from its slices and columns (the same read, the
  same name): a relation planned earlier keeps reading what it was planned with, whatever is planned
  after it. The most recent ``_KEPT`` such names stay registered per table; a relation older than
  that fails with DuckDB's "table does not exist", never with rows of another plan.

The query filters the merged rows (pruning only chooses slices).
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from adapters.duckdb.splice import quote_name
from index_store import IndexedTable, PruneResult
from index_store.merged import MergedSlices, QueryType, kept_slices, query_type_of
from index_store.merged.schema import MergedLayout
from index_store.tables.base import FileSlice

__all__ = ["MergedView"]

_KEPT = 64  # streams of kept slices left registered per table


class MergedView:
    """The hidden stream a registered merge-on-read table's view reads, and the streams of the
    slices its pruned references keep."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, name: str, table: IndexedTable, query_type: QueryType
    ) -> None:
        self.table = table
        self.query_type = query_type_of(query_type)
        self.layout = MergedLayout.of(table.reader)
        self.hidden = f"__hudi_index_mor_{_safe(name)}"
        self._con = weakref.ref(con)
        self._kept: OrderedDict[str, None] = OrderedDict()
        live = MergedSlices(self.layout, table.reader.file_slices, query_type=self.query_type)
        con.register(self.hidden, live)

    def view_sql(self) -> str:
        """The view's query: the live stream."""
        return f"SELECT * FROM {quote_name(self.hidden)}"

    def kept_read(
        self,
        result: PruneResult | None,
        columns: Sequence[tuple[str, str]],
        read: Sequence[str] | None = None,
        *,
        live: bool = False,
    ) -> str:
        """A subquery reading the slices ``result`` keeps (None: none; ``live``: every slice, listed
        at each scan as the view does) merged, with the registered ``columns`` (name, DuckDB type).

        ``read``: the only columns the query uses (None: every one). The stream is asked for those
        alone, and the subquery gives the others as typed NULLs, so its columns (their order, a
        ``t AS x(a, b)`` renaming) stay the registered ones."""
        wanted = None if read is None else set(read)
        projection = ", ".join(
            f"CAST({quote_name(c)} AS {t}) AS {quote_name(c)}"
            if wanted is None or c in wanted
            else f"CAST(NULL AS {t}) AS {quote_name(c)}"
            for c, t in columns
        )
        if live:
            slices: Sequence[FileSlice] | None = None
        else:
            slices = [] if result is None else kept_slices(self.table, result)
            if not slices:
                nulls = ", ".join(f"CAST(NULL AS {t}) AS {quote_name(c)}" for c, t in columns)
                return f"(SELECT {nulls} WHERE false)"
        if read is None:
            streamed = None
        else:
            # DuckDB refuses a stream of no column: a count reads the one that costs least.
            streamed = [c for c, _ in columns if c in wanted] if wanted else [self._cheapest()]
        return f"(SELECT {projection} FROM {quote_name(self._register(slices, streamed))})"

    def _register(self, slices: Sequence[FileSlice] | None, columns: Sequence[str] | None) -> str:
        """The name of a stream of ``slices`` (None: the live ones), only ``columns`` (None: every
        one), registered on the connection under a name derived from both: the same read, the same
        name, and a plan's name never reads another plan's slices or columns."""
        con = self._connection()
        digest = hashlib.sha1(self.hidden.encode())
        digest.update(b"\0".join(c.encode() for c in columns) if columns is not None else b"*")
        digest.update(b"\n")
        for s in slices if slices is not None else ():
            digest.update(b"\0".join(f.path.encode() for f in s.files) + b"\n")
        kind = "live" if slices is None else "kept"
        name = f"{self.hidden}_{kind}_{digest.hexdigest()[:16]}"
        if name in self._kept:
            self._kept.move_to_end(name)
            return name
        listed = self.table.reader.file_slices if slices is None else list(slices)
        con.register(name, MergedSlices(self.layout, listed, columns, query_type=self.query_type))
        self._kept[name] = None
        while len(self._kept) > _KEPT:
            oldest, _ = self._kept.popitem(last=False)
            con.unregister(oldest)
        return name

    def _cheapest(self) -> str:
        """The column a read of row counts asks for: a partition column the folders hold (read from
        no file), else the first fixed-width one, else the first."""
        schema = self.layout.schema
        if self.layout.folder_columns:
            return self.layout.folder_columns[0]
        fixed = [f.name for f in schema if pa.types.is_primitive(f.type) and not pa.types.is_boolean(f.type)]
        return fixed[0] if fixed else schema.names[0]

    def drop(self, con: duckdb.DuckDBPyConnection, keep: str | None = None) -> None:
        """Unregister the hidden streams (the view itself is dropped by ``unregister``), but
        ``keep``: the live stream a new registration of the same name just put in its place."""
        for name in [self.hidden, *self._kept]:
            if name != keep:
                con.unregister(name)
        self._kept.clear()

    def _connection(self) -> duckdb.DuckDBPyConnection:
        con = self._con()
        if con is None:  # pragma: no cover - a registration lives no longer than its connection
            raise RuntimeError("the DuckDB connection of this registration was closed")
        return con


def _safe(name: str) -> str:
    """``name`` as part of an identifier, distinct for distinct names (case aside, as DuckDB's)."""
    readable = "".join(c if c.isalnum() else "_" for c in name.lower())
    return f"{readable}_{hashlib.sha1(name.lower().encode()).hexdigest()[:8]}"
