"""File slices of a merge-on-read table read merged: as one Arrow table (``read_slices``) or as an
Arrow stream made anew at each scan (``MergedSlices``).

Each slice is read one of three ways, all returning the table's merged schema (``MergedLayout``):

- a slice without log files (or any slice, read optimized) is its base file: pyarrow reads it, only
  the columns asked for. hudi-rs would return the same rows in the same schema, at a fixed cost of
  a few milliseconds per slice;
- a slice with log files is merged by hudi-rs's file group reader (``hudi_rs.SliceMerger``);
- a read-optimized read skips slices of log files only (they have no base file).

Slices are read on a thread pool, a few ahead of the one being returned (pyarrow and hudi-rs let go
of the GIL), and returned in the order given, in batches of at most 64 Ki rows.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any, Literal, cast

import pyarrow as pa
import pyarrow.parquet as pq

from index_store.data_files import reading_data_file
from index_store.merged.hudi_rs import SliceMerger
from index_store.merged.schema import MergedLayout, conform
from index_store.tables.base import FileSlice, TableReader
from index_store.tables.rows import reads_whole_files

__all__ = ["QUERY_TYPES", "MergedSlices", "QueryType", "needs_merge", "query_type_of", "read_slices"]

QueryType = Literal["snapshot", "read_optimized"]
QUERY_TYPES: tuple[QueryType, ...] = ("snapshot", "read_optimized")
_BATCH_ROWS = 64 * 1024
_AHEAD = 4  # slices read ahead of the one being returned


def needs_merge(reader: TableReader) -> bool:
    """Whether a table's rows are file slices merged (merge-on-read), not whole data files."""
    return not reads_whole_files(reader)


def query_type_of(value: str) -> QueryType:
    """``value`` as a ``QueryType``, or ``ValueError`` listing the ones there are."""
    if value not in QUERY_TYPES:
        raise ValueError(
            f"query_type must be 'snapshot' (merged rows) or 'read_optimized' (base files only), "
            f"not {value!r}"
        )
    return cast(QueryType, value)


def read_slices(
    layout: MergedLayout,
    slices: Sequence[FileSlice],
    columns: Sequence[str] | None = None,
    *,
    query_type: QueryType = "snapshot",
) -> pa.Table:
    """The merged rows of ``slices`` of the table ``layout`` describes, only ``columns`` (in that
    order) when given."""
    return MergedSlices(layout, slices, columns, query_type=query_type).read_all()


class MergedSlices:
    """An Arrow stream of file slices' merged rows (``__arrow_c_stream__``, ``__arrow_c_schema__``).

    ``slices`` is a list, or a function listing them: then each new stream lists them anew, so
    DuckDB, which asks a registered object for a new stream at every scan, reads the table as it is
    at each query. ``columns``: a projection of the table's merged schema."""

    def __init__(
        self,
        layout: MergedLayout,
        slices: Sequence[FileSlice] | Callable[[], Sequence[FileSlice]],
        columns: Sequence[str] | None = None,
        *,
        query_type: QueryType = "snapshot",
    ) -> None:
        self.layout = layout
        self.slices = slices
        self.query_type = query_type_of(query_type)
        names = layout.schema.names
        unknown = [c for c in columns or () if c not in names]
        if unknown:
            raise ValueError(f"no column {unknown[0]!r} in the table (columns: {', '.join(names)})")
        self.schema = (
            layout.schema if columns is None else pa.schema([layout.schema.field(c) for c in columns])
        )
        # What the files are asked for: the columns they may store (not the folder-only ones).
        self._stored = [c for c in self.schema.names if c not in layout.folder_columns]

    def __arrow_c_schema__(self) -> Any:
        return self.schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_reader(self) -> pa.RecordBatchReader:
        """A new stream of the slices' merged rows (listed now, when ``slices`` is a function)."""
        slices = list(self.slices() if callable(self.slices) else self.slices)
        return pa.RecordBatchReader.from_batches(self.schema, self._batches(slices))

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_reader()), schema=self.schema)

    def _batches(self, slices: list[FileSlice]) -> Iterator[pa.RecordBatch]:
        """Each slice's batches in order, the next few slices read meanwhile on the pool."""
        merger: list[SliceMerger] = []  # made on first need, after the slices were listed
        pool = _pool()
        ahead: deque[Future[list[pa.RecordBatch]]] = deque()
        todo = iter(slices)
        for file_slice in todo:
            ahead.append(pool.submit(self._read_slice, file_slice, merger))
            if len(ahead) >= _AHEAD:
                break
        try:
            while ahead:
                batches = ahead.popleft().result()
                following = next(todo, None)
                if following is not None:
                    ahead.append(pool.submit(self._read_slice, following, merger))
                yield from batches
        finally:
            for future in ahead:  # the reader stopped early (a LIMIT): drop what has not started
                future.cancel()

    def _read_slice(self, file_slice: FileSlice, merger: list[SliceMerger]) -> list[pa.RecordBatch]:
        base, logs = file_slice.base, file_slice.logs
        values = (base or logs[0]).partition_values
        if base is None and self.query_type == "read_optimized":
            return []
        if base is not None and (not logs or self.query_type == "read_optimized"):
            table = _read_parquet(os.path.join(self.layout.root, base.path), self._stored)
        else:
            if not merger:  # one reader per stream; a race makes two, which is harmless
                merger.append(SliceMerger(self.layout.root, self.layout.stored_schema))
            # hudi-rs projects its output, whose columns are the base file's.
            if base is not None:
                present = set(_footer(os.path.join(self.layout.root, base.path)).names)
            else:
                present = set(self.layout.stored_schema.names)
            table = pa.Table.from_batches(
                [merger[0].read(file_slice, [c for c in self._stored if c in present])]
            )
        if not table.num_rows:
            return []
        if not table.num_columns:  # no column asked for (a count): the rows alone
            return [pa.RecordBatch.from_struct_array(pa.nulls(table.num_rows, pa.struct([])))]
        return [conform(b, self.schema, values) for b in table.to_batches(max_chunksize=_BATCH_ROWS)]


def _read_parquet(path: str, columns: list[str]) -> pa.Table:
    """``columns`` of a base file, those it stores (with none stored, its row count alone)."""
    with _reading(path):
        pf = pq.ParquetFile(path)
        present = set(pf.schema_arrow.names)
        wanted = [c for c in columns if c in present]
        if wanted or not pf.metadata.num_rows:
            return pf.read(columns=wanted)
        return pa.table({"": pa.nulls(pf.metadata.num_rows)}).select([])


def _footer(path: str) -> pa.Schema:
    with _reading(path):
        return pq.ParquetFile(path).schema_arrow


def _reading(path: str) -> AbstractContextManager[None]:
    return reading_data_file(
        path, what="base file", doing="reading (a compaction and clean replaced it)", then="query again"
    )


_POOLS: list[ThreadPoolExecutor] = []


def _pool() -> ThreadPoolExecutor:
    """A thread pool kept for the process: a query of a few slices must not start threads."""
    if not _POOLS:
        workers = min(8, 2 * (os.cpu_count() or 2))
        _POOLS.append(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hudi-merge"))
    return _POOLS[0]
