"""File slices in pruning: a slice is kept whole when any of its files is, and the kept slices as
``PrunedSlice`` (base file and log files, absolute paths).

A merge-on-read slice's rows are its base file merged with its log files, so each file is pruned
on its own statistics first (a log file's describe the records it brings), then every file of a
slice is kept when one is: a row may match through its base file (not updated since) or through a
log record (inserted or updated), and a reader needs the whole slice to merge either. Grouping is a
``np.bincount`` over group codes (dictionary-encoded ``partition + file id``), never a loop per
file; the ``PrunedSlice`` objects are made only when asked for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.log_content import is_log_path, log_file_mask
from index_store.tables.base import DataFile
from index_store.tables.hudi_files import parse_base, parse_log_file_name

__all__ = ["PrunedSlice", "SliceGroups", "group_keys", "slices_of"]

_SEP = "\x00"  # between a partition path and a file id in a group key: in neither
_OWN = "\x01"  # prefix of the key of a file that is a slice of its own (no file group known)


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


def group_keys(paths: pa.Array, partitions: pa.Array, file_groups: pa.Array) -> pa.StringArray:
    """Per file, a key shared by the files of its slice: partition and file id, or the file's own
    path when it has no file group (plain tables, indexes written before file groups were kept)."""
    grouped = pc.binary_join_element_wise(pc.fill_null(partitions, ""), file_groups, _SEP)
    own = pc.binary_join_element_wise(pa.scalar(_OWN), paths, "")
    return pc.if_else(pc.is_null(file_groups), own, grouped)


class SliceGroups:
    """The slices of an index version's live files: a group code per file (its position in
    ``keys``), and which files are log files. Made once per version, when pruning first needs it."""

    __slots__ = ("codes", "keys", "logs")

    def __init__(self, paths: pa.Array, partitions: pa.Array, file_groups: pa.Array) -> None:
        encoded = pc.dictionary_encode(group_keys(paths, partitions, file_groups))
        self.codes: np.ndarray = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        self.keys: pa.StringArray = encoded.dictionary
        self.logs: np.ndarray = log_file_mask(paths)

    def keep_whole(
        self, kept: np.ndarray, live: np.ndarray | None, also: Sequence[DataFile] = ()
    ) -> np.ndarray:
        """``kept`` (per file) widened to every ``live`` file of a slice one of whose files is kept;
        ``also`` are kept files the index does not know (on disk, unindexed), whose slices are kept
        too (a new log file keeps its base file)."""
        hit = np.zeros(len(self.keys), dtype=bool)
        hit[self.codes[kept]] = True
        if also:
            found = pc.index_in(_keys_of(also), value_set=self.keys)
            positions = found.drop_null().to_numpy(zero_copy_only=False)
            hit[positions.astype(np.int64)] = True
        whole = hit[self.codes]
        return whole if live is None else whole & live

    def with_logs(self) -> np.ndarray:
        """Per file: its slice has a log file (its rows may have been updated or deleted since its
        base file was written, so nothing proven of the base file holds for the slice)."""
        has = np.bincount(self.codes[self.logs], minlength=len(self.keys)) > 0
        return has[self.codes]

    def count(self, live: np.ndarray | None, also: Sequence[DataFile] = ()) -> int:
        """How many slices the ``live`` files and ``also`` make."""
        codes = self.codes if live is None else self.codes[live]
        n = len(np.unique(codes))
        if also:
            keys = _keys_of(also)
            new = pc.invert(pc.is_in(keys, value_set=self.keys))
            n += len(pc.unique(keys.filter(new)))
        return n


def _keys_of(files: Sequence[DataFile]) -> pa.StringArray:
    return group_keys(
        pa.array([f.path for f in files], pa.string()),
        pa.array([f.partition for f in files], pa.string()),
        pa.array([f.file_group for f in files], pa.string()),
    )


def slices_of(
    prefix: str, paths: Sequence[str], partitions: Sequence[str | None], file_groups: Sequence[str | None]
) -> list[PrunedSlice]:
    """The slices the files make (table-relative ``paths``, ``prefix`` makes them absolute), in the
    order their first file comes; each slice's log files in Hudi's merge order."""
    bases: dict[tuple[str, str], str | None] = {}
    logs: dict[tuple[str, str], list[str]] = {}
    for path, partition, group in zip(paths, partitions, file_groups, strict=True):
        name = os.path.basename(path)
        log = is_log_path(path)
        file_id = group or _file_id(name, log)
        key = (partition or "", file_id if group else _OWN + path)
        if key not in bases:
            bases[key], logs[key] = None, []
        if log:
            logs[key].append(path)
        else:
            bases[key] = path
    out = []
    for key, base in bases.items():
        partition, file_id = key
        ordered = sorted(logs[key], key=_log_order)
        if file_id.startswith(_OWN):
            first = base if base is not None else ordered[0]
            file_id = _file_id(os.path.basename(first), base is None)
        out.append(
            PrunedSlice(
                file_id,
                partition,
                prefix + base if base is not None else None,
                [prefix + p for p in ordered],
            )
        )
    return out


def _file_id(name: str, log: bool) -> str:
    """The file group a Hudi file name says, else the name without its extension."""
    if log:
        parsed_log = parse_log_file_name(name)
        if parsed_log is not None:
            return parsed_log.file_id
    parsed = parse_base(name)
    return parsed.file_id if parsed is not None else os.path.splitext(name)[0]


def _log_order(path: str) -> tuple[str, int, str]:
    parsed = parse_log_file_name(os.path.basename(path))
    return parsed.order if parsed is not None else ("", 0, path)
