"""Reading exactly the selected rows of base files, through a ``RowReader``.

The built-in reader is pyarrow's: parquet readers in pyarrow read whole row groups (no page
skipping from Python), so a selection reads the row groups that hold at least one selected row,
takes the rows, and applies the residual filter when the selection is a superset (candidates of a
term index, or leaves no index answers). An engine that reads rows by position faster registers
its reader (``register_row_reader``; the DuckDB adapter does on import, with ``read_parquet(...,
file_row_number = true)`` filtered on the positions, which decodes only the vectors holding
them); ``row_reader()`` is the last registered. Partition values, which hive-partitioned files do
not store, are added as constant columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import Expression
from index_store.errors import TableFormatError

__all__ = [
    "ReadJob",
    "RowReader",
    "conform",
    "read_file_rows",
    "register_row_reader",
    "row_groups_of",
    "row_reader",
]


@dataclass(frozen=True)
class ReadJob:
    """One file's rows to read: ``positions`` (ascending; None: every row) of its ``row_count``."""

    path: str
    row_count: int
    positions: np.ndarray | None
    partition_values: Mapping[str, Any]
    exact: bool  # the positions are exactly the matching rows (no residual filter needed)


class RowReader(Protocol):
    """Reads selected rows of files. ``name`` picks its cost constants (``cost.costs_for``)."""

    name: str

    def read(
        self, jobs: Sequence[ReadJob], columns: Sequence[str], schema: pa.Schema, predicate: Expression
    ) -> tuple[pa.Table, int]:
        """``columns`` (of ``schema``) of the jobs' rows, inexact jobs' rows filtered by
        ``predicate`` (bound to ``schema``), and how many rows were decoded (per column, at most)."""
        ...

    def decoded(self, jobs: Sequence[ReadJob]) -> int:
        """How many rows (per column) reading ``jobs`` decodes, without reading them."""
        ...


class PyarrowRows:
    """The built-in reader: the row groups holding selected rows, a few files at once."""

    name = "pyarrow"

    def read(
        self, jobs: Sequence[ReadJob], columns: Sequence[str], schema: pa.Schema, predicate: Expression
    ) -> tuple[pa.Table, int]:
        from index_store.secondary.select import worker_pool

        residual = predicate.to_pyarrow()

        def one(job: ReadJob) -> pa.Table:
            filtered = None if job.exact else residual
            return read_file_rows(job.path, job.positions, columns, job.partition_values, schema, filtered)

        # pyarrow releases the GIL while it reads and decodes: a few files at once.
        parts = [one(j) for j in jobs] if len(jobs) <= 1 else list(worker_pool().map(one, jobs))
        out_schema = pa.schema([schema.field(c) for c in columns])
        table = pa.concat_tables(parts) if parts else out_schema.empty_table()
        return table, self.decoded(jobs)

    def decoded(self, jobs: Sequence[ReadJob]) -> int:
        total = 0
        for job in jobs:
            if job.positions is None:
                total += job.row_count
            elif len(job.positions):
                try:
                    md = pq.ParquetFile(job.path).metadata
                except (OSError, pa.ArrowException):
                    total += job.row_count
                    continue
                groups, _ = row_groups_of(md, job.positions)
                total += sum(md.row_group(g).num_rows for g in groups)
        return total


_READERS: list[RowReader] = [PyarrowRows()]


def register_row_reader(reader: RowReader) -> None:
    """Make ``reader`` the one ``IndexedTable.read``/``count``/``exists`` read selected rows with
    (an engine adapter registers its own; the last registered is used)."""
    _READERS[:] = [r for r in _READERS if r.name != reader.name] + [reader]


def row_reader() -> RowReader:
    """The reader of selected rows: the last registered (pyarrow's when none was)."""
    return _READERS[-1]


def row_groups_of(md: pq.FileMetaData, positions: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The row groups holding ``positions`` (ascending), and the positions within what they read."""
    sizes = np.array([md.row_group(g).num_rows for g in range(md.num_row_groups)], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else np.zeros(0, dtype=np.int64)
    group = np.searchsorted(starts, positions, side="right") - 1
    groups = np.unique(group)  # positions are sorted, so this is cheap and ordered
    read_start = np.zeros(len(sizes), dtype=np.int64)
    read_start[groups] = np.concatenate([[0], np.cumsum(sizes[groups])[:-1]])
    local = read_start[group] + (positions.astype(np.int64) - starts[group])
    return [int(g) for g in groups], local


def read_file_rows(
    path: str,
    positions: np.ndarray | None,
    columns: Sequence[str],
    partition_values: Mapping[str, Any],
    schema: pa.Schema,
    residual: pc.Expression | None,
) -> pa.Table:
    """``columns`` (of the table ``schema``) of the selected rows of one file, filtered by
    ``residual`` when given; ``positions`` None reads every row."""
    try:
        pf = pq.ParquetFile(path)
        present = set(pf.schema_arrow.names)
        stored = [c for c in columns if c in present and c not in partition_values]
        if positions is None:
            table = pf.read(columns=stored)
        elif not len(positions):
            table = pf.schema_arrow.empty_table().select(stored)
        else:
            groups, local = row_groups_of(pf.metadata, positions)
            table = pf.read_row_groups(groups, columns=stored).take(pa.array(local))
    except FileNotFoundError:
        raise TableFormatError(f"data file {path} disappeared while reading; run sync") from None
    except (pa.ArrowException, OSError) as exc:
        raise TableFormatError(f"data file {path} is not readable parquet: {exc}") from None
    table = conform(table, pa.schema([schema.field(c) for c in columns]), partition_values)
    return table.filter(residual) if residual is not None else table


def conform(table: pa.Table, schema: pa.Schema, partition_values: Mapping[str, Any]) -> pa.Table:
    """``table`` with exactly ``schema``'s columns and types: partition values as constants, columns
    the file lacks (written before they existed) as nulls."""
    n = len(table)
    arrays = []
    for f in schema:
        if f.name in partition_values:
            arrays.append(pa.repeat(pa.scalar(partition_values[f.name], f.type), n))
        elif f.name in table.column_names:
            column = table[f.name]
            arrays.append(column if column.type == f.type else column.cast(f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
