"""Where the rows of a merge-on-read table go, for the writer in ``hudi_mor.py``: partition paths,
the first commit's cut of sorted rows into file groups, the record key -> file group index that
sends updates and deletes where their key lives (as Hudi's index does), and the dealing of new
keys over existing groups. All of it over whole arrays."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import RecordKeyError
from index_store.record_key import RecordKeySpec

__all__ = ["KeyIndex", "deal", "group_cuts", "partition_paths", "runs"]


def partition_paths(rows: pa.Table, field: str | None, hive_style: bool) -> pa.Array:
    """Each row's partition path: the value's text as Hudi's key generators write it (the same
    rules as a simple record key), ``field=value`` when hive-style; "" without partitions."""
    if field is None:
        return pc.fill_null(pa.nulls(rows.num_rows, pa.string()), "")
    try:
        text = RecordKeySpec((field,)).encode(rows)
    except RecordKeyError as exc:
        raise ValueError(f"partition column {field!r}: {exc}") from exc
    if pc.any(pc.match_substring(text, "/")).as_py():
        raise ValueError(f"partition column {field!r} has values with '/', which would nest folders")
    if hive_style:
        text = pc.binary_join_element_wise(pa.scalar(f"{field}="), text, "")
    return text


def runs(values: pa.Array) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of equal values."""
    n = len(values)
    if n == 0:
        return []
    starts = [0]
    if n > 1:
        differ = pc.not_equal(values.slice(0, n - 1), values.slice(1)).to_numpy(zero_copy_only=False)
        starts += (np.flatnonzero(differ) + 1).tolist()
    return list(itertools.pairwise([*starts, n]))


def group_cuts(partitions: pa.Array, file_groups: int) -> list[tuple[int, int]]:
    """Rows sorted by partition cut into about ``file_groups`` runs: each partition gets groups
    in proportion to its rows (at least one, at most one per row), of sizes within one row."""
    total = len(partitions)
    cuts: list[tuple[int, int]] = []
    for lo, hi in runs(partitions):
        share = max(1, min(hi - lo, round(file_groups * (hi - lo) / total)))
        bounds = np.linspace(lo, hi, share + 1).round().astype(np.int64).tolist()
        cuts += list(itertools.pairwise(bounds))
    return cuts


class KeyIndex:
    """Every record key committed so far, each with a dense id (in the order first written) and
    its file group (a key never changes group)."""

    def __init__(self) -> None:
        self._chunks: list[pa.Array] = []
        self._keys: pa.Array | None = None  # the chunks combined, on demand
        self._groups: list[np.ndarray] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, keys: pa.Array, groups: np.ndarray) -> np.ndarray:
        """Record new keys; returns their ids."""
        self._chunks.append(keys)
        self._keys = None
        self._groups.append(np.asarray(groups, dtype=np.int32))
        self._size += len(keys)
        return np.arange(self._size - len(keys), self._size, dtype=np.int64)

    def ids(self, keys: pa.Array) -> np.ndarray:
        """The id of each of ``keys`` (distinct), -1 for keys never committed."""
        out = np.full(len(keys), -1, dtype=np.int64)
        if not self._size or not len(keys):
            return out
        if self._keys is None:
            self._keys = pa.chunked_array(self._chunks).combine_chunks()
        # hash the few keys asked and probe the many known, not the other way round
        found = np.flatnonzero(pc.is_in(self._keys, value_set=keys).to_numpy(zero_copy_only=False))
        which = pc.index_in(self._keys.take(pa.array(found)), value_set=keys).to_numpy()
        out[which] = found
        return out

    def groups(self, ids: np.ndarray) -> np.ndarray:
        """The file group of each id (-1 for -1)."""
        if not self._size:
            return np.full(len(ids), -1, dtype=np.int64)
        groups = np.concatenate(self._groups)
        return np.where(ids >= 0, groups[np.maximum(ids, 0)], -1)


def deal(
    partitions: pa.Array, groups_by_partition: dict[str, list[int]], choice: float | Sequence[int] | None
) -> np.ndarray:
    """A file group for each new key's row, among the groups of its partition that ``choice``
    picks (a fraction of them, evenly spread; or group indexes; None: all), round-robin."""
    out = np.empty(len(partitions), dtype=np.int64)
    for partition in pc.unique(partitions).to_pylist():
        here = groups_by_partition.get(partition, [])
        if choice is None:
            picked = here
        elif isinstance(choice, int | float):
            count = max(1, int(np.ceil(float(choice) * len(here)))) if here else 0
            picked = [here[i] for i in np.linspace(0, len(here) - 1, count).round().astype(int)]
        else:
            chosen = set(choice)
            picked = [g for g in here if g in chosen]
        if not picked:
            raise ValueError(f"no file group of partition {partition!r} to take inserts in its log files")
        rows = np.flatnonzero(pc.equal(partitions, partition).to_numpy(zero_copy_only=False))
        out[rows] = np.asarray(picked)[np.arange(len(rows)) % len(picked)]
    return out
