"""Statistics of data files for the index: footers first, then only the columns footers lack.

Min/max/null counts of every column come from parquet footers (no data read). NaN counts (footers
do not have them) and bloom filters are computed by reading just the float and bloom columns.
Partition values become exact per-file stats (min = max = the value). Work runs on a thread pool
(pyarrow releases the GIL while it reads and decodes), with a progress bar on a terminal.

A Hudi log file (merge-on-read) is indexed like a base file, from its records written to an
in-memory parquet file (``log_content``); one whose blocks do not decode gets unknown statistics.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from hudi_expr import BloomFilter, ColumnStats, FileStats, HudiExprError
from hudi_expr.binding import resolve
from hudi_expr.footer import stats_from_footers, unify_schemas
from hudi_expr.stats import leaf_columns
from index_store.data_files import reading_data_file
from index_store.errors import RecordKeyError, TableFormatError
from index_store.hudi_bloom import (
    SIMPLE,
    HudiBloomFilter,
    HudiBloomFormatError,
    footer_key_bounds,
    java_argsort,
)
from index_store.log_content import LogFileRecords, is_log_path, log_file_records, log_values
from index_store.partitions.base import FileKeys
from index_store.tables.base import DataFile

if TYPE_CHECKING:
    from index_store.record_key import RecordKeySpec

__all__ = [
    "BuiltFiles",
    "ComputeKeys",
    "ComputeStats",
    "column_path",
    "compute_file_keys",
    "compute_stats",
    "compute_stats_from_footers",
    "merge_built",
    "open_footers",
    "top_field",
]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class BuiltFiles:
    """What the index stores about a batch of data files."""

    files: Sequence[DataFile]
    stats: FileStats  # files named by their table-relative paths
    blooms: dict[str, list[BloomFilter | None]]
    exact_columns: tuple[str, ...]  # partition columns: their bounds are the values


# What ``IndexedTable.build(compute=...)`` calls instead of ``compute_stats`` (a distributed build):
# ``compute(root, files, partition_schema, bloom_columns=..., fpp=..., progress=...)``, returning
# exactly what ``compute_stats`` would, files in the same order.
ComputeStats = Callable[..., BuiltFiles]

# What ``IndexedTable.build(compute_keys=...)`` calls instead of ``compute_file_keys``:
# ``compute_keys(root, files, spec, fpp, with_keys, progress)``, files in the same order.
ComputeKeys = Callable[..., FileKeys]


def compute_stats(
    root: str,
    files: Sequence[DataFile],
    partition_schema: pa.Schema,
    data_schema: pa.Schema | None = None,
    bloom_columns: Iterable[str] = (),
    fpp: float = 0.01,
    progress: bool | None = None,
    workers: int | None = None,
    *,
    table_schema: pa.Schema | None = None,
    log_records_whole: bool = True,
) -> BuiltFiles:
    """Stats for ``files`` under ``root``; ``data_schema`` defaults to the union of their schemas.

    Hudi log files among ``files`` are read through their records (``log_content.log_values``),
    cast to the types of ``table_schema`` (the index's schema, on update) and the base files';
    ``log_records_whole=False`` (the table's ``TableReader.log_records_whole``) leaves their
    statistics unknown."""
    if not files:
        return BuiltFiles(files, FileStats([], [], {}, data_schema or pa.schema([])), {}, ())
    logs = np.array([is_log_path(f.path) for f in files], dtype=bool)
    if not logs.any():
        footers = open_footers(root, files, progress, workers)
        return compute_stats_from_footers(
            files, footers, partition_schema, data_schema, bloom_columns, fpp, progress, workers
        )
    bases = open_footers(root, [f for f, log in zip(files, logs, strict=True) if not log], progress, workers)
    known = [table_schema] if table_schema is not None else []
    target = unify_schemas(known + [f.schema_arrow for f in bases])
    values = _parallel(
        lambda f: log_values(
            os.path.join(root, f.path), target if len(target) else None, usable=log_records_whole
        ),
        [f for f, log in zip(files, logs, strict=True) if log],
        _workers(workers),
        _show(progress),
        "reading log files",
    )
    opened: list[pq.ParquetFile] = []
    base_iter, log_iter = iter(bases), iter(values)
    unusable = np.zeros(len(files), dtype=bool)
    for i, log in enumerate(logs):
        if log:
            value = next(log_iter)
            opened.append(value.footer)
            unusable[i] = value.unusable is not None
        else:
            opened.append(next(base_iter))
    return compute_stats_from_footers(
        files,
        opened,
        partition_schema,
        data_schema,
        bloom_columns,
        fpp,
        progress,
        workers,
        unreadable=unusable,
    )


def open_footers(
    root: str, files: Sequence[DataFile], progress: bool | None = None, workers: int | None = None
) -> list[pq.ParquetFile]:
    """The opened parquet files (footers read) of ``files`` under ``root``, in order.

    Raises ``TableFormatError`` naming the first file (in order) that is gone or not parquet.
    """
    paths = [os.path.join(root, f.path) for f in files]
    return _parallel(_open_parquet, paths, _workers(workers), _show(progress), "reading footers")


def compute_stats_from_footers(
    files: Sequence[DataFile],
    footers: Sequence[pq.ParquetFile],
    partition_schema: pa.Schema,
    data_schema: pa.Schema | None = None,
    bloom_columns: Iterable[str] = (),
    fpp: float = 0.01,
    progress: bool | None = None,
    workers: int | None = None,
    arrow_schemas: Sequence[pa.Schema] | None = None,
    unreadable: np.ndarray | None = None,
) -> BuiltFiles:
    """``compute_stats`` of already opened files (``open_footers``): split so that a distributed
    build can look at the files' schemas (``arrow_schemas``, if the caller has them) first.
    ``unreadable`` marks files whose footer says nothing (a log file that does not decode): their
    row counts and data column statistics are unknown, their blooms none."""
    if not files:
        return BuiltFiles(files, FileStats([], [], {}, data_schema or pa.schema([])), {}, ())
    workers = _workers(workers)
    show = _show(progress)
    if arrow_schemas is None:
        arrow_schemas = [f.schema_arrow for f in footers]
    if data_schema is None:
        data_schema = unify_schemas(arrow_schemas)
    data_schema = pa.schema([f for f in data_schema if f.name not in partition_schema.names])
    stats = stats_from_footers(FileStats, [f.path for f in files], footers, data_schema, arrow_schemas)

    leaves = leaf_columns(data_schema)
    float_columns = [c for c, t in leaves.items() if pa.types.is_floating(t)]
    bloom_columns = list(dict.fromkeys(bloom_columns))
    unknown = [c for c in bloom_columns if c not in leaves]
    if unknown:
        raise TableFormatError(
            f"bloom filter columns {unknown} are not columns of the table ({sorted(leaves)})"
        )
    if float_columns or bloom_columns:
        extras = _parallel(
            lambda i: _scan_columns(footers[i], float_columns, bloom_columns, leaves, fpp),
            list(range(len(files))),
            workers,
            show,
            "NaN counts and bloom filters",
        )
        for c in float_columns:
            stats = stats.with_column(c, nan_count=pa.array([e[0].get(c) for e in extras], pa.int64()))
        blooms = {c: [e[1].get(c) for e in extras] for c in bloom_columns}
    else:
        blooms = {}
    if unreadable is not None and unreadable.any():
        stats = _forget(stats, unreadable)
        blooms = {
            c: [None if u else b for b, u in zip(bs, unreadable, strict=True)] for c, bs in blooms.items()
        }
    # Partition values come from folders, known whatever the file holds.
    stats = _with_partition_values(stats, files, partition_schema)
    return BuiltFiles(files, stats, blooms, tuple(partition_schema.names))


def _forget(stats: FileStats, unknown: np.ndarray) -> FileStats:
    """``stats`` with every value of the ``unknown`` files made null (unknown: such a file is kept
    by every predicate, never counted as empty)."""
    mask = pa.array(unknown)

    def blank(values: pa.Array) -> pa.Array:
        return pc.if_else(mask, pa.scalar(None, values.type), values)

    columns = {
        c: ColumnStats(blank(s.min), blank(s.max), blank(s.null_count), blank(s.nan_count))
        for c, s in stats.columns.items()
    }
    return FileStats(stats.files, blank(stats.row_count), columns, stats.schema)


def merge_built(parts: Sequence[BuiltFiles]) -> BuiltFiles:
    """The ``BuiltFiles`` of all files of ``parts``, in order: what ``compute_stats`` returns for
    the concatenated file list when every part was computed with the same ``data_schema``."""
    parts = [p for p in parts if len(p.files)]
    if not parts:
        return BuiltFiles([], FileStats([], [], {}, pa.schema([])), {}, ())
    first = parts[0]
    for p in parts[1:]:
        if not p.stats.schema.equals(first.stats.schema, check_metadata=True):
            raise ValueError(
                f"cannot merge stats of different schemas: {first.stats.schema} vs {p.stats.schema}"
            )
        if p.exact_columns != first.exact_columns or p.blooms.keys() != first.blooms.keys():
            raise ValueError("cannot merge stats built with different partition or bloom columns")
    return BuiltFiles(
        [f for p in parts for f in p.files],
        FileStats.concat([p.stats for p in parts], first.stats.schema),
        {c: [b for p in parts for b in p.blooms[c]] for c in first.blooms},
        first.exact_columns,
    )


def _workers(workers: int | None) -> int:
    return workers or min(8, (os.cpu_count() or 2) * 2)


def _show(progress: bool | None) -> bool:
    return sys.stderr.isatty() if progress is None else progress


def _open_parquet(path: str) -> pq.ParquetFile:
    with reading_data_file(path, doing="indexing", then="run sync again"):
        return pq.ParquetFile(path)


def _scan_columns(
    pf: pq.ParquetFile,
    floats: list[str],
    bloom_columns: list[str],
    leaves: dict[str, pa.DataType],
    fpp: float,
) -> tuple[dict[str, int | None], dict[str, BloomFilter | None]]:
    """Read only the float and bloom columns of one file: NaN counts and bloom filters."""
    present = set(leaf_columns(pf.schema_arrow))
    wanted = [c for c in dict.fromkeys(floats + bloom_columns) if c in present]
    table = pf.read(columns=wanted) if wanted else None
    nan_counts: dict[str, int | None] = {}
    for c in floats:
        if c in present and table is not None:
            arr = _column(table, c)
            nan_counts[c] = int(pc.sum(pc.is_nan(arr)).as_py() or 0) if len(arr) else 0
        else:
            nan_counts[c] = None  # a file without the column: unknown, never a guessed zero
    blooms: dict[str, BloomFilter | None] = {}
    for c in bloom_columns:
        if c in present and table is not None:
            arr = _column(table, c).cast(leaves[c])
            bloom = BloomFilter.for_entries(max(len(arr) - arr.null_count, 1), fpp)
            bloom.add_all(arr, type=leaves[c])
            blooms[c] = bloom
        else:
            blooms[c] = None
    return nan_counts, blooms


def column_path(schema: pa.Schema, name: str) -> tuple[str, ...] | None:
    """The fields leading to column ``name`` of ``schema``: a top-level column of that exact name
    first (``"a.b"`` may be one column), else a dotted path into structs, as predicates bind
    (``hudi_expr.binding.resolve``); None when ``schema`` has no such column."""
    if name in schema.names:
        return (name,)
    try:
        return resolve(schema, name).path
    except HudiExprError:
        return None


def top_field(schema: pa.Schema, name: str) -> str | None:
    """The top-level field of ``schema`` that holds column ``name`` (what a reader must read)."""
    path = column_path(schema, name)
    return None if path is None else path[0]


def _column(table: pa.Table, name: str) -> pa.Array:
    """Column ``name`` of ``table`` (a top-level name or a path into structs) as one array."""
    path = column_path(table.schema, name)
    if path is None:
        raise KeyError(f"no column {name!r} in {table.schema.names}")
    top = table[path[0]]
    # One chunk (a file of one row group): no copy (combine_chunks copies even one chunk).
    arr: Any = top.chunk(0) if top.num_chunks == 1 else top.combine_chunks()
    for p in path[1:]:
        # A NULL struct makes its field NULL: flatten would not say so, so carry the validity.
        arr = pc.struct_field(arr, p)
    return arr


def _with_partition_values(
    stats: FileStats, files: Sequence[DataFile], partition_schema: pa.Schema
) -> FileStats:
    if not len(partition_schema):
        return stats
    schema = pa.schema(list(stats.schema) + [f for f in partition_schema if f.name not in stats.schema.names])
    columns = dict(stats.columns)
    rows = stats.row_count
    for field in partition_schema:
        values = pa.array([f.partition_values.get(field.name) for f in files], field.type)
        is_null = values.is_null()
        zero = pa.array(np.zeros(len(files), dtype=np.int64))
        columns[field.name] = ColumnStats(
            min=values,
            max=values,
            null_count=pc.if_else(is_null, rows, zero),
            nan_count=zero,
        )
    return FileStats(stats.files, rows, columns, schema)


def _parallel(fn: Callable[[T], R], items: Sequence[T], workers: int, show: bool, what: str) -> list[R]:
    if not items:
        return []
    with tqdm(total=len(items), desc=what, unit="file", disable=not show, leave=False) as bar:
        if workers <= 1 or len(items) < 4:
            out = []
            for item in items:
                out.append(fn(item))
                bar.update()
            return out
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = []
            for r in pool.map(fn, items):
                results.append(r)
                bar.update()
            return results


def compute_file_keys(
    root: str,
    files: Sequence[DataFile],
    spec: RecordKeySpec,
    fpp: float,
    with_keys: bool = False,
    progress: bool | None = None,
    workers: int | None = None,
    *,
    ordering_field: str | None = None,
) -> FileKeys:
    """Key bounds and Hudi bloom filters of ``files`` (and every key, ``with_keys``, for a record
    index), and the records of its Hudi log files (``log_content.log_file_records``, with
    ``ordering_field``'s values: the table's merge ordering; None: commit time). A Hudi base file's
    footer filter and bounds are taken as they are; other files (and footers without them, or with
    a corrupt filter) have their key columns read, their bounds computed in Java order and a
    ``SIMPLE`` filter sized to their key count at ``fpp``."""
    paths = [os.path.join(root, f.path) for f in files]
    per_file = _parallel(
        lambda path: (
            _log_file_keys(path, spec, fpp, with_keys, ordering_field)
            if is_log_path(path)
            else (*_file_keys(path, spec, fpp, with_keys), None)
        ),
        paths,
        _workers(workers),
        _show(progress),
        "record keys",
    )
    keys = None
    if with_keys:
        arrays = [k for *_, k, _ in per_file]
        counts = np.array([len(k) if k is not None else 0 for k in arrays], dtype=np.int64)
        keys = pa.table(
            {
                "key": pa.concat_arrays([k for k in arrays if k is not None] or [pa.array([], pa.string())]),
                "file": pa.array(np.repeat(np.arange(len(files), dtype=np.int32), counts)),
            }
        )
    unread = np.array([lo is _UNREAD for lo, *_ in per_file], dtype=bool)
    records = [r for *_, r in per_file]
    return FileKeys(
        pa.array([None if lo is _UNREAD else lo for lo, *_ in per_file], pa.string()),
        pa.array([hi for _, hi, *_ in per_file], pa.string()),
        [f for _, _, f, *_ in per_file],
        keys,
        unread if unread.any() else None,
        records if any(r is not None for r in records) else None,
    )


# The lower bound of a file whose keys could not be read (a log file with a block not decoded).
_UNREAD: Any = object()


def _log_file_keys(
    path: str, spec: RecordKeySpec, fpp: float, with_keys: bool, ordering_field: str | None
) -> tuple[Any, str | None, HudiBloomFilter | None, pa.StringArray | None, LogFileRecords | None]:
    """A log file's key bounds and a ``SIMPLE`` filter of the keys of its data and delete records
    (a key deleted in a log is still that file group's to tag), and its records; ``_UNREAD`` when
    a block does not decode."""
    records = log_file_records(path, spec, ordering_field)
    if records is None:
        return _UNREAD, None, None, pa.array([], pa.string()) if with_keys else None, None
    keys = records.keys
    if keys.null_count:
        raise TableFormatError(f"log file {path} has {keys.null_count} records with a null record key")
    if not len(keys):
        return None, None, None, keys if with_keys else None, records
    order = java_argsort(keys)
    bloom = HudiBloomFilter.create(len(keys), fpp, SIMPLE)
    bloom.add_all(keys)
    low, high = keys[int(order[0])].as_py(), keys[int(order[-1])].as_py()
    return low, high, bloom, keys if with_keys else None, records


def _file_keys(
    path: str, spec: RecordKeySpec, fpp: float, with_keys: bool
) -> tuple[str | None, str | None, HudiBloomFilter | None, pa.StringArray | None]:
    pf = _open_parquet(path)
    footer_filter: HudiBloomFilter | None = None
    bounds = None
    if spec.column is not None:
        try:
            footer_filter = HudiBloomFilter.from_footer(pf.metadata)
        except HudiBloomFormatError:
            footer_filter = None  # a corrupt footer filter: read the keys instead, never trust it
        bounds = footer_key_bounds(pf.metadata)
        empty = pf.metadata.num_rows == 0
        if footer_filter is not None and (bounds is not None or empty) and not with_keys:
            return (*(bounds or (None, None)), footer_filter, None)
    present = pf.schema_arrow.names
    missing = [c for c in spec.read_columns if c not in present]
    if missing:
        raise RecordKeyError(
            f"record key column {missing[0]!r} is not a column of data file {path} (its columns: "
            f"{present}); name the key columns with record_key=[...]"
        )
    with reading_data_file(path, doing="indexing", then="run sync again"):
        table = pf.read(columns=list(spec.read_columns))
    keys = spec.keys_of(table)
    if keys.null_count:
        raise TableFormatError(f"data file {path} has {keys.null_count} rows with a null record key")
    if not len(keys):
        return None, None, footer_filter, keys if with_keys else None
    if bounds is None:
        order = java_argsort(keys)
        bounds = (keys[int(order[0])].as_py(), keys[int(order[-1])].as_py())
    if footer_filter is not None:  # Hudi's filter, bounds from its footer or from the keys
        return (*bounds, footer_filter, keys if with_keys else None)
    low, high = bounds
    bloom = HudiBloomFilter.create(len(keys), fpp, SIMPLE)
    bloom.add_all(keys)
    return low, high, bloom, keys if with_keys else None
