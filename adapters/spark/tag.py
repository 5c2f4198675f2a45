"""Tagging record keys with their data files on Spark (Hudi RFC-37's upsert index), distributed.

``tag(spark, table, df)`` returns ``df`` with a ``_file`` column: the absolute path of the live data
file holding each row's record key (an update), null for a key found nowhere (an insert), and a
``_file_id`` column beside it: that file's file group (Hudi's file id, a plain file's name stem).
The answers are those of ``IndexedTable.tag``. Where the work runs follows the batch:

- a small batch (its key columns no larger, by Catalyst's estimate, than
  ``spark.sql.autoBroadcastJoinThreshold``): one job encodes and checks its keys on the
  executors and collects them; the driver tags them with the local ``tag`` and the answers (the
  keys found) are broadcast into the result's join (``tag_driver``). A Spark job costs more than
  tagging thousands of keys.
- otherwise the work moves to the executors:

- keys: each row's record key is encoded on the executors (an Arrow UDF running
  ``RecordKeySpec.encode`` over whole batches, shipping only the key columns), or taken from a
  column of already-encoded keys (``key_cols=[c]``); the distinct ``(key, partition)`` inputs go on.
- ``bloom``: the driver checks the index is current (as ``IndexedTable.tag`` does) and broadcasts
  each live file's key bounds, partition and serialized Hudi bloom filter; an Arrow UDF rebuilds
  the ``HudiBloomFilterSet`` once per Python worker and turns each batch of distinct keys into
  candidate files per key with ``index_store.tagging.ranges`` (integer stabbing) and one vectorized
  bloom probe (exploded into ``(key, file)`` pairs). The candidates are confirmed by reading the
  candidate files' key columns with Spark's parquet reader (``_metadata.file_path`` says which file
  a key came from), a semi-join on ``(key, file)``.
- ``record``: the distinct inputs are shuffled by the record index's shard hash, so each task looks
  its keys up in one shard of each index file, page probes only (``tag_record``); no scan of the
  index.

- merge-on-read tables: the candidates (unverified, for ``bloom``) become candidate file slices,
  and each slice decides for its keys inside a task (``tag_slices``), as locally; ``_file`` is
  the slice's base file (or its latest log file), ``_file_id`` its file group.

Python work runs in scalar Arrow UDFs, not ``mapInArrow``: PySpark 4.3 plans ``mapInArrow``
through ``pandas_udf`` and so requires pandas, which this library does not depend on.

A key held by several live files is tagged with each (the input row repeated once per file, as
Hudi's bloom index tags every copy), or, with ``on_duplicate="error"``, raises
``DuplicateKeyError`` on the driver (found by an aggregation), as locally. Partition values are
mapped to the table's partition paths on the executors by the local rule
(``index_store.tagging.partitions``).

On the distributed path, ``tag`` runs the lookups before it returns (so that their errors are
raised by ``tag``), into local checkpoints (kept on the executors, freed when no longer
referenced) where a later stage or the result uses them, so the returned DataFrame does not redo
the probing; its own work is one join of ``df`` with the (key -> file) answers. Like any local
checkpoint, it is lost with an executor that goes away before the result is used. ``tag`` counts
duplicate keys (one more job) only for ``on_duplicate="error"``; ``tag_with_stats`` always.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type
from pyspark.sql.types import StringType, StructType

from adapters.spark.tag_driver import driver_batch_bytes, estimated_bytes, tag_on_driver
from adapters.spark.tag_record import lookup_by_shard
from adapters.spark.tag_slices import in_slices
from index_store import IndexedTable, open_table
from index_store.arrays import unique_sorted
from index_store.errors import (
    DuplicateKeyError,
    IndexCorruptError,
    IndexNotBuiltError,
    IndexStaleError,
    IndexStoreError,
    PartitionPathError,
    RecordKeyError,
    TableFormatError,
)
from index_store.hudi_bloom import HudiBloomFilter, HudiBloomFilterSet, HudiBloomFormatError
from index_store.partitions import read_files, read_log_records
from index_store.partitions.record_keys import RecordKeysPartition, read_record_key_rows
from index_store.record_key import UNKNOWN, RecordKeySpec
from index_store.tagging.merged import merged_tagging
from index_store.tagging.partitions import PartitionLayout
from index_store.tagging.ranges import SortedBounds, needs_both_orders, range_pairs
from index_store.tagging.stats import TagMethod
from index_store.tagging.tagger import OnDuplicate, check_on_duplicate, tag_method
from index_store.tagging.wiring import checked_keys

__all__ = [
    "FILE_COLUMN",
    "FILE_ID_COLUMN",
    "SparkTagError",
    "SparkTagStats",
    "benchmark_tag",
    "tag",
    "tag_with_stats",
]

FILE_COLUMN = "_file"
FILE_ID_COLUMN = "_file_id"
_KEY = "__hudi_tag_key"
_PART = "__hudi_tag_partition"
_POS = "__hudi_tag_file_pos"
_PATH = "__hudi_tag_path"


class SparkTagError(IndexStoreError):
    """A Spark job of a tagging run failed for a reason other than the keys or the table."""


@dataclass(frozen=True)
class SparkTagStats:
    """What one distributed tagging run did (for benchmarks): pair and file counts and the
    seconds of each stage (``keys``: encoding and distinct keys, with the range and bloom stages
    for ``bloom``; ``verify``; ``record``; ``duplicates``). The returned DataFrame is lazy: its final
    join is not timed here."""

    method: TagMethod
    files: int  # live data files the index holds (and still on disk)
    after_range: int = 0  # candidate pairs after the key ranges (bloom)
    after_bloom: int = 0  # candidate pairs after the bloom filters (bloom), or live entries found (record)
    files_read: int = 0  # candidate files whose keys were read (bloom)
    slices_read: int = 0  # merge-on-read file slices read (their base file keys and log records)
    updates: int = 0  # distinct (key, partition) inputs found in a file
    several_files: int = 0  # distinct (key, partition) inputs found in more than one file
    seconds: dict[str, float] = field(default_factory=dict)


def tag(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    df: DataFrame,
    key_cols: Sequence[str] | str | None = None,
    partition_col: str | None = None,
    using: Literal["auto", "bloom", "record"] = "auto",
    on_duplicate: OnDuplicate = "all",
) -> DataFrame:
    """``df`` with a ``_file`` column: the absolute path of the live data file holding each row's
    record key, null for a key no file holds (an insert), and ``_file_id`` beside it: the file's
    file group (Hudi's file id; a plain table's file name stem), null for an insert. A row whose
    key several live files hold comes once per file (``on_duplicate="all"``, as Hudi tags every
    copy) or raises ``DuplicateKeyError`` (``"error"``).

    ``key_cols``: None (``df`` has the index's key fields, ``snapshot().config.key_fields``,
    encoded as the table's key generator does) or ``[c]``, a string column of record keys exactly
    as Hudi writes ``_hoodie_record_key``. ``partition_col``: a column of partition paths or
    values: each key is looked for in its partition only; without it the whole table. Values map
    to the table's paths as in ``IndexedTable.tag``: null or ``""`` is a non-partitioned table's
    partition, ``eu`` is ``region=eu`` on a ``region=`` table, Hudi's ``_hoodie_partition_path``
    and a trailing ``/`` are fine, a well-formed new partition holds inserts, any other value
    raises ``PartitionPathError``. ``using``: as ``IndexedTable.tag``. Raises as
    ``IndexedTable.tag`` does: ``IndexStaleError`` when files were added or rewritten since the
    index was synced, ``RecordKeyError`` for a missing key column or null or empty keys,
    ``DuplicateKeyError`` when a key is in two live files and ``on_duplicate="error"``.
    """
    return _tag(spark, table, df, key_cols, partition_col, using, on_duplicate, counted=False)[0]


def tag_with_stats(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    df: DataFrame,
    key_cols: Sequence[str] | str | None = None,
    partition_col: str | None = None,
    using: Literal["auto", "bloom", "record"] = "auto",
    on_duplicate: OnDuplicate = "all",
) -> tuple[DataFrame, SparkTagStats]:
    """``tag``, and what its stages did and took (``SparkTagStats``; counting them may take one
    more Spark job than ``tag`` runs)."""
    return _tag(spark, table, df, key_cols, partition_col, using, on_duplicate, counted=True)


def _tag(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    df: DataFrame,
    key_cols: Sequence[str] | str | None,
    partition_col: str | None,
    using: Literal["auto", "bloom", "record"],
    on_duplicate: OnDuplicate,
    counted: bool,
) -> tuple[DataFrame, SparkTagStats]:
    """``tag``; ``counted``: the stats' counters are wanted (else only what ``on_duplicate`` needs
    is computed)."""
    indexed = table if isinstance(table, IndexedTable) else open_table(table)
    live = _live_index(indexed)
    config = live.config
    spec, method = tag_method(config, indexed.root, using)
    check_on_duplicate(on_duplicate)
    for name in (FILE_COLUMN, FILE_ID_COLUMN):
        if name in df.columns:
            raise ValueError(f"df already has a {name!r} column")
    keyed = df.withColumn(_KEY, _key_column(df, spec, key_cols))
    if partition_col is not None:
        if partition_col not in df.columns:
            raise RecordKeyError(f"partition column {partition_col!r} is not a column of df: {df.columns}")
        layout = PartitionLayout.of(indexed.root, live.partitions, indexed.reader.partitioning().fields)
        given = F.col(f"`{partition_col}`").cast("string")
        keyed = keyed.withColumn(_PART, _arrow_udf(_NormalizePartitions(layout), "string", given))
    _check_current(indexed, live)
    join_on = [_KEY, _PART] if partition_col is not None else [_KEY]

    stats: dict[str, Any] = {"method": method, "files": int(live.present.sum()), "seconds": {}}
    limit = driver_batch_bytes(spark)
    size = estimated_bytes(keyed.select(*join_on)) if limit >= 0 else None
    if size is not None and size <= limit:
        # A small batch: one job collects its keys, the driver tags them (tag_driver).
        names = {"key": _KEY, "file": FILE_COLUMN, "file_id": FILE_ID_COLUMN}
        if partition_col is not None:
            names["partition"] = _PART
        answers, counters = tag_on_driver(spark, indexed, keyed, names, method, on_duplicate, _run)
        result = keyed.join(F.broadcast(answers), on=join_on, how="left").drop(*join_on)
        return result, SparkTagStats(**{**stats, **counters})

    distinct = keyed.select(*join_on).distinct()
    merged = merged_tagging(
        indexed.reader,
        spec,
        pa.array(live.paths, pa.string()),
        lambda: _recorded(indexed, live),
        lambda: read_log_records(indexed.index_root, live.live_log_records, live.file_idx),
    )
    per_partition = partition_col is not None
    if method == "bloom":
        # Merge-on-read: the slices read the candidates' base files (and logs) themselves.
        verify = merged is None
        reused = counted or on_duplicate == "error"  # read by the duplicate count and the result
        found = _by_blooms(spark, indexed, live, spec, distinct, per_partition, stats, verify, reused)
    else:
        found = _by_record_index(spark, indexed, live, keyed, join_on, stats)
    paths = live.paths
    if merged is not None:
        start = time.perf_counter()
        names = {"key": _KEY, "partition": _PART, "pos": _POS, "file": FILE_COLUMN, "file_id": FILE_ID_COLUMN}
        exact = method == "record"  # the record index's pairs; bloom's are candidates
        decided = in_slices(spark, merged, distinct, found, join_on, names, _run, _arrow_udf, exact)
        found, files, paths = decided.found, decided.locations, decided.paths
        stats["slices_read"] = decided.slices_read
        stats["seconds"]["slices"] = time.perf_counter() - start
    else:
        files = _files_frame(spark, live, indexed.reader.file_ids)

    if counted or on_duplicate == "error":
        start = time.perf_counter()
        with _spark_errors("duplicate keys"):
            summary = _duplicates(found, join_on)
        stats["seconds"]["duplicates"] = time.perf_counter() - start
        stats["updates"] = int(summary["updates"] or 0)
        if method == "record":
            stats["after_bloom"] = int(summary["matches"] or 0)
        stats["several_files"] = int(summary["twice"] or 0)
        if summary["twice"] and on_duplicate == "error":
            key, positions = summary["example"][_KEY], summary["example"]["positions"]
            where = sorted(paths[int(p)] for p in positions)
            raise DuplicateKeyError(
                f"{summary['twice']} record keys are in more than one live data file of {indexed.root}, "
                f"e.g. {key!r} in {where}: the table's keys are not unique (run hudi-index check)"
            )
    answers = found.join(F.broadcast(files), _POS).select(*join_on, FILE_COLUMN, FILE_ID_COLUMN)
    result = keyed.join(answers, on=join_on, how="left").drop(*join_on)
    return result, SparkTagStats(**stats)


def benchmark_tag(
    spark: SparkSession,
    table: IndexedTable | str | os.PathLike[str],
    df: DataFrame,
    key_cols: Sequence[str] | str | None = None,
    partition_col: str | None = None,
    using: Literal["auto", "bloom", "record"] = "auto",
    on_duplicate: OnDuplicate = "all",
) -> SparkTagStats:
    """``tag_with_stats`` with the result materialized too (written to Spark's ``noop`` sink):
    the stats of the whole run, ``seconds["result"]`` the final join, ``seconds["total"]`` all."""
    start = time.perf_counter()
    result, stats = tag_with_stats(spark, table, df, key_cols, partition_col, using, on_duplicate)
    joined = time.perf_counter()
    result.write.format("noop").mode("overwrite").save()
    end = time.perf_counter()
    seconds = {**stats.seconds, "result": end - joined, "total": end - start}
    return dataclasses.replace(stats, seconds=seconds)


# ----------------------------------------------------------------------------------- driver


@dataclass(frozen=True)
class _Live:
    """The index's live files as tagging needs them, in ``file_idx`` order."""

    root: str  # the table's
    config: Any
    file_idx: np.ndarray
    paths: list[str]  # table-relative
    partitions: pa.StringArray
    present: np.ndarray  # still on disk (set by _check_current)
    live_record_index: tuple[str, ...]
    live_record_keys: tuple[str, ...]
    live_log_records: tuple[str, ...]


def _live_index(indexed: IndexedTable) -> _Live:
    snap = indexed.snapshot()
    if not snap.version:
        raise IndexNotBuiltError(indexed.root)
    files = read_files(indexed.index_root, snap.live["files"], ["file_idx", "path", "partition"])
    return _Live(
        indexed.root,
        snap.config,
        files["file_idx"].to_numpy(),
        files["path"].to_pylist(),
        files["partition"].combine_chunks().cast(pa.string()),
        np.zeros(files.num_rows, dtype=bool),
        tuple(snap.live.get("record_index", ())),
        tuple(snap.live.get("record_keys", ())),
        tuple(snap.live.get("log_records", ())),
    )


def _check_current(indexed: IndexedTable, live: _Live) -> None:
    """``IndexStaleError`` when files are on disk the index does not know or has another size or
    modification time for (the rule of ``IndexedTable.tag``); marks which indexed files are on disk."""
    fresh = indexed.freshness()
    if not fresh.current:
        raise IndexStaleError(indexed.root, fresh.reason())
    on_disk = fresh.paths.filter(pa.array(fresh.present))
    live.present[:] = pc.is_in(pa.array(live.paths, pa.string()), value_set=on_disk).to_numpy(
        zero_copy_only=False
    )


def _files(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def _key_column(df: DataFrame, spec: RecordKeySpec, key_cols: Sequence[str] | str | None) -> Column:
    """The record key of each row, computed on the executors; column and type errors raised here."""
    if isinstance(key_cols, str):
        key_cols = [key_cols]
    types = {f.name: f.dataType for f in df.schema.fields}
    if key_cols is not None:
        names = list(key_cols)
        if len(names) != 1:
            raise RecordKeyError(
                f"key_cols names one column of encoded record keys, got {names}; leave it out to have "
                f"the key fields {list(spec.fields)} encoded"
            )
        (name,) = names
        if name not in types:
            raise RecordKeyError(f"record key column {name!r} is not a column of df: {df.columns}")
        if not isinstance(types[name], StringType):
            raise RecordKeyError(
                f"record key column {name!r} holds {types[name].simpleString()}, not the key strings "
                f"Hudi writes; leave key_cols out to have the key fields {list(spec.fields)} encoded"
            )
        return _arrow_udf(_CheckedKeys(name), "string", F.col(f"`{name}`"))
    if spec.generator == UNKNOWN or not spec.fields:
        raise RecordKeyError(
            f"cannot encode record keys from the fields {list(spec.fields)}: "
            f"{spec.detail or 'the key generator is not known'}. Pass a column of record key strings as "
            f"Hudi wrote them: key_cols=[column]"
        )
    missing = [f for f in spec.fields if f not in types]
    if missing:
        raise RecordKeyError(
            f"record key field {missing[0]!r} is not a column of df; its columns are {df.columns} "
            f"(the key fields are {list(spec.fields)}; or pass encoded keys with key_cols=[column])"
        )
    # Types the key generator cannot print are refused here, on an empty batch, not in a task.
    schema = pa.schema([pa.field(f, to_arrow_type(types[f])) for f in spec.fields])
    spec.encode(schema.empty_table())
    return _arrow_udf(_EncodeKeys(spec), "string", *[F.col(f"`{f}`") for f in spec.fields])


def _arrow_udf(fn: Any, return_type: str, *columns: Column) -> Column:
    """A scalar Arrow UDF (batches of ``pyarrow`` arrays in and out; unlike ``mapInArrow``, which
    PySpark 4.3 runs through ``pandas_udf``, it needs no pandas)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "prefer type hints": a callable object has none
        udf = arrow_udf(fn, return_type, ArrowUDFType.SCALAR)
    return udf(*columns)


def _by_blooms(
    spark: SparkSession,
    indexed: IndexedTable,
    live: _Live,
    spec: RecordKeySpec,
    distinct: DataFrame,
    per_partition: bool,
    stats: dict[str, Any],
    verify: bool = True,
    reused: bool = True,
) -> DataFrame:
    """Confirmed ``(key[, partition], file_pos)``: ranges and blooms on executors, then reading
    (unless ``verify`` is False: the candidates as they are). ``reused``: the confirmed pairs are
    read more than once (checkpointed; else left to the caller's job)."""
    start = time.perf_counter()
    keys = _key_rows(indexed, live)
    ranges = _Ranges(
        uuid.uuid4().hex,
        str(indexed.index_root / RecordKeysPartition.name),
        keys["min_key"],
        keys["max_key"],
        live.partitions,
        live.present.copy(),
        keys["bloom"].to_pylist(),
        keys["bloom_type"].to_pylist(),
    )
    sc = spark.sparkContext
    broadcast = sc.broadcast(ranges)
    after_range, after_bloom = sc.accumulator(0), sc.accumulator(0)
    touched = sc.accumulator(np.zeros(0, np.int64), _Union())
    columns = [_KEY, _PART] if per_partition else [_KEY]
    udf = _Probe(broadcast, after_range, after_bloom, touched)
    probe = _arrow_udf(udf, "array<bigint>", *[F.col(c) for c in columns])
    with _spark_errors("key ranges and bloom filters"):
        # Checkpointed: read again by the verification, once the files it reads are known.
        candidates = distinct.select(*columns, F.explode(probe).alias(_POS)).localCheckpoint(eager=True)
    broadcast.unpersist()
    per_file = np.asarray(touched.value, dtype=np.int64)  # the candidate files, from the probing job
    stats["seconds"]["keys"] = time.perf_counter() - start
    stats["after_range"] = int(after_range.value)
    stats["after_bloom"] = int(after_bloom.value)
    stats["files_read"] = len(per_file)

    start = time.perf_counter()
    if not len(per_file) or not verify:
        stats["seconds"]["verify"] = time.perf_counter() - start
        return candidates
    prefix = indexed.root.rstrip(os.sep) + os.sep
    wanted = {os.path.normpath(prefix + live.paths[p]): p for p in per_file.tolist()}
    names = [spec.column] if spec.column is not None else list(spec.fields)
    schema = _key_schema(next(iter(wanted)), names)
    read = spark.read.schema(schema).parquet(*wanted)
    by_uri = _uris(spark, list(wanted), schema)
    files = spark.createDataFrame(
        pa.table(
            {
                _PATH: pa.array(list(by_uri.values()), pa.string()),
                _POS: pa.array([wanted[p] for p in by_uri], pa.int64()),
            }
        )
    )
    if spec.column is not None:
        key = F.col(f"`{spec.column}`").cast("string")  # Hudi's stored keys: no Python on the scan
    else:
        key = _arrow_udf(_EncodeKeys(spec), "string", *[F.col(f"`{c}`") for c in spec.fields])
    stored = read.select(key.alias(_KEY), F.col("_metadata.file_path").alias(_PATH))
    stored = stored.join(F.broadcast(files), _PATH).select(_KEY, _POS)
    confirmed = candidates.join(stored, [_KEY, _POS], "left_semi")
    if reused:
        with _spark_errors("reading the candidate files' keys"):
            confirmed = confirmed.localCheckpoint(eager=True)
    stats["seconds"]["verify"] = time.perf_counter() - start
    return confirmed


# Local path -> the URI Spark names the file by (``_metadata.file_path``: ``file:/a%20b/...``),
# learned from listing scans: data files are immutable, so a warm session lists each file once.
_URIS: dict[str, str] = {}
_MAX_URIS = 1 << 20


def _key_schema(path: str, names: list[str]) -> StructType:
    """The Spark schema of the key columns, from one candidate file's footer (given to the scans,
    so that Spark runs no job to infer it)."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise SparkTagError(f"cannot read the schema of {path}: {exc}") from None
    missing = [n for n in names if n not in schema.names]
    if missing:
        raise RecordKeyError(f"record key field {missing[0]!r} is not a column of {path}")
    return from_arrow_schema(pa.schema([schema.field(n) for n in names]))


def _uris(spark: SparkSession, paths: list[str], schema: StructType) -> dict[str, str]:
    """Each local path's URI as Spark names it, listing (a scan reading no column: row counts only)
    the files not seen yet, so that the key scan joins on plain strings."""
    unseen = [p for p in paths if p not in _URIS]
    if unseen:
        listing = spark.read.schema(schema).parquet(*unseen).select("_metadata.file_path").distinct()
        with _spark_errors("listing the candidate files"):
            uris = [r[0] for r in listing.collect()]
        by_path = {_local_path(uri): uri for uri in uris}
        asked = set(unseen)
        unknown = [uri for path, uri in by_path.items() if path not in asked]
        if unknown:
            raise SparkTagError(f"Spark read files that were not asked for: {unknown[:3]}")
        if len(_URIS) + len(by_path) > _MAX_URIS:
            _URIS.clear()
        _URIS.update(by_path)
        # A file with no rows is never named by a scan: it holds no key to verify either.
    return {p: _URIS[p] for p in paths if p in _URIS}


def _recorded(indexed: IndexedTable, live: _Live) -> np.ndarray:
    """Per live file: does the index hold its keys (a ``record_keys`` row)?"""
    rows = read_record_key_rows(indexed.index_root, live.live_record_keys, live.file_idx)
    return rows["recorded"].to_numpy()


def _run(what: str, job: Callable[[], Any]) -> Any:
    """``job()``, a Spark job's failure raised as the library error its task raised."""
    with _spark_errors(what):
        return job()


def _local_path(uri: str) -> str:
    """The normalized local path of a ``file:`` URI as Spark names files (other URIs as they are)."""
    parsed = urlparse(uri)
    return os.path.normpath(unquote(parsed.path)) if parsed.scheme in ("file", "") else uri


def _key_rows(indexed: IndexedTable, live: _Live) -> dict[str, pa.Array]:
    """Each live file's key bounds and serialized Hudi filter, as the ``record_keys`` partition
    holds them (nulls for a file it has nothing for: never a candidate, as locally)."""
    rows = read_record_key_rows(indexed.index_root, live.live_record_keys, live.file_idx)
    return {name: rows[name].combine_chunks() for name in ("min_key", "max_key", "bloom", "bloom_type")}


def _by_record_index(
    spark: SparkSession,
    indexed: IndexedTable,
    live: _Live,
    keyed: DataFrame,
    join_on: list[str],
    stats: dict[str, Any],
) -> DataFrame:
    """Confirmed ``(key[, partition], file_pos)``: the distinct inputs looked up in the record
    index, shuffled by its shard hash (``tag_record``)."""
    start = time.perf_counter()
    per_partition = len(join_on) > 1
    found = lookup_by_shard(
        keyed,
        join_on,
        _POS,
        indexed.index_root,
        live.live_record_index,
        live.file_idx,
        live.present.copy(),
        live.partitions if per_partition else None,
        spark.sparkContext.defaultParallelism,
        _arrow_udf,
    )
    # Checkpointed: tag raises the lookups' errors itself, and the answers are used again by the
    # duplicate count and the final join.
    with _spark_errors("record index lookup"):
        found = found.localCheckpoint(eager=True)
    stats["seconds"]["record"] = time.perf_counter() - start
    return found


def _duplicates(found: DataFrame, keys: list[str]) -> dict[str, Any]:
    """How many distinct inputs were found, how many in two files, and one of those (one job)."""
    holders = found.groupBy(*keys).agg(F.collect_set(_POS).alias("positions"))
    twice = F.size("positions") > 1
    row = holders.agg(
        F.count(F.lit(1)).alias("updates"),
        F.sum(F.size("positions")).alias("matches"),
        F.sum(F.when(twice, 1).otherwise(0)).alias("twice"),
        F.min(F.when(twice, F.struct(F.col(_KEY), F.array_sort("positions").alias("positions")))).alias(
            "example"
        ),
    ).collect()[0]
    return row.asDict(recursive=False)


def _files_frame(
    spark: SparkSession, live: _Live, file_ids: Callable[[pa.StringArray], pa.StringArray]
) -> DataFrame:
    """``(file_pos, _file, _file_id)`` of every live file (absolute paths and file ids as
    ``IndexedTable.tag`` gives them; ``file_ids``: the table format's rule)."""
    prefix = live.root.rstrip(os.sep) + os.sep
    paths = pa.array(live.paths, pa.string())
    return spark.createDataFrame(
        pa.table(
            {
                _POS: pa.array(np.arange(len(live.paths), dtype=np.int64)),
                FILE_COLUMN: pa.array([prefix + p for p in live.paths], pa.string()),
                FILE_ID_COLUMN: file_ids(paths),
            }
        )
    )


@contextmanager
def _spark_errors(what: str) -> Iterator[None]:
    """A failed Spark job as the library error its Python task raised (RecordKeyError, ...)."""
    try:
        yield
    except IndexStoreError:
        raise
    except Exception as exc:
        raise _library_error(exc, what) from None


_ERROR_LINE = re.compile(r"index_store\.errors\.(\w+): (.*)")
_CORRUPT = re.compile(r"index file (.+?) is corrupt: (.*?)\. Rebuild the index")


def _library_error(exc: BaseException, what: str) -> IndexStoreError:
    text = str(exc)
    found = _ERROR_LINE.findall(text)
    if found:
        name, message = found[-1]
        message = message.strip()
        if name == "RecordKeyError":
            return RecordKeyError(message)
        if name == "PartitionPathError":
            return PartitionPathError(message)
        if name == "TableFormatError":
            return TableFormatError(message)
        if name == "IndexCorruptError":
            m = _CORRUPT.search(message)
            if m:
                return IndexCorruptError(m.group(1), m.group(2))
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "Error: " in line or "Exception: " in line]
    last = (errors or lines or [type(exc).__name__])[-1]
    return SparkTagError(f"tagging on Spark failed ({what}): {last}")


# --------------------------------------------------------------------------------- executors


@dataclass(frozen=True)
class _Ranges:
    """What the range and bloom stages need of every live file (broadcast)."""

    token: str  # identifies the broadcast: a worker rebuilds the filters once per token
    where: str  # the record_keys partition folder (named when a filter is corrupt)
    min_key: pa.StringArray
    max_key: pa.StringArray
    partitions: pa.StringArray
    present: np.ndarray
    blooms: list[bytes | None]
    bloom_types: list[str | None]


@dataclass(frozen=True)
class _Prepared:
    """A worker's ready-to-probe form of ``_Ranges``."""

    filters: HudiBloomFilterSet
    bounds_above_bmp: bool  # some bound has a character above U+FFFF: try both orders
    file_partitions: pa.StringArray  # distinct partitions of the files
    file_part_code: np.ndarray  # per file, its partition's position among them
    sorted: dict[bool, SortedBounds]  # the bounds sorted in each string order searched so far
    min_key: pa.StringArray
    max_key: pa.StringArray

    def sorted_bounds(self, java_order: bool) -> SortedBounds:
        """The files' bounds sorted in that order, once per worker and broadcast."""
        if java_order not in self.sorted:
            self.sorted[java_order] = SortedBounds(self.min_key, self.max_key, java_order)
        return self.sorted[java_order]


_PREPARED: dict[str, _Prepared] = {}


def _prepare(ranges: _Ranges) -> _Prepared:
    ready = _PREPARED.get(ranges.token)
    if ready is None:
        try:
            filters = HudiBloomFilterSet(
                [
                    None if raw is None else HudiBloomFilter.from_bytes(raw, kind)
                    for raw, kind in zip(ranges.blooms, ranges.bloom_types, strict=True)
                ]
            )
        except (HudiBloomFormatError, ValueError) as exc:
            raise IndexCorruptError(ranges.where, f"bad key bloom filter ({exc})") from None
        distinct = pc.unique(ranges.partitions)
        codes = pc.index_in(ranges.partitions, value_set=distinct).to_numpy(zero_copy_only=False)
        ready = _Prepared(
            filters,
            needs_both_orders(ranges.min_key, ranges.max_key),
            distinct,
            codes.astype(np.int64),
            {},
            ranges.min_key,
            ranges.max_key,
        )
        _PREPARED.clear()  # one tagging run at a time per worker is plenty
        _PREPARED[ranges.token] = ready
    return ready


class _Union(AccumulatorParam[np.ndarray]):
    """An accumulator of a set of file positions (sorted int64): updates are unions, so a task
    retried adds nothing new."""

    def zero(self, value: np.ndarray) -> np.ndarray:
        return np.zeros(0, np.int64)

    def addInPlace(self, value1: np.ndarray, value2: np.ndarray) -> np.ndarray:
        return np.union1d(value1, value2).astype(np.int64)


@dataclass(frozen=True)
class _Probe:
    """Arrow UDF: per distinct key (and its partition), the live files whose key range (in the
    key's partition) and bloom filter admit it, as a list of file positions."""

    broadcast: Any
    after_range: Any  # accumulators: candidate pairs after the ranges, after the blooms,
    after_bloom: Any
    touched: Any  # and the positions of the candidate files (_Union)

    def __call__(self, keys: pa.Array, parts: pa.Array | None = None) -> pa.Array:
        ranges: _Ranges = self.broadcast.value
        ready = _prepare(ranges)
        keys = keys.cast(pa.string())
        if parts is not None:
            parts = parts.cast(pa.string())
        key_idx, file_pos = _range_pairs(ranges, ready, keys, parts)
        self.after_range.add(int(key_idx.size))
        if key_idx.size:
            # An empty key is one Hudi's filters cannot hash: it stays a candidate (never dropped).
            maybe = ready.filters.might_contain_pairs(keys, key_idx, file_pos)
            key_idx, file_pos = key_idx[maybe], file_pos[maybe]
        self.after_bloom.add(int(key_idx.size))
        self.touched.add(unique_sorted(file_pos.astype(np.int64)))
        order = np.argsort(key_idx, kind="stable")
        counts = np.bincount(key_idx, minlength=len(keys)) if key_idx.size else np.zeros(len(keys), np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(file_pos[order], pa.int64()))


def _range_pairs(
    ranges: _Ranges, ready: _Prepared, keys: pa.StringArray, parts: pa.StringArray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(key, file) pairs whose file's key bounds admit the key, in its partition, on disk: the
    range stage of ``index_store.tagging`` (``ranges.range_pairs``, the bounds sorted once per
    worker), without its integer-field stage (the field's min/max are not broadcast)."""
    orders = [True, False] if ready.bounds_above_bmp or needs_both_orders(keys) else [True]
    if parts is None:
        part_key: np.ndarray = np.zeros((), dtype=np.int64)
        part_file = np.zeros(len(ranges.partitions), dtype=np.int64)
    else:
        # A partition no file is in gets a code of its own, so its keys meet no file.
        where = pc.index_in(parts, value_set=ready.file_partitions)
        part_key = where.fill_null(len(ready.file_partitions)).to_numpy(zero_copy_only=False).astype(np.int64)
        part_file = ready.file_part_code
    usable = ranges.present & ranges.min_key.is_valid().to_numpy(zero_copy_only=False)
    found = list(range_pairs(keys, ready.sorted_bounds, orders, usable, part_key, part_file))
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    key_idx = np.concatenate([f[0] for f in found]).astype(np.int64)
    file_pos = np.concatenate([f[1] for f in found]).astype(np.int64)
    if len(orders) > 1:
        n = max(len(ranges.partitions), 1)
        pairs = unique_sorted(key_idx * n + file_pos)
        key_idx, file_pos = pairs // n, pairs % n
    return key_idx, file_pos


@dataclass(frozen=True)
class _EncodeKeys:
    """Arrow UDF: the record key of each row from the key fields (``RecordKeySpec.encode``)."""

    spec: RecordKeySpec

    def __call__(self, *columns: pa.Array) -> pa.Array:
        table = pa.table(list(columns), names=list(self.spec.fields))
        return self.spec.encode(table)


@dataclass(frozen=True)
class _CheckedKeys:
    """Arrow UDF: already-encoded record keys, refused when null or empty (as locally)."""

    name: str

    def __call__(self, keys: pa.Array) -> pa.Array:
        return checked_keys(keys, self.name)


@dataclass(frozen=True)
class _NormalizePartitions:
    """Arrow UDF: partition values as the table's partition paths (``PartitionLayout.normalize``;
    a value that maps to none raises ``PartitionPathError``)."""

    layout: PartitionLayout

    def __call__(self, values: pa.Array) -> pa.Array:
        return self.layout.normalize(values)
