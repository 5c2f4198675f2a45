"""File slices in pruning: a slice is kept whole when any of its files is, and the kept slices as
``PrunedSlice`` (base file and log files, absolute paths).

A merge-on-read slice's rows are its base file merged with its log files, so each file is pruned
on its own statistics first (a log file's describe the records it brings), then every file of a
slice is kept when one is: a row may match through its base file (not updated since) or through a
log record (inserted or updated), and a reader needs the whole slice to merge either. Files are
grouped by the 64-bit slice key the index stores per file (``keys.slice_keys``): a ``np.unique``
once per index version, then one mark per slice and one gather per prune, never a loop per file. The
``PrunedSlice`` objects are made only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.keys import slice_keys
from index_store.log_content import is_log_path
from index_store.tables.base import DataFile
from index_store.tables.hudi_files import parse_base, parse_log_file_name

__all__ = ["PrunedSlice", "SliceGroups", "log_file_mask", "slices_of"]


@dataclass(frozen=True)
class PrunedSlice:
    """A file slice pruning kept: its file group, its base file (None: a slice of log files only)
    and the log files to merge onto it, in Hudi's order (instant, version, write token); absolute
    paths. A copy-on-write slice has no log files; a plain parquet file is a slice of its own,
    ``file_id`` its name without extension."""

    file_id: str
    partition: str
    base_file: str | None
    log_files: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        """The base file (if any), then the log files."""
        return ([self.base_file] if self.base_file is not None else []) + self.log_files


def log_file_mask(paths: pa.Array) -> np.ndarray:
    """Per live file (table-relative path): is it a Hudi log file. Tables list parquet base files
    and log files only (``.cdc`` logs are no part of a slice), so a file whose name does not end
    in ``.parquet`` is a log file; only the end of each name is read."""
    if not len(paths):
        return np.zeros(0, dtype=bool)
    parquet = pc.fill_null(pc.ends_with(paths, ".parquet"), True)
    return ~np.asarray(parquet.to_numpy(zero_copy_only=False), dtype=bool)


class SliceGroups:
    """The slices of an index version's live files: a group code per file, and which files are
    log files. Made once per version, when pruning first needs it."""

    __slots__ = ("_logs", "codes", "keys", "paths", "size")

    def __init__(self, paths: pa.Array, keys: pa.Array) -> None:
        known = np.asarray(pc.is_valid(keys).to_numpy(zero_copy_only=False), dtype=bool)
        values = np.asarray(pc.fill_null(keys, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        self.keys, inverse = np.unique(values[known], return_inverse=True)  # sorted distinct keys
        codes = np.empty(len(values), dtype=np.int64)
        codes[known] = inverse
        # A file without a key is a slice of its own: codes after the keyed slices'.
        codes[~known] = len(self.keys) + np.arange(int((~known).sum()), dtype=np.int64)
        self.codes = codes
        self.size = len(self.keys) + int((~known).sum())
        self.paths = paths
        self._logs: np.ndarray | None = None

    @property
    def logs(self) -> np.ndarray:
        """Per file: is it a log file (worked out on first use)."""
        if self._logs is None:
            self._logs = log_file_mask(self.paths)
        return self._logs

    def keep_whole(
        self, kept: np.ndarray, live: np.ndarray | None, also: Sequence[DataFile] = ()
    ) -> np.ndarray:
        """``kept`` (per file) widened to every ``live`` file of a slice one of whose files is kept;
        ``also`` are kept files the index does not know (on disk, unindexed), whose slices are kept
        too (a new log file keeps its base file)."""
        hit = np.zeros(self.size, dtype=bool)
        hit[self.codes[kept]] = True
        found = self._codes_of(also)
        hit[found[found >= 0]] = True
        whole = hit[self.codes]
        return whole if live is None else whole & live

    def with_logs(self) -> np.ndarray:
        """Per file: its slice has a log file (its rows may have been updated or deleted since its
        base file was written, so nothing proven of the base file holds for the slice)."""
        has = np.zeros(self.size, dtype=bool)
        has[self.codes[self.logs]] = True
        return has[self.codes]

    def count(self, live: np.ndarray | None, also: Sequence[DataFile] = ()) -> int:
        """How many slices the ``live`` files and ``also`` make."""
        present = np.zeros(self.size, dtype=bool)
        present[self.codes if live is None else self.codes[live]] = True
        found = self._codes_of(also)
        present[found[found >= 0]] = True
        new = {k for k, c in zip(_keys_of(also), found.tolist(), strict=True) if c < 0}
        return int(present.sum()) + len(new)

    def _codes_of(self, files: Sequence[DataFile]) -> np.ndarray:
        """The codes of the slices ``files`` belong to (-1: a slice the index does not hold)."""
        if not files or not len(self.keys):
            return np.full(len(files), -1, dtype=np.int64)
        keys = np.array([k if k is not None else 0 for k in _keys_of(files)], dtype=np.int64)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        known = np.array([k is not None for k in _keys_of(files)]) & (self.keys[at] == keys)
        return np.where(known, at, -1)


def _keys_of(files: Sequence[DataFile]) -> list[int | None]:
    partitions = pa.array([f.partition for f in files], pa.string())
    return slice_keys(partitions, pa.array([f.file_group for f in files], pa.string())).to_pylist()


def slices_of(
    prefix: str, paths: Sequence[str], partitions: Sequence[str | None], keys: Sequence[int | None]
) -> list[PrunedSlice]:
    """The slices the files make (table-relative ``paths`` with their slice ``keys``; ``prefix``
    makes paths absolute), in the order their first file comes; log files in Hudi's merge order."""
    bases: dict[object, str | None] = {}
    logs: dict[object, list[str]] = {}
    where: dict[object, str] = {}
    for path, partition, key in zip(paths, partitions, keys, strict=True):
        group: object = (partition or "", key) if key is not None else path
        if group not in bases:
            bases[group], logs[group], where[group] = None, [], partition or ""
        if is_log_path(path):
            logs[group].append(path)
        else:
            bases[group] = path
    out = []
    for group, base in bases.items():
        ordered = sorted(logs[group], key=_log_order)
        first = os.path.basename(base if base is not None else ordered[0])
        file_id = _file_id(first, base is None) if not isinstance(group, str) else os.path.splitext(first)[0]
        out.append(
            PrunedSlice(
                file_id,
                where[group],
                prefix + base if base is not None else None,
                [prefix + p for p in ordered],
            )
        )
    return out


def _file_id(name: str, log: bool) -> str:
    """The file group a Hudi file name says (else the name without its extension)."""
    if log:
        parsed_log = parse_log_file_name(name)
        if parsed_log is not None:
            return parsed_log.file_id
    parsed = parse_base(name)
    return parsed.file_id if parsed is not None else os.path.splitext(name)[0]


def _log_order(path: str) -> tuple[str, int, str]:
    parsed = parse_log_file_name(os.path.basename(path))
    return parsed.order if parsed is not None else ("", 0, path)
