"""The table ``tag`` returns, from the confirmed (key, location) pairs.

A location is where a key's live record is: a data file (plain and copy-on-write tables: the
index's live files) or a merge-on-read file slice (its base file, or its latest log file when it
has none). Each is reported as ``file`` (absolute path), ``file_id`` (the file group: Hudi's file
id, a plain file's name stem) and ``partition``. Rows come in input order, a key found in several
locations once per location, an insert (found nowhere) once with ``file`` and ``file_id`` null.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import unique_sorted
from index_store.errors import DuplicateKeyError

__all__ = ["RESULT_SCHEMA", "Located", "Locations", "Rows", "result_rows", "result_table"]

RESULT_SCHEMA = pa.schema(
    [("key", pa.string()), ("partition", pa.string()), ("file", pa.string()), ("file_id", pa.string())]
)


@dataclass(frozen=True)
class Locations:
    """Where keys may be found, by position: each location's table-relative file, its partition
    path, and its file id (given, or worked out from the paths of the rows that need one, so that
    the cost follows the rows returned, not the table)."""

    paths: pa.StringArray
    partitions: pa.StringArray
    id_rule: Callable[[pa.StringArray], pa.StringArray]  # file ids of table-relative paths
    file_ids: pa.StringArray | None = None  # per location, when known already

    def __len__(self) -> int:
        return len(self.paths)

    def ids_at(self, take: pa.Array) -> pa.StringArray:
        """The file ids of the locations at positions ``take``."""
        if self.file_ids is not None:
            return self.file_ids.take(take)
        return self.id_rule(self.paths.take(take))


@dataclass(frozen=True)
class Located:
    """Confirmed (key, location) pairs (``key_idx`` into the keys, ``loc_pos`` into ``locations``)
    found another way than from the index's files alone (merge-on-read slices), and the
    ``TagStats`` counters and seconds of finding them."""

    key_idx: np.ndarray
    loc_pos: np.ndarray
    locations: Locations
    counters: dict[str, int]
    seconds: dict[str, float]


@dataclass(frozen=True)
class Rows:
    """The output rows: per row its key's input position and location (-1: an insert); per key
    how many locations hold it."""

    row_key: np.ndarray
    location: np.ndarray
    per_key: np.ndarray


def result_rows(
    n_keys: int,
    key_idx: np.ndarray,
    loc_pos: np.ndarray,
    locations: Locations,
    on_duplicate: str,
    root: str,
    key_text: Callable[[int], str],
) -> Rows:
    """The rows of the confirmed pairs (``key_idx``, ``loc_pos``), in input order, a key in several
    locations once per location in location order. With ``on_duplicate="error"`` a key in several
    locations raises ``DuplicateKeyError`` (``key_text`` names it, ``root`` the table)."""
    n = max(len(locations), 1)
    pairs = unique_sorted(key_idx.astype(np.int64, copy=False) * n + loc_pos)  # by key, then location
    key_idx, loc_pos = pairs // n, pairs % n
    per_key = np.bincount(key_idx, minlength=n_keys).astype(np.int64)
    twice = np.flatnonzero(per_key > 1)
    if twice.size and on_duplicate == "error":
        k = int(twice[0])
        where = sorted(locations.paths[int(p)].as_py() for p in loc_pos[key_idx == k])
        raise DuplicateKeyError(
            f"{twice.size} record keys are in more than one live data file of {root}, e.g. "
            f"{key_text(k)!r} in {where}: the table's keys are not unique (run hudi-index check; "
            "on_duplicate='all' tags each copy, as Hudi does)"
        )
    rows_per_key = np.maximum(per_key, 1)
    row_key = np.repeat(np.arange(n_keys, dtype=np.int64), rows_per_key)
    location = np.full(row_key.size, -1, dtype=np.int64)
    if key_idx.size:
        first_row = np.cumsum(rows_per_key) - rows_per_key  # of each key
        first_pair = np.cumsum(per_key) - per_key
        location[first_row[key_idx] + np.arange(key_idx.size) - first_pair[key_idx]] = loc_pos
    return Rows(row_key, location, per_key)


def result_table(
    root: str,
    keys: pa.StringArray,
    partitions: pa.StringArray | None,
    rows: Rows,
    locations: Locations,
    metadata: dict[bytes, bytes],
) -> pa.Table:
    """``key``, ``partition`` (the one given per key, else the location's), ``file`` (absolute)
    and ``file_id`` per row; nulls for an insert."""
    n_rows = rows.row_key.size
    has_file = rows.location >= 0
    found = pa.array(has_file)
    nothing = pa.scalar(None, pa.string())
    take = pa.array(np.where(has_file, rows.location, 0), pa.int64())
    if len(locations):
        prefix = root.rstrip(os.sep) + os.sep
        files = pc.binary_join_element_wise(pa.scalar(prefix), locations.paths.take(take), "")
        files = pc.if_else(found, files, nothing)
        file_ids = pc.if_else(found, locations.ids_at(take), nothing)
    else:
        files = file_ids = pa.nulls(n_rows, pa.string())
    same_rows = n_rows == len(keys)
    if partitions is not None:
        part = partitions if same_rows else partitions.take(pa.array(rows.row_key, pa.int64()))
    elif len(locations):
        part = pc.if_else(found, locations.partitions.take(take), nothing)
    else:
        part = pa.nulls(n_rows, pa.string())
    out_keys = keys if same_rows else keys.take(pa.array(rows.row_key, pa.int64()))
    columns = [out_keys, part.cast(pa.string()), files.cast(pa.string()), file_ids.cast(pa.string())]
    return pa.table(columns, schema=RESULT_SCHEMA.with_metadata(metadata))
