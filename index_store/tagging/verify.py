"""RFC-37's last stage (Hudi's ``HoodieKeyLookupHandle``): confirm each (key, candidate file) pair
by reading the file's key column, only the row groups whose statistics admit one of its keys."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.data_files import reading_data_file
from index_store.record_key import RecordKeySpec

__all__ = [
    "Verified",
    "column_indices",
    "row_groups_admitting",
    "rows_that_may_match",
    "thread_pool",
    "verify_pairs",
]


@dataclass(frozen=True)
class Verified:
    """Which pairs hold, and what reading them cost."""

    confirmed: np.ndarray  # per pair
    files_opened: int  # footers read
    files_read: int  # files some of whose key column was read
    row_groups_read: int
    bytes_read: int  # compressed bytes of the key column chunks read


def verify_pairs(
    root: str,
    paths: Sequence[str],
    keys: pa.StringArray,
    key_idx: np.ndarray,
    file_pos: np.ndarray,
    spec: RecordKeySpec,
    workers: int | None = None,
) -> Verified:
    """Per pair ``j``: is ``keys[key_idx[j]]`` a key of the file ``paths[file_pos[j]]``?

    Pairs are grouped by file; files are read on a thread pool (pyarrow releases the GIL), each
    once, and only its row groups that may hold one of its keys."""
    confirmed = np.zeros(key_idx.size, dtype=bool)
    if not key_idx.size:
        return Verified(confirmed, 0, 0, 0, 0)
    order = np.argsort(file_pos, kind="stable")
    ordered = file_pos[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    files = ordered[starts]
    bounds = np.append(starts, order.size)

    def one(i: int) -> tuple[np.ndarray, int, int]:
        pairs = order[bounds[i] : bounds[i + 1]]
        wanted = keys.take(pa.array(key_idx[pairs]))
        path = os.path.join(root, paths[int(files[i])])
        found, groups, size = _lookup_file(path, wanted, spec)
        return pairs[found], groups, size

    # One file is read here: handing it to a thread costs more than reading it.
    results = [one(0)] if files.size == 1 else list(thread_pool(workers).map(one, range(files.size)))
    for pairs, _, _ in results:
        confirmed[pairs] = True
    return Verified(
        confirmed,
        len(results),
        sum(1 for _, groups, _ in results if groups),
        sum(groups for _, groups, _ in results),
        sum(size for _, _, size in results),
    )


_POOLS: dict[int, ThreadPoolExecutor] = {}


def thread_pool(workers: int | None) -> ThreadPoolExecutor:
    """A thread pool kept for the process: a tag of a few keys must not pay for starting threads."""
    size = workers or min(8, (os.cpu_count() or 2) * 2)
    if size not in _POOLS:
        _POOLS[size] = ThreadPoolExecutor(max_workers=size, thread_name_prefix="hudi-index-verify")
    return _POOLS[size]


def _lookup_file(path: str, wanted: pa.StringArray, spec: RecordKeySpec) -> tuple[np.ndarray, int, int]:
    """Which of ``wanted`` are keys of the file; the row groups and bytes read to find out."""
    with reading_data_file(path, doing="tagging", then="run sync and tag again"):
        pf = pq.ParquetFile(path)
        groups = row_groups_admitting(pf, wanted, spec)
        if not groups:
            return np.zeros(0, dtype=np.int64), 0, 0
        table = pf.read_row_groups(groups, columns=list(spec.read_columns))
    stored = spec.keys_of(rows_that_may_match(table, wanted, spec))
    hit = pc.is_in(wanted, value_set=stored).to_numpy(zero_copy_only=False)
    size = sum(
        pf.metadata.row_group(g).column(c).total_compressed_size
        for g in groups
        for c in column_indices(pf, spec.read_columns)
    )
    return np.flatnonzero(hit), len(groups), size


def rows_that_may_match(table: pa.Table, wanted: pa.StringArray, spec: RecordKeySpec) -> pa.Table:
    """The rows worth encoding: when keys are made from fields and every wanted key starts with an
    integer, only rows holding one of those integers (encoding every row costs more than this)."""
    if spec.column is not None or not spec.fields:
        return table
    first = table.column(spec.fields[0]) if spec.fields[0] in table.column_names else None
    if first is None or not pa.types.is_integer(first.type) or first.type == pa.uint64():
        return table
    values, decoded = spec.leading_integers(wanted)
    if not pc.all(decoded).as_py():
        return table
    return table.filter(pc.is_in(first.cast(pa.int64()), value_set=values))


def column_indices(pf: pq.ParquetFile, names: Sequence[str]) -> list[int]:
    schema = pf.metadata.schema
    return [i for i in range(len(schema)) if schema.column(i).path in names]


def row_groups_admitting(pf: pq.ParquetFile, wanted: pa.StringArray, spec: RecordKeySpec) -> list[int]:
    """Row groups whose min/max of the stored key column admit a wanted key (all of them when the
    keys are not stored as one string column, or a group has no usable statistics)."""
    meta = pf.metadata
    groups = list(range(meta.num_row_groups))
    if spec.column is None or meta.num_row_groups <= 1:
        return groups
    indices = column_indices(pf, [spec.column])
    if len(indices) != 1:
        return groups
    # Parquet orders strings as unsigned bytes, as Arrow compares binary: compare the UTF-8 bytes.
    probe = wanted.cast(pa.binary())
    keep = []
    for g in groups:  # one vectorized test per row group, over all the file's wanted keys
        stats = meta.row_group(g).column(indices[0]).statistics
        if stats is None or not stats.has_min_max:
            keep.append(g)
            continue
        low = pa.scalar(_as_bytes(stats.min), pa.binary())
        high = pa.scalar(_as_bytes(stats.max), pa.binary())
        if pc.any(pc.and_(pc.greater_equal(probe, low), pc.less_equal(probe, high))).as_py():
            keep.append(g)
    return keep


def _as_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)
