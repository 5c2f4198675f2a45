"""``IndexedTable.read``, ``count`` and ``exists`` of a merge-on-read table: the kept file slices
merged (``read.py``), then filtered by the whole predicate.

The predicate is bound to the merged schema, not to the index's (which a table with no index yet
does not have): pruning only chooses slices, and the rows are decided here, after merging, by the
predicate's own row semantics (``to_pyarrow``). No secondary index selects rows: positions in a
base file say nothing of the rows its log files update or delete.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from hudi_expr import Expression
from index_store.builder import top_field
from index_store.errors import IndexDefinitionError
from index_store.merged.kept import pruned_slices
from index_store.merged.read import MergedSlices, QueryType, query_type_of
from index_store.merged.schema import MergedLayout
from index_store.tables.base import FileSlice

if TYPE_CHECKING:
    from index_store.table import IndexedTable

__all__ = ["columns_to_read", "count_rows", "exists_row", "read_rows"]


def read_rows(
    table: IndexedTable,
    expr: Expression,
    columns: Sequence[str] | None = None,
    query_type: QueryType = "snapshot",
) -> pa.Table:
    """The merged rows where ``expr`` is TRUE, ``columns`` of them (default: every column)."""
    return _filtered(table, expr, columns, query_type_of(query_type))


def count_rows(table: IndexedTable, expr: Expression, query_type: QueryType = "snapshot") -> int:
    """How many merged rows ``expr`` is TRUE on."""
    return _filtered(table, expr, [], query_type_of(query_type)).num_rows


def exists_row(table: IndexedTable, expr: Expression, query_type: QueryType = "snapshot") -> bool:
    """Whether ``expr`` is TRUE on a merged row (slices are read until one has such a row)."""
    layout, bound, needed, slices = _plan(table, expr, [], query_type_of(query_type))
    reader = MergedSlices(layout, slices, needed, query_type=query_type).to_reader()
    condition = bound.to_pyarrow()
    return any(pa.Table.from_batches([b]).filter(condition).num_rows for b in reader)


def _filtered(
    table: IndexedTable, expr: Expression, columns: Sequence[str] | None, query_type: QueryType
) -> pa.Table:
    layout, bound, needed, slices = _plan(table, expr, columns, query_type)
    wanted = list(layout.schema.names) if columns is None else list(columns)
    rows = MergedSlices(layout, slices, needed, query_type=query_type).read_all()
    return rows.filter(bound.to_pyarrow()).select(wanted)


def _plan(
    table: IndexedTable, expr: Expression, columns: Sequence[str] | None, query_type: QueryType
) -> tuple[MergedLayout, Expression, list[str], list[FileSlice]]:
    """The layout, the bound predicate, the columns to read (asked for, then those the predicate
    reads) and the slices pruning keeps."""
    slices = pruned_slices(table, expr)
    layout = MergedLayout.of(table.reader)
    bound, _, needed = columns_to_read(layout.schema, expr, columns)
    return layout, bound, needed, slices


def columns_to_read(
    schema: pa.Schema, expr: Expression, columns: Sequence[str] | None, extra: Sequence[str] = ()
) -> tuple[Expression, list[str], list[str]]:
    """``expr`` bound to the merged ``schema``; the columns asked for (every one for None), each
    checked to exist; and the columns to read: those, then the ones the predicate reads, then
    ``extra``."""
    wanted = list(schema.names) if columns is None else list(columns)
    for c in wanted:
        if c not in schema.names:
            raise IndexDefinitionError(f"no column {c!r} in the table (columns: {', '.join(schema.names)})")
    bound = expr.bind(schema)
    needed = list(dict.fromkeys([*wanted, *(top_field(schema, c) or c for c in bound.references()), *extra]))
    return bound, wanted, needed
