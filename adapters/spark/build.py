"""Index builds on Spark: the driver lists and commits, executors read the data files and write
the index files.

``build_index`` runs ``IndexedTable.build`` with a ``stage`` hook (``index_store.staged``): the
live files are cut into groups (in listing order), and one task per group runs what a local build
runs for them (``index_store.builder``: footers, NaN counts, bloom filters; each file's key bounds,
Hudi bloom filter and, for a record index, every key) and writes the group's index files (one per
partition, the local partitions' own writers) into the build's staging folder inside the index.
Only their names, schemas and counts come back: the index's size is no concern of
``spark.driver.maxResultSize``. The driver then makes one commit linking them in, so the index
holds the same rows as ``open_table(path).build(...)`` would write, in one file per group instead
of one per partition (``compact`` merges them).

The one thing a group cannot know alone is the table's schema (the union of all files' schemas,
which types the bounds and the bloom hashes). Each task returns its files' schemas; groups whose
union differs from the table's (schema evolution) are computed and written again against the
table's union in a second job, their first files left unused. Most tables need one job.

The record index is hash-partitioned as Hudi assigns record keys to file groups: each group task
also writes its keys, sorted by hash, as a scratch Arrow file in the staging folder; then one task
per shard (of the index's shard count) reads its hash range from every group's file and writes
the record index file of that shard. A lookup opens only the shards its keys fall in.

Retries and speculative copies are harmless: index files have unique names and the driver names
only those of the attempt it received; scratch key files are rewritten whole, with equal bytes.
A failed or abandoned build leaves the index as it was and its staging folder is removed (``clean``
removes one left by a crash).

Data errors (a file that is not parquet, a bloom column the table lacks, a null record key) travel
back as values and are raised on the driver as the ``TableFormatError`` (or ``RecordKeyError``) a
local build raises, before anything is committed.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from adapters.spark.jobs import default_group_size, run_job
from adapters.spark.secondary import compute_index_files_on_spark
from hudi_expr import hash_keys
from hudi_expr.footer import unify_schemas
from index_store import IndexedTable, open_table
from index_store.builder import (
    BuiltFiles,
    compute_file_keys,
    compute_stats,
    compute_stats_from_footers,
    open_footers,
)
from index_store.config import IndexConfig
from index_store.errors import IndexStoreError, RecordKeyError, TableFormatError
from index_store.hudi_bloom import HudiBloomFilter
from index_store.partitions import REGISTRY, Batch, Partition
from index_store.partitions.base import FileKeys
from index_store.partitions.record_index import RECORD_INDEX_SCHEMA, default_shards, write_record_index
from index_store.record_key import RecordKeySpec
from index_store.staged import Staged, StageRequest, write_batch
from index_store.tables.base import DataFile
from index_store.tables.rows import require_file_reads

__all__ = ["build_index", "compute_keys_on_spark", "stage_on_spark"]

_KEYS = ".keys"  # scratch folder of the staging folder: each group's keys, sorted by hash
_RECORD_INDEX = "record_index"


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
    and its index files written by Spark executors; returns the new index version.

    Same arguments and same index content as ``IndexedTable.build`` (``record_key``,
    ``record_index`` and ``key_fpp`` too, and the secondary index files); an argument left as None
    keeps the index's configuration. ``files_per_task`` defaults to about four tasks per core of
    the cluster (at most ``jobs.MAX_FILES_PER_TASK`` files each); each task writes one index file
    per partition. Executors must see the table and the index at the same paths as the driver (a
    shared file system).
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
        record_key=record_key,
        record_index=record_index,
        key_fpp=key_fpp,
        stage=partial(stage_on_spark, spark, files_per_task),
        compute_index_files=partial(compute_index_files_on_spark, spark),
    )


def stage_on_spark(spark: SparkSession, files_per_task: int | None, request: StageRequest) -> Staged:
    """The ``stage`` hook of ``IndexedTable.build``: the index files of ``request.files`` written
    into ``request.staging`` by Spark tasks (see the module's docstring)."""
    files, config = request.files, request.config
    task = _StageTask(
        request.root,
        str(request.staging),
        request.partition_schema,
        request.spec,
        config,
        request.version,
        write_keys=config.record_index,
        # The driver's partitions, plug-ins registered at run time included; the record index by shard.
        partitions=tuple(p for p in REGISTRY if p.name != _RECORD_INDEX),
    )
    if not files:  # nothing to read: the driver writes the empty batch as a local build does
        results = [task.compute(0, 0, [])]
        groups: list[list[DataFile]] = [[]]
    else:
        size = files_per_task or default_group_size(spark, len(files))
        groups = [list(files[i : i + size]) for i in range(0, len(files), size)]
        offsets = [i * size for i in range(len(groups))]
        work = list(zip(offsets, groups, strict=True))
        results = run_job(spark, task, work, f"hudi-index build: index files of {len(files)} files")
        _raise_first(r.footer_error for r in results)  # as locally: no footer, nothing else matters
        table_schema = unify_schemas([s for r in results for s in r.file_schemas()])
        partition_schema = request.partition_schema
        stale = [i for i, r in enumerate(results) if not _same_data_schema(r, table_schema, partition_schema)]
        if stale:
            again_task = dataclasses.replace(task, data_schema=table_schema, write_keys=False)
            again = run_job(
                spark, again_task, [work[i] for i in stale], "hudi-index build: index files of evolved files"
            )
            for i, r in zip(stale, again, strict=True):
                first = results[i]  # its keys (scratch file, key errors) stand
                results[i] = dataclasses.replace(r, n_keys=first.n_keys, keys_error=first.keys_error)
    _raise_first(r.error for r in results)
    for r in results:
        if r.keys_error is not None:
            raise r.keys_error
    added: dict[str, list[str]] = {}
    for r in results:
        for name, rels in r.added.items():
            added.setdefault(name, []).extend(rels)
    if config.record_index:
        n_keys = sum(r.n_keys for r in results)
        shards = config.record_index_shards or default_shards(n_keys)
        added[_RECORD_INDEX] = _stage_record_index(spark, request.staging, len(groups), shards)
    schema = results[0].stats_schema
    assert schema is not None  # no error: every group has its stats
    return Staged({name: added[name] for name in REGISTRY.names() if name in added}, schema)


def _stage_record_index(spark: SparkSession, staging: Path, n_groups: int, shards: int) -> list[str]:
    """One task per shard: the keys of its hash range, from every group's scratch file, as one
    record index file of ``shards`` shards (the others empty); the files in shard order."""
    task = _ShardTask(str(staging), n_groups, shards)
    what = f"hudi-index build: record index, {shards} shard{'' if shards == 1 else 's'}"
    return run_job(spark, task, list(range(shards)), what)


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
    """``compute_file_keys`` on Spark, the result back on the driver (the ``compute_keys`` hook of
    ``IndexedTable.build``, for callers that want the keys in memory; ``build_index`` has the
    executors write them): the same ``FileKeys``, files in the same order, filters equal bit for
    bit."""
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


def _same_data_schema(result: _StageResult, table_schema: pa.Schema, partition_schema: pa.Schema) -> bool:
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
class _StageResult:
    """What one group's task sends back: its files' schemas (distinct ones, and which file has
    which), and either the index files it wrote (relative to the staging folder, by partition),
    their stats schema and key count, or the data error that stopped it."""

    schemas: list[pa.Schema]
    schema_of_file: list[int]
    added: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    stats_schema: pa.Schema | None = None
    n_keys: int = 0  # keys written to the group's scratch file (a record index only)
    error: TableFormatError | None = None  # raised computing the stats
    footer_error: TableFormatError | None = None  # raised opening a file: no schemas then
    keys_error: IndexStoreError | None = None  # raised reading the record keys

    def file_schemas(self) -> list[pa.Schema]:
        return [self.schemas[i] for i in self.schema_of_file]


@dataclass(frozen=True)
class _StageTask:
    """The function of ``mapPartitions``: for each ``(group index, (first file_idx, files))``, the
    group's stats and keys, written as one index batch under the staging folder."""

    root: str
    staging: str
    partition_schema: pa.Schema
    spec: RecordKeySpec | None
    config: IndexConfig  # bloom columns and fpp, key fpp, what the partitions write
    version: int
    write_keys: bool  # write the group's keys for the record index
    partitions: tuple[Partition, ...]  # what a batch is written to
    data_schema: pa.Schema | None = None  # None: the union of the group's own files

    def __call__(
        self, groups: Iterable[tuple[int, tuple[int, list[DataFile]]]]
    ) -> Iterator[tuple[int, _StageResult]]:
        for index, (offset, files) in groups:
            yield index, self.compute(index, offset, files)

    def compute(self, index: int, offset: int, files: list[DataFile]) -> _StageResult:
        try:
            footers = open_footers(self.root, files, progress=False) if files else []
        except TableFormatError as exc:
            return _StageResult([], [], footer_error=TableFormatError(str(exc)))
        schemas, schema_of_file = _distinct([f.schema_arrow for f in footers])
        try:
            built = self._stats(files, footers, [schemas[i] for i in schema_of_file])
        except TableFormatError as exc:
            return _StageResult(schemas, schema_of_file, error=TableFormatError(str(exc)))
        found = None
        if self.spec is not None:
            try:
                found = compute_file_keys(
                    self.root, files, self.spec, self.config.key_fpp, self.write_keys, progress=False
                )
            except (TableFormatError, RecordKeyError) as exc:
                return _StageResult(schemas, schema_of_file, keys_error=type(exc)(str(exc)))
        file_idx = np.arange(offset, offset + len(files), dtype=np.int64)
        batch = Batch(
            built.files,
            file_idx,
            self.version,
            built.stats,
            built.blooms,
            built.exact_columns,
            record_keys=None if found is None else dataclasses.replace(found, keys=None),
            config=self.config,
        )
        staging = Path(self.staging)
        added = write_batch(staging, batch, self.partitions)
        n_keys = 0
        if found is not None and found.keys is not None:
            n_keys = _write_keys(staging / _KEYS / f"{index:08d}.arrow", found.keys, file_idx)
        return _StageResult(schemas, schema_of_file, added, built.stats.schema, n_keys)

    def _stats(
        self, files: list[DataFile], footers: list[pq.ParquetFile], schemas: list[pa.Schema]
    ) -> BuiltFiles:
        """The group's stats as a local build computes them."""
        if not files:
            return compute_stats(
                self.root,
                files,
                self.partition_schema,
                bloom_columns=self.config.bloom_columns,
                fpp=self.config.fpp,
            )
        return compute_stats_from_footers(
            files,
            footers,
            self.partition_schema,
            self.data_schema,
            self.config.bloom_columns,
            self.config.fpp,
            progress=False,
            arrow_schemas=schemas,
        )


def _write_keys(path: Path, keys: pa.Table, file_idx: np.ndarray) -> int:
    """A group's keys (``key``, ``file``: position in the group) as a scratch Arrow file sorted by
    hash, rewritten whole (a retried task's file is replaced, never torn); the key count."""
    key = keys["key"].combine_chunks()
    if key.null_count:  # as the record index: a null key is never found
        valid = key.is_valid()
        keys, key = keys.filter(valid), key.filter(valid)
    hashes = hash_keys(key)[0]
    order = np.argsort(hashes, kind="stable")
    table = pa.table(
        {
            "hash": pa.array(hashes[order], pa.uint64()),
            "key": key.take(pa.array(order)),
            "file_idx": pa.array(file_idx[keys["file"].to_numpy()[order]], pa.int64()),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".tmp-{uuid.uuid4().hex}-{path.name}")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)
    return len(table)


@dataclass(frozen=True)
class _ShardTask:
    """The function of ``mapPartitions``: the record index file of each ``(position, shard)``."""

    staging: str
    n_groups: int
    shards: int

    def __call__(self, shards: Iterable[tuple[int, int]]) -> Iterator[tuple[int, str]]:
        for index, shard in shards:
            yield index, self.write(shard)

    def write(self, shard: int) -> str:
        staging = Path(self.staging)
        step = (1 << 64) // self.shards
        low, high = shard * step, (shard + 1) * step  # high is 2**64 for the last shard
        parts = []
        for g in range(self.n_groups):
            path = staging / _KEYS / f"{g:08d}.arrow"
            if not path.exists():  # a group without keys (or without files)
                continue
            with pa.memory_map(str(path)) as source:
                table = pa.ipc.open_file(source).read_all()
            hashes = table["hash"].to_numpy()
            start, stop = np.searchsorted(hashes, np.uint64(low)), _upper(hashes, high)
            parts.append(table.slice(int(start), int(stop - start)))
        rows = pa.concat_tables(parts) if parts else RECORD_INDEX_SCHEMA.empty_table()
        return write_record_index(
            staging,
            rows["key"],
            rows["file_idx"].to_numpy(),
            shards=self.shards,
            hashes=rows["hash"].to_numpy(),
        )


def _upper(hashes: np.ndarray, high: int) -> int:
    """Where hashes at or above ``high`` start (``high`` may be 2**64: none are)."""
    return len(hashes) if high >= 1 << 64 else int(np.searchsorted(hashes, np.uint64(high)))


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
