"""Tagging a merge-on-read table: the index sources' candidate (key, file) pairs become candidate
(key, file slice) pairs, and which slice holds each key's latest live record is decided from the
log records the index stores (``stored.decide_from_stored``) for slices whose every log file it
holds, by reading the slice (``slices.locate_in_slices``) for the others.

Where candidate slices come from:

- the sources' pairs (record index, key ranges + bloom filters), of base files and of log files
  alike: the slice holding the file named. Each answer holds every file holding the key, so a
  slice whose base file was not named for a key is not read for it, only its log files;
- every slice with a file whose keys the index does not hold (no ``record_keys`` row: a log file
  with a block that does not decode here; or no entry at all) is a candidate for every key of its
  partition (of the table, when tagging globally): nothing else says which keys its logs bring.
  With such a base file, the base is read for those keys too.

The slices are the table's live slices listed now; ``tag`` has checked the index describes them
(``IndexStaleError`` otherwise).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.arrays import expand_ranges, unique_sorted
from index_store.hudi_log import valid_instants
from index_store.partitions.log_records import StoredLogRecords
from index_store.record_key import RecordKeySpec
from index_store.tables.base import FileSlice
from index_store.tagging.locations import KeyQuery
from index_store.tagging.merge_rule import MergeRule
from index_store.tagging.result import Located
from index_store.tagging.slices import SliceTable, locate_in_slices, slice_locations
from index_store.tagging.stored import SliceLogs, decide_from_stored

if TYPE_CHECKING:
    from index_store.tables.base import TableReader

__all__ = ["MergedTagging", "merged_tagging"]


@dataclass(frozen=True)
class MergedTagging:
    """A merge-on-read table's live slices against one index version's files, as tagging needs
    them (``TagContext.merged``)."""

    table: SliceTable
    slices: Sequence[FileSlice]
    slice_of: np.ndarray  # per index file: the position of its slice (-1: in none)
    is_base: np.ndarray  # per index file: it is its slice's base file
    unlocated: np.ndarray  # slices with a file whose keys the index does not hold, ascending
    unlocated_base: np.ndarray  # per such slice: that file is its base file
    logs: SliceLogs | None = None  # the log records the index stores (None: none read)

    @classmethod
    def of(
        cls,
        table: SliceTable,
        slices: Sequence[FileSlice],
        paths: pa.StringArray,
        recorded: np.ndarray,
        stored: StoredLogRecords | None = None,
    ) -> MergedTagging:
        """``slices`` against the index's files (``paths``; ``recorded``: per file, the index
        holds its keys; ``stored``: the log records it holds)."""
        files = [(f.path, i, f is s.base) for i, s in enumerate(slices) for f in s.files]
        file_paths = pa.array([f for f, _, _ in files], pa.string())
        owner = np.array([i for _, i, _ in files], dtype=np.int64)
        base = np.array([b for _, _, b in files], dtype=bool)
        where = pc.index_in(paths, value_set=file_paths)
        known = where.is_valid().to_numpy(zero_copy_only=False)
        at = where.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        slice_of = np.where(known, owner[at] if owner.size else -1, -1)
        is_base = known & (base[at] if base.size else False)
        # Each slice file's index entry: an unknown one, or one without key information, leaves
        # the index unable to say which keys the file holds.
        entry = pc.index_in(file_paths, value_set=paths)
        holds_keys = entry.is_valid().to_numpy(zero_copy_only=False)
        holds_keys[holds_keys] = recorded[entry.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)]
        missing = np.flatnonzero(~holds_keys)
        unlocated = unique_sorted(owner[missing])
        unlocated_base = np.zeros(unlocated.size, dtype=bool)
        unlocated_base[np.searchsorted(unlocated, owner[missing[base[missing]]])] = True
        logs = None if stored is None else SliceLogs.of(stored, slices, paths, slice_of)
        return cls(table, slices, slice_of, is_base, unlocated, unlocated_base, logs)

    def __call__(
        self, query: KeyQuery, key_idx: np.ndarray, file_pos: np.ndarray, exact: bool = False
    ) -> Located:
        """The confirmed (key, slice) pairs from the sources' candidate (key, file) pairs
        (``exact``: the sources' answer needs no verification)."""
        start = time.perf_counter()
        keep = self.slice_of[file_pos] >= 0 if file_pos.size else np.zeros(0, dtype=bool)
        # Per pair, bit 1: the base file may hold the key; bit 2: it does (an exact source named it).
        named = self.is_base[file_pos[keep]].astype(np.int8) * (3 if exact else 1)
        by_source = (key_idx[keep], self.slice_of[file_pos[keep]], named)
        by_partition = self._by_partition(query)
        pair_key, pair_slice, flags = _merged_pairs(by_source, by_partition, n_slices=len(self.slices))
        in_base, surely = (flags & 1) > 0, (flags & 2) > 0
        # Only the candidate slices become locations: the result's cost follows the batch.
        chosen = unique_sorted(pair_slice)
        candidates = [self.slices[int(i)] for i in chosen]
        slice_idx = np.searchsorted(chosen, pair_slice)
        # Slices whose every log file has stored records are decided from them, all at once;
        # the others are read.
        fast = (
            self.logs.complete[pair_slice] if self.logs is not None else np.zeros(pair_slice.size, dtype=bool)
        )
        found = locate_in_slices(
            self.table,
            candidates,
            query.keys,
            pair_key[~fast],
            slice_idx[~fast],
            in_base=in_base[~fast],
        )
        decided = (
            decide_from_stored(
                self.table,
                self.logs,
                self.slices,
                query.keys,
                pair_key[fast],
                pair_slice[fast],
                in_base[fast],
                surely[fast],
            )
            if self.logs is not None and fast.any()
            else None
        )
        key_out, slice_out = found.key_idx, found.slice_pos
        counters = {
            "files_opened": found.base_files_opened,
            "files_read": found.base_files_read,
            "row_groups_read": found.row_groups_read,
            "bytes_read": found.bytes_read,
            "slices_read": found.slices_read,
            "log_files_read": found.log_files_read,
        }
        if decided is not None:
            key_out = np.concatenate([key_out, pair_key[fast][decided.live]])
            slice_out = np.concatenate([slice_out, slice_idx[fast][decided.live]])
            counters["files_opened"] += decided.base_files_opened
            counters["files_read"] += decided.base_files_read
            counters["row_groups_read"] += decided.row_groups_read
            counters["bytes_read"] += decided.bytes_read
        counters["false_positives"] = int(pair_key.size - key_out.size)
        seconds = {"slices": time.perf_counter() - start}
        return Located(key_out, slice_out, slice_locations(candidates), counters, seconds)

    def _by_partition(self, query: KeyQuery) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(key, slice, base may hold it) for every slice whose keys the index does not know and
        every key of its partition (every key, tagging globally)."""
        n_keys, fallback = len(query.keys), self.unlocated
        if not fallback.size or not n_keys:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, np.zeros(0, dtype=np.int8)
        if query.partitions is None:
            key_idx = np.repeat(np.arange(n_keys, dtype=np.int64), fallback.size)
            which = np.tile(np.arange(fallback.size), n_keys)
        else:
            # Partition codes shared by the slices and the keys; per key, the run of slices of its code.
            parts = pa.array([self.slices[int(i)].partition for i in fallback], pa.string())
            both = pc.dictionary_encode(pa.concat_arrays([parts, query.partitions.fill_null("")]))
            codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            slice_codes, key_codes = codes[: fallback.size], codes[fallback.size :]
            order = np.argsort(slice_codes, kind="stable")
            ordered = slice_codes[order]
            low = np.searchsorted(ordered, key_codes, "left")
            count = np.searchsorted(ordered, key_codes, "right") - low
            key_idx = np.repeat(np.arange(n_keys, dtype=np.int64), count)
            which = order[expand_ranges(low, count)]
        return key_idx, fallback[which], self.unlocated_base[which].astype(np.int8)


def _merged_pairs(
    *parts: tuple[np.ndarray, np.ndarray, np.ndarray], n_slices: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (key, slice) pairs of ``parts``, each with its parts' flags or-ed (bit 1: the
    base file may hold the key, bit 2: it does)."""
    codes = np.concatenate([k.astype(np.int64) * max(n_slices, 1) + s for k, s, _ in parts])
    flags = np.concatenate([b for _, _, b in parts])
    if not codes.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.int8)
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    merged = np.bitwise_or.reduceat(flags[order].astype(np.int8), starts)
    distinct = ordered[starts]
    return distinct // max(n_slices, 1), distinct % max(n_slices, 1), merged


def merged_tagging(
    reader: TableReader,
    spec: RecordKeySpec,
    paths: pa.StringArray,
    recorded: Callable[[], np.ndarray],
    stored: Callable[[], StoredLogRecords] | None = None,
) -> MergedTagging | None:
    """What tagging needs of a merge-on-read table (``TableReader.log_merging``: a file slice's rows
    are its base file merged with its log files) against an index version's files (``paths``;
    ``recorded()``: per file, the index holds its keys; ``stored()``: the log records it holds), or
    None for a table whose files hold their rows whole."""
    merging = reader.log_merging()
    if merging is None:
        return None
    rule = MergeRule.of(merging.properties, reader.root)
    table = SliceTable(reader.root, spec, rule, valid_instants(merging.timeline))
    logs = stored() if stored is not None else None
    return MergedTagging.of(table, reader.file_slices(), paths, recorded(), logs)
