"""The global term dictionary of a secondary index: per key, the base files holding it and how many
rows (for a term index, per term), as Lucene keeps a term dictionary beside its postings.

A count, an EXISTS, the candidate files of an equality / IN / range and the exact selectivity of a
leaf come from one lookup here instead of one lookup per candidate index file. Stored as the
``secondary_dict`` partition (``index_store.partitions.secondary_dict``), one file per (index type,
column), written by ``build_index`` from the index files it builds (and the previous dictionary's
entries of the files it keeps), trimmed by ``drop_index`` and ``compact``. A base file is answered
from the dictionary only while the manifest names the index file its entries came from
(``Dictionary.covers``): other files (rewritten, re-indexed, or indexed before the dictionary
existed) go the per-file way, so a stale or missing dictionary is slower, never wrong.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import EqualTo, Expression, FileStats, In, might_match
from index_store.arrays import expand_ranges, unique_sorted
from index_store.errors import IndexCorruptError
from index_store.partitions.secondary_dict import (
    DictionaryMeta,
    coverage_keys,
    open_dictionary,
    write_dictionary,
)
from index_store.secondary.build import staged_path
from index_store.secondary.format import IndexFile

__all__ = [
    "Dictionary",
    "dictionary_changes",
    "fresh_entries",
    "load_dictionaries",
]

ColumnKey = tuple[str, str]  # (index type, column)
# Decoded row groups a dictionary keeps for its next lookups (a hot key costs no parquet read).
GROUP_CACHE_BYTES = 64 << 20
# A lookup reading more row groups than this (a wide range) does not keep them: it would push
# out the groups of the keys asked again and again.
CACHED_READ_GROUPS = 16
_NO_ENTRIES = (np.zeros(0, np.int64), np.zeros(0, np.float64))


def _file_entries(path: Path, column: str, file_idx: int) -> pa.Table:
    """One index file's entries of ``column`` as dictionary rows (``key``, ``file_idx``, ``rows``)."""
    handle = IndexFile(path)
    if column not in handle.layout:
        raise IndexCorruptError(str(path), f"does not hold column {column!r}")
    start, stop = handle.layout[column]
    try:
        table = pq.ParquetFile(path).read_row_groups(list(range(start, stop)), columns=[column, "count"])
    except (pa.ArrowException, OSError) as exc:
        raise IndexCorruptError(str(path), f"unreadable entries of {column!r} ({exc})") from None
    return pa.table(
        {
            "key": table[column],
            "file_idx": pa.repeat(pa.scalar(file_idx, pa.int64()), len(table)),
            "rows": table["count"].cast(pa.int64()),
        }
    )


def fresh_entries(folder: Path, built: pa.Table) -> dict[ColumnKey, pa.Table]:
    """The dictionary rows of freshly built index files (``built``: their manifest rows, each
    ``index_file`` staged in ``folder`` at ``staged_path``), per (index type, column). Read on the
    worker pool."""
    from index_store.secondary.select import worker_pool

    jobs = list(
        zip(
            built["index_type"].to_pylist(),
            built["column"].to_pylist(),
            built["index_file"].to_pylist(),
            built["file_idx"].to_pylist(),
            strict=True,
        )
    )
    parts = list(worker_pool().map(lambda j: _file_entries(staged_path(folder, j[2]), j[1], j[3]), jobs))
    out: dict[ColumnKey, list[pa.Table]] = {}
    for (kind, column, _, _), part in zip(jobs, parts, strict=True):
        out.setdefault((kind, column), []).append(part)
    return {k: pa.concat_tables(v) for k, v in out.items()}


def dictionary_changes(
    root: Path,
    live: Sequence[str],
    manifest: pa.Table,
    fresh: Mapping[ColumnKey, pa.Table],
    fresh_idx: Mapping[ColumnKey, np.ndarray],
) -> tuple[list[str], list[str]]:
    """The dictionary files to add and to retire for a commit whose manifest is ``manifest``:
    (index type, column) pairs with ``fresh`` entries (of the base files ``fresh_idx``, whose
    manifest rows are in ``manifest``) get a new file holding them and the previous file's
    entries of the index files ``manifest`` still names; pairs no longer in ``manifest`` lose
    theirs; the others keep theirs as they are."""
    current: dict[ColumnKey, tuple[str, pq.ParquetFile, DictionaryMeta]] = {}
    for rel in live:
        pf, meta = open_dictionary(root, rel)
        current[(meta.index_type, meta.column)] = (rel, pf, meta)
    present = set(zip(manifest["index_type"].to_pylist(), manifest["column"].to_pylist(), strict=True))
    added, removed = [], []
    for key, (rel, _, _) in current.items():
        if key not in present or key in fresh:
            removed.append(rel)
    for key, entries in fresh.items():
        if key not in present:
            continue
        mine = manifest.filter(
            pc.and_(pc.equal(manifest["index_type"], key[0]), pc.equal(manifest["column"], key[1]))
        )
        new_idx = pa.array(fresh_idx[key], pa.int64())
        is_new = pc.is_in(mine["file_idx"], value_set=new_idx)
        parts = [entries]
        covered_idx = [mine["file_idx"].filter(is_new).to_numpy()]
        covered_version = [mine["version"].filter(is_new).to_numpy()]
        if key in current:
            _, pf, meta = current[key]
            old = mine.filter(pc.invert(is_new))
            still = pc.is_in(
                coverage_keys(meta.file_idx, meta.version),
                value_set=coverage_keys(old["file_idx"], old["version"]),
            ).to_numpy(zero_copy_only=False)
            if still.any():
                try:
                    table = pf.read()
                except (pa.ArrowException, OSError) as exc:
                    raise IndexCorruptError(
                        str(root / current[key][0]), f"unreadable parquet ({exc})"
                    ) from None
                keep = pa.array(meta.file_idx[still], pa.int64())
                parts.append(table.filter(pc.is_in(table["file_idx"], value_set=keep)).cast(entries.schema))
                covered_idx.append(meta.file_idx[still])
                covered_version.append(meta.version[still])
        meta_new = DictionaryMeta(
            key[0], key[1], np.concatenate(covered_idx), np.concatenate(covered_version)
        )
        added.append(write_dictionary(root, pa.concat_tables(parts), meta_new))
    return added, removed


@dataclass(frozen=True)
class Lookup:
    """One dictionary lookup against candidate files: rows per candidate, and which are covered."""

    rows: np.ndarray  # float64 per candidate: rows holding a key the lookup selects (0 if uncovered)
    covered: np.ndarray  # bool per candidate: the dictionary answers for it


@dataclass(frozen=True)
class _Group:
    """One decoded row group of a dictionary: its entries, as arrays a lookup indexes directly."""

    table: pa.Table  # key, file_idx, rows
    file_idx: np.ndarray  # int64
    rows: np.ndarray  # int64
    keys: np.ndarray | None  # the non-null keys when numbers in ascending order (else None)
    nbytes: int

    @classmethod
    def of(cls, table: pa.Table, path: str) -> _Group:
        try:
            file_idx = table["file_idx"].to_numpy().astype(np.int64, copy=False)
            rows = table["rows"].to_numpy().astype(np.int64, copy=False)
        except (pa.ArrowException, ValueError, TypeError, KeyError) as exc:
            raise _unexpected(path, exc) from None
        keys = _ascending_numbers(table["key"])
        return cls(table, file_idx, rows, keys, table.nbytes + file_idx.nbytes + rows.nbytes)

    def positions(self, wanted: np.ndarray) -> np.ndarray | None:
        """Positions of the entries whose key is one of ``wanted`` (distinct, ascending, as numpy
        holds the key type), by binary search; None where the keys are not ascending numbers."""
        if self.keys is None:
            return None
        lo = np.searchsorted(self.keys, wanted, side="left")
        hi = np.searchsorted(self.keys, wanted, side="right")
        return expand_ranges(lo, hi - lo)


def _unexpected(path: str | Path, exc: Exception) -> IndexCorruptError:
    return IndexCorruptError(str(path), f"entries of an unexpected type ({exc})")


def _ascending_numbers(keys: pa.ChunkedArray) -> np.ndarray | None:
    """An integer or temporal key column's non-null keys as numpy values when ascending (nulls
    sort last in a dictionary), else None: a lookup then hashes instead (never trusts an order
    the file does not have)."""
    t = keys.type
    if not (pa.types.is_integer(t) or pa.types.is_temporal(t)):
        return None
    valid = len(keys) - keys.null_count
    if keys.slice(valid).null_count != len(keys) - valid:
        return None  # a null before the end: not the dictionary's order
    try:
        out = keys.slice(0, valid).to_numpy()
    except (pa.ArrowException, ValueError, TypeError):
        return None
    if len(out) > 1 and not bool(np.all(out[1:] >= out[:-1])):
        return None
    return out


class Dictionary:
    """An opened dictionary file of one (index type, column): coverage checks and lookups."""

    def __init__(self, root: Path, rel: str) -> None:
        self.path = root / rel
        self._pf, self.meta = open_dictionary(root, rel)
        self._coverage = coverage_keys(self.meta.file_idx, self.meta.version)
        self._stats: FileStats | None = None
        self._group_bounds: list[tuple[Any, Any] | bool] | None = None
        self._bounds: tuple[np.ndarray, np.ndarray, np.ndarray, list[int]] | Literal[False] | None = None
        self._key_type = self._pf.schema_arrow.field("key").type
        self._cache: OrderedDict[int, _Group] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    def covers(self, file_idx: pa.Array, version: pa.Array) -> np.ndarray:
        """Per (file_idx, manifest version) pair: are its entries here? (null pairs: no)."""
        keys = coverage_keys(file_idx, version)
        found = pc.is_in(keys, value_set=self._coverage)
        return pc.fill_null(found, False).to_numpy(zero_copy_only=False)

    def lookup(self, keys: Expression, file_idx: np.ndarray, covered: np.ndarray) -> Lookup:
        """Rows per candidate (``file_idx``) holding a key where ``keys`` (bound over a column
        named like the indexed one, of the key type) is TRUE; ``covered`` says which candidates
        the caller found covered (``covers``), the others get 0 and stay uncovered."""
        out: np.ndarray = np.zeros(len(file_idx), dtype=np.float64)
        if not covered.any():
            return Lookup(out, covered)
        one = self._one_integer(keys)
        values = _point_values(keys) if one is None else None
        if one is None and values is None:
            holders, weights = self._filtered(keys)
        else:
            holders, weights = self._points(values, one)
        if len(holders):
            # Candidates by file_idx through one sort (no hash table built per lookup).
            order = np.argsort(file_idx, kind="stable")
            ordered = np.asarray(file_idx, dtype=np.int64)[order]
            at = np.minimum(np.searchsorted(ordered, holders), len(ordered) - 1)
            found = ordered[at] == holders
            out = np.bincount(order[at[found]], weights=weights[found], minlength=len(file_idx))
        return Lookup(np.where(covered, out, 0.0), covered)

    def _filtered(self, keys: Expression) -> tuple[np.ndarray, np.ndarray]:
        """(file_idx, rows) of the entries whose key ``keys`` selects: the row groups statistics
        admit, filtered by the expression (ranges, and keys ``_point_values`` does not take)."""
        groups = self._groups(keys)
        if not groups:
            return _NO_ENTRIES
        table = pa.concat_tables([group.table for group in self._read(groups)])
        named = table.rename_columns([self.meta.column, "file_idx", "rows"])
        try:
            selected = named.filter(keys.to_pyarrow())
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise _unexpected(self.path, exc) from None
        return (
            selected["file_idx"].to_numpy().astype(np.int64, copy=False),
            selected["rows"].to_numpy().astype(np.float64),
        )

    def _one_integer(self, keys: Expression) -> np.ndarray | None:
        """``keys``'s one key as numpy when it is ``key = literal`` on an integer key (the most
        common lookup: no arrow array made and converted for it), else None."""
        if not (isinstance(keys, EqualTo) and pa.types.is_integer(self._key_type)):
            return None
        literal = keys.literal
        if not isinstance(literal, pa.Scalar) or literal.type != self._key_type:
            return None
        return np.array([literal.as_py()], dtype=self._key_type.to_pandas_dtype())

    def _points(self, values: pa.Array | None, wanted: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(file_idx, rows) of the entries whose key is one of ``values`` (``wanted``: the same,
        distinct, ascending, as numpy holds the key type, if known; ``values`` may then be None):
        a binary search in each admitting row group's sorted keys (a hash lookup where the keys
        are not numbers)."""
        if wanted is None and values is not None:
            try:  # distinct and ascending: IN (5, 5) counts key 5's rows once
                wanted = unique_sorted(values.cast(self._key_type).to_numpy(zero_copy_only=False))
            except (pa.ArrowException, ValueError, TypeError):
                wanted = None  # not of the key type: every group, hashed
        holders, weights = [], []
        for group in self._read(self._point_groups(wanted)):
            at = group.positions(wanted) if wanted is not None else None
            if at is None:  # keys not in ascending order (or not numbers): hashed
                if values is None:
                    values = pa.array(wanted, self._key_type)
                try:
                    hit = pc.is_in(group.table["key"], value_set=values)
                except (pa.ArrowException, ValueError, TypeError) as exc:
                    raise _unexpected(self.path, exc) from None
                at = np.flatnonzero(pc.fill_null(hit, False).to_numpy(zero_copy_only=False))
            holders.append(group.file_idx[at])
            weights.append(group.rows[at])
        if not holders:
            return _NO_ENTRIES
        return np.concatenate(holders), np.concatenate(weights).astype(np.float64)

    def _read(self, groups: Sequence[int]) -> list[_Group]:
        """Row groups ``groups`` decoded: from the cache of recently used groups, the others in one
        read (kept for next time when few: the least recently used leave past ``GROUP_CACHE_BYTES``)."""
        with self._lock:  # planners on several threads share a version's dictionaries
            return self._read_locked(groups)

    def _read_locked(self, groups: Sequence[int]) -> list[_Group]:
        missing = [g for g in groups if g not in self._cache]
        fresh: dict[int, _Group] = {}
        if missing:
            try:
                table = self._pf.read_row_groups(missing)
            except (pa.ArrowException, OSError) as exc:
                raise IndexCorruptError(str(self.path), f"unreadable entries ({exc})") from None
            md = self._pf.metadata
            start = 0
            for g in missing:
                n = md.row_group(g).num_rows
                fresh[g] = _Group.of(table.slice(start, n), str(self.path))
                start += n
            if len(missing) <= CACHED_READ_GROUPS:
                for g, group in fresh.items():
                    self._cache[g] = group
                    self._cached_bytes += group.nbytes
        out = []
        for g in groups:
            if g in fresh:
                out.append(fresh[g])
            else:
                self._cache.move_to_end(g)
                out.append(self._cache[g])
        while self._cached_bytes > GROUP_CACHE_BYTES and self._cache:
            _, old = self._cache.popitem(last=False)
            self._cached_bytes -= old.nbytes
        return out

    def _point_groups(self, wanted: np.ndarray | None) -> list[int]:
        """The row groups whose key range holds one of ``wanted`` (``_points``'s keys; None: every
        group) by two binary searches over the groups' bounds, and every group whose bounds are
        unknown."""
        fences = self._fences()
        if fences is None or wanted is None:
            return list(range(self._pf.metadata.num_row_groups))
        bounded, mins, maxs, unknown = fences
        lo = np.searchsorted(wanted, mins, side="left")
        hi = np.searchsorted(wanted, maxs, side="right")
        return sorted([int(g) for g in bounded[hi > lo]] + unknown)

    def _row_group_bounds(self) -> list[tuple[Any, Any] | bool]:
        """Each row group's smallest and largest key from its statistics, read once; True for a
        group of NULL keys only (no value is there), False where the statistics do not say."""
        if self._group_bounds is None:
            md = self._pf.metadata
            bounds: list[tuple[Any, Any] | bool] = []
            for g in range(md.num_row_groups):
                st = md.row_group(g).column(0).statistics
                if st is not None and st.has_min_max:
                    bounds.append((st.min, st.max))
                else:
                    # Nulls sort last: a dictionary with NULL keys may end in groups of them.
                    rows = md.row_group(g).num_rows
                    nulls = st is not None and st.has_null_count and st.null_count == rows > 0
                    bounds.append(bool(nulls))
            self._group_bounds = bounds
        return self._group_bounds

    def _fences(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]] | None:
        """The row groups with both bounds, their smallest and largest keys (as numpy holds the
        key type), and the groups whose bounds are unknown (None: bounds not of the key type)."""
        if self._bounds is None:
            bounds = self._row_group_bounds()
            self._bounds = False
            pairs = [(g, b) for g, b in enumerate(bounds) if isinstance(b, tuple)]
            unknown = [g for g, b in enumerate(bounds) if b is False]
            try:
                mins = pa.array([b[0] for _, b in pairs], self._key_type).to_numpy(zero_copy_only=False)
                maxs = pa.array([b[1] for _, b in pairs], self._key_type).to_numpy(zero_copy_only=False)
                self._bounds = (np.array([g for g, _ in pairs], dtype=np.int64), mins, maxs, unknown)
            except (pa.ArrowException, ValueError, TypeError):
                pass
        return self._bounds or None

    def _groups(self, keys: Expression) -> list[int]:
        """The row groups whose key range may hold a key ``keys`` selects (parquet statistics)."""
        md = self._pf.metadata
        n = md.num_row_groups
        if n <= 1:
            return list(range(n))
        if self._stats is None:
            records = [
                {
                    "file": str(g),
                    "row_count": md.row_group(g).num_rows,
                    "stats": {self.meta.column: _group_stats(b, md.row_group(g).num_rows)},
                }
                for g, b in enumerate(self._row_group_bounds())
            ]
            try:
                self._stats = FileStats.from_pylist(
                    records, pa.schema([pa.field(self.meta.column, self._key_type)])
                )
            except (ValueError, TypeError, pa.ArrowException):
                return list(range(n))
        try:
            keep = might_match(keys, self._stats).to_numpy(zero_copy_only=False)
        except (ValueError, TypeError, pa.ArrowException):
            return list(range(n))
        return [int(g) for g in np.flatnonzero(keep)]


def _group_stats(bounds: tuple[Any, Any] | bool, rows: int) -> dict[str, Any]:
    """A row group's statistics as ``FileStats.from_pylist`` takes them (see ``_row_group_bounds``)."""
    if isinstance(bounds, tuple):
        return {"min": bounds[0], "max": bounds[1]}
    return {"null_count": rows} if bounds else {}


def _point_values(keys: Expression) -> pa.Array | None:
    """The keys of an ``=`` or ``IN`` leaf on an integer, date, timestamp or string key, else None
    (floats keep the general filter: NaN and -0.0 compare by SQL's rules there, not by value)."""
    if isinstance(keys, EqualTo):
        values = pa.array([keys.literal])
    elif isinstance(keys, In) and isinstance(keys.values, pa.Array):
        values = keys.values
    else:
        return None
    t = values.type
    if (
        pa.types.is_integer(t)
        or pa.types.is_temporal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
    ):
        return values
    return None


def load_dictionaries(root: Path, live: Sequence[str]) -> dict[ColumnKey, Dictionary]:
    """The live dictionaries, by (index type, column); ``IndexCorruptError`` for an unreadable one."""
    out = {}
    for rel in live:
        d = Dictionary(root, rel)
        out[(d.meta.index_type, d.meta.column)] = d
    return out
