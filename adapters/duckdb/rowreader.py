"""DuckDB as ``IndexedTable``'s reader of selected rows (``index_store.secondary.read.RowReader``).

pyarrow decodes every row group holding a selected row; DuckDB's ``read_parquet(...,
file_row_number = true)`` filtered on the positions skips row groups without one and, inside the
others, decodes only the 2,048-row vectors holding one (``adapters.duckdb.rows`` plans the
filters). All of a selection's reads run as one query, which DuckDB spreads over its threads.
Importing ``adapters.duckdb`` registers it (``register_row_reader``), so ``t.read``/``count``/
``exists`` use it from then on; tables with partition values in their paths keep pyarrow's reader
(it adds them as the index types them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from adapters.duckdb.rows import BLOCK, ROW_COLUMN, Reads, plan_reads
from adapters.duckdb.splice import quote_name
from hudi_expr import Expression
from hudi_expr.printer import to_sql
from index_store import RowSelection
from index_store.secondary.read import PyarrowRows, ReadJob, conform
from index_store.secondary.select import FileRows, IndexUse

__all__ = ["DuckDBRows"]

# Without union_by_name (which reads every footer first, 60% slower on 187 small files): a file
# lacking a column is an error, and the pyarrow reader reads instead.
_OPTIONS = "can_have_nan = true"
_FILE = "filename"  # the column ``read_parquet(..., filename = true)`` adds
_FILES = "hudi_files_"  # the parameters holding each read's file list
_MACROS = frozenset({"contains_term", "not_contains_term"})  # leaves printed as register_macros' calls


class DuckDBRows:
    """Selected rows through DuckDB; pyarrow's reader where DuckDB cannot read them as asked."""

    name = "duckdb"

    def __init__(self) -> None:
        self._local = threading.local()
        self._fallback = PyarrowRows()

    def _connection(self) -> duckdb.DuckDBPyConnection:

        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = duckdb.connect()
        return con

    def read(
        self, jobs: Sequence[ReadJob], columns: Sequence[str], schema: pa.Schema, predicate: Expression
    ) -> tuple[pa.Table, int]:
        if any(j.partition_values for j in jobs) or {ROW_COLUMN, _FILE} & set(schema.names):
            return self._fallback.read(jobs, columns, schema, predicate)
        wanted = pa.schema([schema.field(c) for c in columns])
        # Word tests print as macros whose binding costs DuckDB 30-50 ms a query: with those, the
        # rows read are kept by their positions (exact selections) or the predicate in Arrow.
        in_sql = not any(leaf.op in _MACROS for leaf in predicate.leaves())
        reads = plan_reads(_selection(jobs))
        try:
            table = self._query(reads, columns, to_sql(predicate) if in_sql else None)
        except duckdb.Error:
            return self._fallback.read(jobs, columns, schema, predicate)
        if not in_sql:
            table = _kept(table, jobs, predicate)
        # Reads may keep more rows than were selected (files sharing a position list, files read
        # whole): the predicate decides every row, in SQL (``str(expr)`` is SQL meaning what the
        # predicate means; the property tests hold it to DuckDB as the oracle), else as above.
        return conform(table, wanted, {}), _decoded(jobs, reads)

    def _query(self, reads: Reads, columns: Sequence[str], where: str | None) -> pa.Table:
        """One query: per read of ``plan_reads``, its rows filtered by ``where``, which DuckDB pushes
        into the scan (the other columns are decoded around the rows that pass); without ``where``,
        with each row's file and position (``_FILE``, ``ROW_COLUMN``). Each read's file list is a
        parameter: DuckDB parses and binds a list of 567 paths written into the text in 10 ms, given
        as a parameter in 2 (and the relation binds the text twice: for its schema, then to run)."""
        projection = ", ".join(quote_name(c) for c in columns)
        options = _OPTIONS if where is not None else f"{_FILE} = true, {_OPTIONS}"
        if where is None:
            projection += f", {_FILE}, {ROW_COLUMN}"
        texts = []
        files: dict[str, list[str]] = {}
        for i, read in enumerate(reads.reads):
            tests = [] if where is None else [f"({where})"]
            if read.condition is not None:
                tests.insert(0, f"({read.condition})")
            numbered = read.condition is not None or where is None
            name = f"{_FILES}{i}"
            files[name] = list(read.files)
            read_options = f"{ROW_COLUMN} = true, {options}" if numbered else options
            where_text = f" WHERE {' AND '.join(tests)}" if tests else ""
            texts.append(f"SELECT {projection} FROM read_parquet(${name}, {read_options}){where_text}")
        return self._connection().sql(" UNION ALL ".join(texts), params=files).to_arrow_table()

    def decoded(self, jobs: Sequence[ReadJob]) -> int:
        """Rows in the vectors holding selected rows (every row of a file read whole)."""
        return _decoded(jobs, plan_reads(_selection(jobs)))


def _decoded(jobs: Sequence[ReadJob], reads: Reads) -> int:
    """``DuckDBRows.decoded`` of ``jobs`` read as ``reads`` (their ``plan_reads``)."""
    total = 0
    by_path = {j.path: j for j in jobs}
    for read in reads.reads:
        for path in read.files:
            job = by_path[path]
            if read.condition is None or job.positions is None:
                total += job.row_count
            else:
                blocks = len(np.unique(job.positions // BLOCK))
                total += min(job.row_count, blocks * BLOCK)
    return total


def _kept(table: pa.Table, jobs: Sequence[ReadJob], predicate: Expression) -> pa.Table:
    """The rows of ``table`` (tagged with file and position) that the jobs select: the selected
    positions of exact jobs (every row of an exact job without positions), and the rows of
    inexact jobs where ``predicate`` is TRUE."""
    paths = pa.array([j.path for j in jobs], pa.string())
    file_no = pc.index_in(table[_FILE].cast(pa.string()), value_set=paths).to_numpy(zero_copy_only=False)
    position = table[ROW_COLUMN].to_numpy().astype(np.int64)
    exact = np.array([j.exact for j in jobs], dtype=bool)
    every = np.array([j.exact and j.positions is None for j in jobs], dtype=bool)
    wanted = [
        (i << 32) + j.positions.astype(np.int64)
        for i, j in enumerate(jobs)
        if j.exact and j.positions is not None
    ]
    keys = (file_no.astype(np.int64) << 32) + position
    keep = every[file_no] | (np.isin(keys, np.concatenate(wanted)) if wanted else False)
    out = table.filter(pa.array(keep & exact[file_no]))
    if not exact.all():
        out = pa.concat_tables([out, table.filter(pa.array(~exact[file_no])).filter(predicate.to_pyarrow())])
    return out.drop_columns([_FILE, ROW_COLUMN])


def _selection(jobs: Sequence[ReadJob]) -> RowSelection:
    """The jobs as the selection ``plan_reads`` plans reads of."""
    rows = []
    for j in jobs:
        if j.positions is None:
            rows.append(FileRows(None, j.exact))
        else:
            mask = np.zeros(j.row_count, dtype=bool)
            mask[j.positions] = True
            rows.append(FileRows(mask, j.exact))
    return RowSelection(
        [j.path for j in jobs],
        [j.row_count for j in jobs],
        rows,
        IndexUse(True, "selected rows"),
        len(jobs),
        [dict(j.partition_values) for j in jobs],
    )
