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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_expr import EqualTo, Expression, FileStats, In, might_match
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


class Dictionary:
    """An opened dictionary file of one (index type, column): coverage checks and lookups."""

    def __init__(self, root: Path, rel: str) -> None:
        self.path = root / rel
        self._pf, self.meta = open_dictionary(root, rel)
        self._coverage = coverage_keys(self.meta.file_idx, self.meta.version)
        self._stats: FileStats | None = None
        self._group_bounds: list[tuple[Any, Any] | None] | None = None
        self._bounds: tuple[pa.Array, pa.Array] | Literal[False] | None = None

    def covers(self, file_idx: pa.Array, version: pa.Array) -> np.ndarray:
        """Per (file_idx, manifest version) pair: are its entries here? (null pairs: no)."""
        keys = coverage_keys(file_idx, version)
        found = pc.is_in(keys, value_set=self._coverage)
        return pc.fill_null(found, False).to_numpy(zero_copy_only=False)

    def lookup(self, keys: Expression, file_idx: np.ndarray, covered: np.ndarray) -> Lookup:
        """Rows per candidate (``file_idx``) holding a key where ``keys`` (bound over a column
        named like the indexed one, of the key type) is TRUE; ``covered`` says which candidates
        the caller found covered (``covers``), the others get 0 and stay uncovered."""
        values = _point_values(keys)
        groups = self._groups(keys) if values is None else self._point_groups(values)
        out: np.ndarray = np.zeros(len(file_idx), dtype=np.float64)
        if groups and covered.any():
            try:
                table = self._pf.read_row_groups(groups)
            except (pa.ArrowException, OSError) as exc:
                raise IndexCorruptError(str(self.path), f"unreadable entries ({exc})") from None
            named = table.rename_columns([self.meta.column, "file_idx", "rows"])
            try:
                if values is None:
                    selected = named.filter(keys.to_pyarrow())
                else:  # a hash lookup costs a third of a filter planned by Acero
                    selected = named.filter(pc.is_in(named[self.meta.column], value_set=values))
            except (pa.ArrowException, ValueError, TypeError) as exc:
                raise IndexCorruptError(str(self.path), f"entries of an unexpected type ({exc})") from None
            where = pc.index_in(selected["file_idx"], value_set=pa.array(file_idx, pa.int64()))
            found = pc.is_valid(where).to_numpy(zero_copy_only=False)
            pos = pc.fill_null(where, 0).to_numpy(zero_copy_only=False).astype(np.int64)
            weights = selected["rows"].to_numpy(zero_copy_only=False).astype(np.float64)
            out = np.bincount(pos[found], weights=weights[found], minlength=len(file_idx))
        return Lookup(np.where(covered, out, 0.0), covered)

    def _point_groups(self, values: pa.Array) -> list[int]:
        """The row groups whose key range holds one of ``values`` (sorted keys: two binary
        searches over the groups' bounds per value, no expression evaluated)."""
        fences = self._fences()
        if fences is None:
            return list(range(self._pf.metadata.num_row_groups))
        mins, maxs = fences
        try:
            wanted = np.sort(values.cast(mins.type).to_numpy(zero_copy_only=False))
        except (pa.ArrowException, ValueError, TypeError):
            return list(range(len(mins)))
        lo = np.searchsorted(wanted, mins.to_numpy(zero_copy_only=False), side="left")
        hi = np.searchsorted(wanted, maxs.to_numpy(zero_copy_only=False), side="right")
        return [int(g) for g in np.flatnonzero(hi > lo)]

    def _row_group_bounds(self) -> list[tuple[Any, Any] | None]:
        """Each row group's smallest and largest key from its statistics (None: not both),
        read once."""
        if self._group_bounds is None:
            md = self._pf.metadata
            bounds: list[tuple[Any, Any] | None] = []
            for g in range(md.num_row_groups):
                st = md.row_group(g).column(0).statistics
                bounds.append((st.min, st.max) if st is not None and st.has_min_max else None)
            self._group_bounds = bounds
        return self._group_bounds

    def _fences(self) -> tuple[pa.Array, pa.Array] | None:
        """Each row group's smallest and largest key as arrays (None: a group without both)."""
        if self._bounds is None:
            bounds = self._row_group_bounds()
            self._bounds = False
            if all(b is not None for b in bounds):
                key_type = self._pf.schema_arrow.field("key").type
                try:
                    mins = pa.array([b[0] for b in bounds if b is not None], key_type)
                    maxs = pa.array([b[1] for b in bounds if b is not None], key_type)
                    self._bounds = (mins, maxs)
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
                    "stats": {self.meta.column: {} if b is None else {"min": b[0], "max": b[1]}},
                }
                for g, b in enumerate(self._row_group_bounds())
            ]
            key_type = self._pf.schema_arrow.field("key").type
            try:
                self._stats = FileStats.from_pylist(
                    records, pa.schema([pa.field(self.meta.column, key_type)])
                )
            except (ValueError, TypeError, pa.ArrowException):
                return list(range(n))
        try:
            keep = might_match(keys, self._stats).to_numpy(zero_copy_only=False)
        except (ValueError, TypeError, pa.ArrowException):
            return list(range(n))
        return [int(g) for g in np.flatnonzero(keep)]


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
