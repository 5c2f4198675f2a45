"""Secondary key to rows with Hudi's own indexes: ``=`` / ``IN`` values -> record keys (the
``secondary_index_<name>`` partition) -> file groups (``record_index``) -> the rows of only those
file slices, filtered by the predicate (and by record key where keys are proven unique).

``count`` and ``exists`` come from the record keys alone when that is exact: every conjunct of the
predicate answered by a usable secondary index (``secondary.usable_indexes``: in step, built,
keys of a proven form) and the table's keys proven unique (``secondary.keys_unique``), so each
key is one live row. Otherwise the candidate slices are read. A key the record index cannot place
makes the lookup answer nothing (``None``): the caller reads what pruning keeps instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import Expression
from hudi_expr.expressions import And, BoundReference, EqualTo, In
from index_store.hudi_source.secondary import (
    KEY_COLUMN,
    PlacedKeys,
    file_groups,
    keys_unique,
    may_hold_keys,
    place_values,
    usable_indexes,
)
from index_store.hudi_source.view import SOURCE_NAME, HudiIndexStatus, MetadataState
from index_store.merged.read import MergedSlices, QueryType
from index_store.merged.rows import columns_to_read
from index_store.merged.schema import MergedLayout
from index_store.secondary.api import IndexStatus, RowSelection
from index_store.secondary.select import FileRows, IndexUse
from index_store.tables.base import FileSlice, TableReader

if TYPE_CHECKING:
    from index_store.table import PruneResult

__all__ = [
    "SecondaryRows",
    "count_rows",
    "exists_row",
    "index_list",
    "read_rows",
    "row_masks",
    "secondary_rows",
    "selection",
]


@dataclass(frozen=True)
class SecondaryRows:
    """What Hudi's secondary indexes say of a predicate's rows."""

    partitions: tuple[str, ...]  # the secondary_index_<name> partitions that answered
    keys: pa.StringArray  # record keys of the rows that may match (all answered leaves agree)
    slices: list[FileSlice]  # the live slices that may hold them
    total_slices: int
    exact: bool  # the matching rows are exactly one per key in ``keys``
    unique: bool  # the table's keys are unique: rows may be told apart by key
    notes: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return f"{SOURCE_NAME} ({', '.join(self.partitions)})"

    def reason(self) -> str:
        """What the lookup found and how rows are told, after "<source> used: "."""
        how = (
            "count/exists from the index alone (keys unique, every condition indexed)"
            if self.exact
            else "rows checked by reading the candidate slices"
            + ("" if self.unique else " (keys not proven unique: files whose key range may hold one kept)")
        )
        found = f"{len(self.keys)} record keys, file slices read: {len(self.slices)} of {self.total_slices}"
        return "\n".join([f"{found}; {how}", *self.notes])

    def explain(self) -> str:
        return f"{self.source} used: {self.reason()}"


def secondary_rows(
    state: MetadataState, reader: TableReader, predicate: Expression, schema: pa.Schema
) -> SecondaryRows | None:
    """The rows Hudi's secondary indexes select for ``predicate`` (its ``=`` / ``IN`` conjuncts on
    indexed columns), or None when no usable index answers any of them."""
    if state.mdt is None:
        return None
    bound = predicate.bind(schema)
    conjuncts = bound.operands() if isinstance(bound, And) else [bound]
    usable, unusable = usable_indexes(state, schema)
    referenced = set(bound.references())
    notes = [note for column, note in unusable.items() if column in referenced]
    answerable = [
        (leaf, index)
        for leaf in conjuncts
        if isinstance(leaf, EqualTo | In)
        and isinstance(leaf.term, BoundReference)
        and leaf.term.path == (leaf.term.name,)
        and (index := usable.get(leaf.term.name)) is not None
    ]
    if not answerable:
        return None
    unique = keys_unique(state, reader, schema)  # first: it may decode the record index lookups use
    placed: PlacedKeys | None = None
    partitions: list[str] = []
    for leaf, index in answerable:
        values = (
            leaf.values if isinstance(leaf, In) else pa.array([leaf.literal], schema.field(index.column).type)
        )
        found = place_values(state, index.partition, index.form.keys(values))
        if found is None:
            where = f"{SOURCE_NAME} ({index.partition})"
            notes.append(f"{where}: a record key the record index cannot place (not used)")
            continue
        placed = found if placed is None else placed.restrict(found)
        partitions.append(index.partition)
    if placed is None:
        return None
    all_slices = reader.file_slices()
    wanted = set(pc.unique(placed.groups).to_pylist())
    if not unique and len(placed.keys):
        listing = reader.listing()
        guard = may_hold_keys(state, listing.paths, placed.keys, schema)
        wanted |= set(file_groups(reader, listing.paths).filter(pa.array(guard)).to_pylist())
    slices = [s for s in all_slices if f"{s.partition}\0{s.file_id}" in wanted]
    exact = unique and len(partitions) == len(conjuncts)
    return SecondaryRows(tuple(partitions), placed.keys, slices, len(all_slices), exact, unique, tuple(notes))


def _planned(
    reader: TableReader, found: SecondaryRows, expr: Expression, columns: Sequence[str] | None
) -> tuple[MergedLayout, Expression, list[str], list[str]]:
    layout = MergedLayout.of(reader)
    by_key = [KEY_COLUMN] if found.unique and KEY_COLUMN in layout.schema.names else []
    bound, wanted, needed = columns_to_read(layout.schema, expr, columns, by_key)
    return layout, bound, wanted, needed


def _filtered(found: SecondaryRows, bound: Expression, table: pa.Table) -> pa.Table:
    """The rows of ``table`` ``bound`` is TRUE on (and, keys unique, whose key was looked up)."""
    mask = bound.to_pyarrow()
    rows = table.filter(mask)
    if found.unique and KEY_COLUMN in rows.column_names:
        rows = rows.filter(pc.is_in(rows[KEY_COLUMN], value_set=found.keys))
    return rows


def read_rows(
    reader: TableReader,
    found: SecondaryRows,
    expr: Expression,
    columns: Sequence[str] | None = None,
    query_type: QueryType = "snapshot",
) -> pa.Table:
    """The rows of ``found``'s slices where ``expr`` is TRUE, ``columns`` of them."""
    layout, bound, wanted, needed = _planned(reader, found, expr, columns)
    table = MergedSlices(layout, found.slices, needed, query_type=query_type).read_all()
    return _filtered(found, bound, table).select(wanted)


def count_rows(reader: TableReader, found: SecondaryRows, expr: Expression, query_type: QueryType) -> int:
    """How many rows ``expr`` is TRUE on: the number of keys when exact, else read."""
    if found.exact:
        return len(found.keys)
    return read_rows(reader, found, expr, [], query_type).num_rows


def exists_row(reader: TableReader, found: SecondaryRows, expr: Expression, query_type: QueryType) -> bool:
    """Whether ``expr`` is TRUE on a row: a key when exact, else slices read until one has a row."""
    if found.exact:
        return bool(len(found.keys))
    layout, bound, _, needed = _planned(reader, found, expr, [])
    stream = MergedSlices(layout, found.slices, needed, query_type=query_type).to_reader()
    return any(_filtered(found, bound, pa.Table.from_batches([b])).num_rows for b in stream)


def row_masks(
    reader: TableReader, found: SecondaryRows, expr: Expression
) -> list[tuple[str, int, np.ndarray]]:
    """Per candidate base file (a table whose files hold their rows whole), its path, row count
    and the mask of its rows ``expr`` is TRUE on."""
    layout, bound, _, needed = _planned(reader, found, expr, [])
    out = []
    for piece in found.slices:
        assert piece.base is not None and not piece.logs
        table = MergedSlices(layout, [piece], needed).read_all()
        mask = _mask(found, bound, table)
        out.append((piece.base.path, table.num_rows, mask))
    return out


def _mask(found: SecondaryRows, bound: Expression, table: pa.Table) -> np.ndarray:
    """Per row of ``table``, whether it is kept by ``_filtered``."""
    marked = table.append_column("__row", pa.array(np.arange(table.num_rows), pa.int64()))
    kept = _filtered(found, bound, marked)["__row"].to_numpy()
    mask = np.zeros(table.num_rows, dtype=bool)
    mask[kept] = True
    return mask


def selection(
    reader: TableReader,
    found: SecondaryRows | None,
    expr: Expression,
    prune: Callable[[Expression], PruneResult],
) -> RowSelection:
    """``select`` of a table whose files hold their rows whole, from Hudi's metadata table: the
    exact rows of the candidate files when a secondary index answers (read to find them), else
    every row of the files ``prune`` keeps."""
    listing = reader.listing()
    values = {f.path: f.partition_values for f in listing.files}
    prefix = reader.root.rstrip(os.sep) + os.sep
    if found is None:
        kept = prune(expr).files
        rels = [f[len(prefix) :] if f.startswith(prefix) else f for f in kept]
        return RowSelection(
            files=list(kept),
            row_counts=[pq.ParquetFile(f).metadata.num_rows for f in kept],
            rows=[FileRows(None, False)] * len(kept),
            use=IndexUse(
                False, "no usable Hudi secondary index answers a condition of it", source=SOURCE_NAME
            ),
            total_files=len(listing.files),
            partition_values=[values.get(r, {}) for r in rels],
        )
    masks = row_masks(reader, found, expr)
    return RowSelection(
        files=[prefix + path for path, _, _ in masks],
        row_counts=[n for _, n, _ in masks],
        rows=[FileRows(mask, True) for _, _, mask in masks],
        use=IndexUse(True, found.reason(), indexed_leaves=len(found.partitions), source=found.source),
        total_files=len(listing.files),
        partition_values=[values.get(path, {}) for path, _, _ in masks],
    )


def index_list(statuses: Sequence[HudiIndexStatus], live_files: int) -> list[IndexStatus]:
    """Hudi's secondary indexes as ``IndexedTable.indexes`` lists indexes: one built and usable
    here covers every live file, any other none."""
    return [
        IndexStatus(s.name, s.index_type, s.columns, live_files if s.used_for else 0, live_files, 0)
        for s in statuses
        if s.index_type == "secondary_index"
    ]
