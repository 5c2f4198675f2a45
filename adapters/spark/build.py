"""Index builds on Spark: the driver lists and commits, executors read the data files.

``build_index`` runs ``IndexedTable.build`` with its stats computation swapped for a Spark job:
the live files are cut into groups (in listing order), one task per group runs the local builder
(``index_store.builder``: footers, NaN counts, bloom filters) and the driver merges the groups'
``BuiltFiles`` back in order and commits exactly as a local build does. So the index is the same,
byte for byte in content, as ``open_table(path).build(...)`` would write.

The one thing a group cannot know alone is the table's schema (the union of all files' schemas,
which types the bounds and the bloom hashes). Each task returns its files' schemas with stats
computed against its own union; groups whose union differs from the table's (schema evolution)
are computed again against the table's union in a second job. Most tables need one job.

Tables with a record key also get each file's key bounds and Hudi bloom filter (and, for a record
index, every key) computed on the executors, through ``IndexedTable.build(compute_keys=...)``: tasks
run ``compute_file_keys`` on groups of files and send the filters back as Hudi's serialized bytes
(``HudiBloomFilter.to_bytes`` and the type code), which the driver parses and merges in order.

Data errors (a file that is not parquet, a bloom column the table lacks, a null record key) travel
back as values and are raised on the driver as the ``TableFormatError`` (or ``RecordKeyError``) a
local build raises, before anything is written: a failed build leaves the index as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from adapters.spark.jobs import default_group_size, run_job
from adapters.spark.secondary import compute_index_files_on_spark
from hudi_expr.footer import unify_schemas
from index_store import IndexedTable, open_table
from index_store.builder import (
    BuiltFiles,
    compute_file_keys,
    compute_stats,
    compute_stats_from_footers,
    merge_built,
    open_footers,
)
from index_store.errors import IndexStoreError, RecordKeyError, TableFormatError
from index_store.hudi_bloom import HudiBloomFilter
from index_store.partitions.base import FileKeys
from index_store.record_key import RecordKeySpec
from index_store.tables.base import DataFile
from index_store.tables.rows import require_file_reads

__all__ = ["build_index", "compute_keys_on_spark"]


def build_index(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    bloom_columns: Sequence[str] | None = None,
    fpp: float | None = None,
    files_per_task: int | None = None,
    index_path: str | os.PathLike[str] | None = None,
    record_key: str | Sequence[str] | Literal[False] | None = None,
    record_index: bool | None = None,
    key_fpp: float | None = None,
) -> int:
    """Build the index of ``table`` (an ``IndexedTable`` or a table path) with its data files read
    on Spark executors; returns the new index version.

    Same arguments and same index as ``IndexedTable.build`` (``record_key``, ``record_index`` and
    ``key_fpp`` too: the files' keys are computed on the executors as well, and so are the
    secondary index files); an argument left as None keeps the index's configuration. ``files_per_task``
    defaults to about four tasks per core of the cluster (at most ``jobs.MAX_FILES_PER_TASK`` files
    each). Executors must see the table at the same path as the driver (a shared file system).
    """
    if files_per_task is not None and files_per_task < 1:
        raise ValueError(f"files_per_task must be at least 1, not {files_per_task}")
    indexed = table if isinstance(table, IndexedTable) else open_table(table, index_path)
    # Executors read each data file as parquet: a log file is no parquet file.
    require_file_reads(indexed.reader, "an index build on Spark (adapters.spark.build_index)")
    return indexed.build(
        bloom_columns=bloom_columns,
        fpp=fpp,
        progress=False,
        compute=partial(_compute_on_spark, spark, files_per_task),
        record_key=record_key,
        record_index=record_index,
        key_fpp=key_fpp,
        compute_keys=partial(compute_keys_on_spark, spark, files_per_task),
        compute_index_files=partial(compute_index_files_on_spark, spark),
    )


def compute_keys_on_spark(
    spark: SparkSession,
    files_per_task: int | None,
    root: str,
    files: Sequence[DataFile],
    spec: RecordKeySpec,
    fpp: float,
    with_keys: bool = False,
    progress: bool | None = None,
) -> FileKeys:
    """``compute_file_keys`` on Spark (the ``compute_keys`` hook of ``IndexedTable.build``): the
    same ``FileKeys``, files in the same order, filters equal bit for bit."""
    if not files:
        return compute_file_keys(root, files, spec, fpp, with_keys, progress=False)
    size = files_per_task or default_group_size(spark, len(files))
    groups = [list(files[i : i + size]) for i in range(0, len(files), size)]
    task = _KeysTask(root, spec, fpp, with_keys)
    results = run_job(spark, task, groups, f"hudi-index build: record keys of {len(files)} files")
    for r in results:
        if r.error is not None:
            raise r.error
    filters = [
        None if raw is None else HudiBloomFilter.from_bytes(raw, kind)
        for r in results
        for raw, kind in zip(r.blooms, r.bloom_types, strict=True)
    ]
    keys = None
    if with_keys:
        offsets = np.cumsum([0] + [len(g) for g in groups])
        tables = [
            r.keys.set_column(1, "file", pa.array(r.keys["file"].to_numpy() + offset, pa.int32()))
            for r, offset in zip(results, offsets.tolist(), strict=False)
            if r.keys is not None
        ]
        keys = pa.concat_tables(tables).combine_chunks()
    return FileKeys(
        pa.concat_arrays([r.min_key for r in results]),
        pa.concat_arrays([r.max_key for r in results]),
        filters,
        keys,
    )


# ----------------------------------------------------------------------------------- driver


def _compute_on_spark(
    spark: SparkSession,
    files_per_task: int | None,
    root: str,
    files: Sequence[DataFile],
    partition_schema: pa.Schema,
    *,
    bloom_columns: Sequence[str],
    fpp: float,
    progress: bool | None = None,
) -> BuiltFiles:
    """``compute_stats`` on Spark (the ``compute`` hook of ``IndexedTable.build``)."""
    if not files:
        return compute_stats(root, files, partition_schema, bloom_columns=bloom_columns, fpp=fpp)
    size = files_per_task or default_group_size(spark, len(files))
    groups = [list(files[i : i + size]) for i in range(0, len(files), size)]
    task = _Task(root, partition_schema, tuple(bloom_columns), fpp)
    results = run_job(spark, task, groups, f"hudi-index build: stats of {len(files)} files")
    _raise_first(r.footer_error for r in results)  # as locally: no footer, nothing else matters
    table_schema = unify_schemas([s for r in results for s in r.file_schemas()])
    stale = [i for i, r in enumerate(results) if not _same_data_schema(r, table_schema, partition_schema)]
    if stale:
        task = _Task(root, partition_schema, tuple(bloom_columns), fpp, table_schema)
        again = run_job(spark, task, [groups[i] for i in stale], "hudi-index build: stats of evolved files")
        for i, r in zip(stale, again, strict=True):
            results[i] = r
    _raise_first(r.error for r in results)
    return merge_built([r.built for r in results if r.built is not None])


def _same_data_schema(result: _GroupResult, table_schema: pa.Schema, partition_schema: pa.Schema) -> bool:
    """Whether the group's stats were computed against what the table's union would give."""
    group_schema = unify_schemas(result.file_schemas())
    return _data_fields(group_schema, partition_schema).equals(
        _data_fields(table_schema, partition_schema), check_metadata=True
    )


def _data_fields(schema: pa.Schema, partition_schema: pa.Schema) -> pa.Schema:
    return pa.schema([f for f in schema if f.name not in partition_schema.names])


def _raise_first(errors: Iterable[TableFormatError | None]) -> None:
    for error in errors:
        if error is not None:
            raise TableFormatError(str(error))


# --------------------------------------------------------------------------------- executors


@dataclass(frozen=True)
class _GroupResult:
    """What one task sends back: its files' schemas (distinct ones, and which file has which),
    and either their stats or the data error that stopped them."""

    schemas: list[pa.Schema]
    schema_of_file: list[int]
    built: BuiltFiles | None = None
    error: TableFormatError | None = None  # raised computing the stats
    footer_error: TableFormatError | None = None  # raised opening a file: no schemas then

    def file_schemas(self) -> list[pa.Schema]:
        return [self.schemas[i] for i in self.schema_of_file]


@dataclass(frozen=True)
class _Task:
    """The function of ``mapPartitions``: stats of each ``(group index, files)`` it is given."""

    root: str
    partition_schema: pa.Schema
    bloom_columns: tuple[str, ...]
    fpp: float
    data_schema: pa.Schema | None = None  # None: the union of the group's own files

    def __call__(self, groups: Iterable[tuple[int, list[DataFile]]]) -> Iterator[tuple[int, _GroupResult]]:
        for index, files in groups:
            yield index, self.compute(files)

    def compute(self, files: list[DataFile]) -> _GroupResult:
        try:
            footers = open_footers(self.root, files, progress=False)
        except TableFormatError as exc:
            return _GroupResult([], [], footer_error=TableFormatError(str(exc)))
        schemas, schema_of_file = _distinct([f.schema_arrow for f in footers])
        try:
            built = compute_stats_from_footers(
                files,
                footers,
                self.partition_schema,
                self.data_schema,
                self.bloom_columns,
                self.fpp,
                progress=False,
                arrow_schemas=[schemas[i] for i in schema_of_file],
            )
        except TableFormatError as exc:
            return _GroupResult(schemas, schema_of_file, error=TableFormatError(str(exc)))
        return _GroupResult(schemas, schema_of_file, built=built)


@dataclass(frozen=True)
class _KeysResult:
    """One task's ``FileKeys``, filters as Hudi's serialized bytes; or the data error that stopped it."""

    min_key: pa.Array
    max_key: pa.Array
    blooms: list[bytes | None]
    bloom_types: list[str | None]
    keys: pa.Table | None = None
    error: IndexStoreError | None = None


@dataclass(frozen=True)
class _KeysTask:
    """The function of ``mapPartitions``: ``compute_file_keys`` of each ``(group index, files)``."""

    root: str
    spec: RecordKeySpec
    fpp: float
    with_keys: bool

    def __call__(self, groups: Iterable[tuple[int, list[DataFile]]]) -> Iterator[tuple[int, _KeysResult]]:
        for index, files in groups:
            yield index, self.compute(files)

    def compute(self, files: list[DataFile]) -> _KeysResult:
        try:
            found = compute_file_keys(self.root, files, self.spec, self.fpp, self.with_keys, progress=False)
        except (TableFormatError, RecordKeyError) as exc:
            none = pa.array([], pa.string())
            return _KeysResult(none, none, [], [], error=type(exc)(str(exc)))
        return _KeysResult(
            found.min_key,
            found.max_key,
            [None if f is None else f.to_bytes() for f in found.filters],
            [None if f is None else f.type_code for f in found.filters],
            found.keys,
        )


def _distinct(schemas: list[pa.Schema]) -> tuple[list[pa.Schema], list[int]]:
    """Distinct schemas (first seen first) and each file's position in them: a table has few."""
    distinct: list[pa.Schema] = []
    positions: list[int] = []
    for schema in schemas:
        # Only the last few: files with per-file metadata (pandas) must not make this quadratic.
        for i in range(len(distinct) - 1, max(len(distinct) - 8, 0) - 1, -1):
            if distinct[i].equals(schema, check_metadata=True):
                positions.append(i)
                break
        else:
            distinct.append(schema)
            positions.append(len(distinct) - 1)
    return distinct, positions
