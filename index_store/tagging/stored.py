"""Deciding merge-on-read candidates from the log records the index stores (the ``log_records``
partition), over all candidate slices at once, without opening a log file.

Which stored records count follows ``hudi_log.scan``'s rules, evaluated now against the timeline:
a record counts when its block's instant is valid and no rollback command block written after it
in the same slice (a later block of its file, or a later log file) targets that instant. A slice's
records are then ordered by (log file's place in the slice, block, record), after its base row.

The base file's row of a key: the record index is exact, so a base file it names holds the key and
nothing is read, unless the merge orders by event time and the key has counted log records (the
base row's ordering value decides then, unless a log record of the key has no ordering value (a
delete Hudi wrote without one applies in write order, after the base row): only that column is
read, in the row groups that may hold the key). Key ranges and bloom filters only name
candidates: those base files are read as verification reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.hudi_log.records import promoted_type
from index_store.partitions.log_records import StoredLogRecords
from index_store.tables.base import FileSlice
from index_store.tagging.merge_rule import latest_records
from index_store.tagging.slices import SliceTable, base_records
from index_store.tagging.verify import thread_pool

__all__ = ["SliceLogs", "StoredDecision", "decide_from_stored"]

# A record's place in its slice: log file rank, then block, then record (base rows negative).
_RANK_SHIFT, _BLOCK_SHIFT = 44, 24


@dataclass(frozen=True)
class SliceLogs:
    """The stored log records against a table's live slices: per index file, its slice's position
    (``slice_of``) and its place among the slice's log files (``log_rank``, -1: a base file), and
    per slice whether every log file of it has stored records (``complete``)."""

    stored: StoredLogRecords
    slice_of: np.ndarray
    log_rank: np.ndarray
    complete: np.ndarray

    @classmethod
    def of(
        cls,
        stored: StoredLogRecords,
        slices: Sequence[FileSlice],
        paths: pa.StringArray,
        slice_of: np.ndarray,
    ) -> SliceLogs:
        """``stored`` (aligned with the index files ``paths``) against ``slices``; ``slice_of``:
        per index file, its slice's position (-1: none)."""
        logs = [(f.path, i, rank) for i, s in enumerate(slices) for rank, f in enumerate(s.logs)]
        log_paths = pa.array([p for p, _, _ in logs], pa.string())
        owner = np.array([i for _, i, _ in logs], dtype=np.int64)
        ranks = np.array([r for _, _, r in logs], dtype=np.int64)
        entry = pc.index_in(log_paths, value_set=paths)
        known = entry.is_valid().to_numpy(zero_copy_only=False)
        at = entry.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        has = known & (stored.stored[at] if at.size else np.zeros(0, dtype=bool))
        complete = np.ones(len(slices), dtype=bool)
        complete[owner[~has]] = False
        log_rank = np.full(len(paths), -1, dtype=np.int64)
        log_rank[at[known]] = ranks[known]
        return cls(stored, slice_of, log_rank, complete)

    def only(self, chosen: np.ndarray) -> SliceLogs:
        """The same, holding only the records of the slices ``chosen`` (what a task is sent)."""
        wanted = np.zeros(self.complete.size + 1, dtype=bool)
        wanted[chosen] = True  # slice_of -1 (a file in no slice) reads the last, False

        def of(rows: pa.Table) -> pa.Table:
            return rows.filter(pa.array(wanted[self.slice_of[rows.column("file_pos").to_numpy()]]))

        stored = self.stored
        kept = StoredLogRecords(stored.stored, of(stored.records), of(stored.rollbacks))
        return SliceLogs(kept, self.slice_of, self.log_rank, self.complete)


@dataclass(frozen=True)
class StoredDecision:
    """Per candidate pair: its slice holds the key's latest live record; and what was read."""

    live: np.ndarray
    base_files_opened: int
    base_files_read: int
    row_groups_read: int
    bytes_read: int
    log_records: int  # stored records of the candidate slices' log files that count


def decide_from_stored(
    table: SliceTable,
    logs: SliceLogs,
    slices: Sequence[FileSlice] | Mapping[int, FileSlice],
    keys: pa.StringArray,
    key_idx: np.ndarray,
    slice_pos: np.ndarray,
    in_base: np.ndarray,
    surely: np.ndarray,
    workers: int | None = None,
) -> StoredDecision:
    """Of the candidate pairs (``keys[key_idx[j]]``, ``slices[slice_pos[j]]``; every slice
    ``complete``), which hold the key's latest live record. ``in_base``: the slice's base file may
    hold the key; ``surely``: it does (an exact source named it: nothing to verify). ``slices``:
    the table's slices by position (a mapping holding the candidates' will do)."""
    n_slices = max(logs.complete.size, 1)
    distinct = pc.unique(keys)
    # A key repeated in the batch makes pairs of one (key, slice): each is decided once.
    sorted_codes, inverse = np.unique(
        _codes(keys, distinct)[key_idx] * n_slices + slice_pos, return_inverse=True
    )
    inverse = inverse.reshape(-1)
    n_pairs = sorted_codes.size
    order = np.arange(n_pairs)
    first = np.zeros(n_pairs, dtype=np.int64)
    first[inverse[::-1]] = np.arange(key_idx.size)[::-1]
    key_idx, slice_pos = key_idx[first], slice_pos[first]
    flags = np.zeros((2, n_pairs), dtype=bool)
    np.logical_or.at(flags[0], inverse, in_base)
    np.logical_or.at(flags[1], inverse, surely)
    in_base, surely = flags[0], flags[1]

    # The counted stored records of the wanted keys in the candidate slices.
    records = _counted(table, logs, np.unique(slice_pos), distinct)
    rec_codes = _codes(records.column("key"), distinct)
    rec_slice = records.column("slice").to_numpy()
    found = rec_codes >= 0
    combined = np.where(found, rec_codes * n_slices + rec_slice, -1)
    at = np.minimum(np.searchsorted(sorted_codes, combined), max(n_pairs - 1, 0))
    hit = found & (sorted_codes[at] == combined) if n_pairs else np.zeros(len(records), dtype=bool)
    rec_pair = order[at[hit]]
    records = records.filter(pa.array(hit))
    has_log = np.bincount(rec_pair, minlength=n_pairs) > 0
    # A log record without an ordering value applies in write order: the base row before it can
    # no longer win (``merge_rule``), so its value is not needed.
    no_value = records.column("ordering").is_null().to_numpy(zero_copy_only=False)
    after_no_value = np.bincount(rec_pair[no_value], minlength=n_pairs) > 0

    # Base rows: known from an exact source, else (or when event time needs its value) read.
    ordered_by_event = table.rule.ordering_field is not None
    read = in_base & (~surely | (ordered_by_event & has_log & ~after_no_value))
    assumed = np.flatnonzero(in_base & ~read)
    base = _read_bases(
        table, slices, keys, key_idx, slice_pos, read, order, sorted_codes, distinct, n_slices, workers
    )

    codes = np.concatenate([rec_pair, assumed, base.pairs])
    positions = np.concatenate(
        [
            records.column("position").to_numpy(),
            np.full(assumed.size, -1, dtype=np.int64),
            base.positions,
        ]
    )
    deletes = np.concatenate(
        [
            records.column("is_delete").to_numpy(zero_copy_only=False).astype(bool),
            np.zeros(assumed.size + base.pairs.size, dtype=bool),
        ]
    )
    ordering = None
    if ordered_by_event:
        parts = [records.column("ordering").combine_chunks(), pa.nulls(assumed.size), base.ordering]
        kind = promoted_type([p.type for p in parts])
        ordering = pa.concat_arrays([p.cast(kind) if kind is not None else p for p in parts])
    winner = latest_records(codes.astype(np.int64), positions, ordering, n_pairs)
    live = winner >= 0
    live[live] = ~deletes[winner[live]]
    return StoredDecision(
        live[inverse], base.opened, base.read, base.row_groups, base.bytes_read, len(records)
    )


def _codes(values: pa.Array | pa.ChunkedArray, distinct: pa.Array) -> np.ndarray:
    """Each value's position in ``distinct`` (-1: not there)."""
    where = pc.index_in(values, value_set=distinct)
    return where.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _counted(table: SliceTable, logs: SliceLogs, chosen: np.ndarray, distinct: pa.Array) -> pa.Table:
    """The stored records of the slices ``chosen`` that count now, of the keys ``distinct``:
    ``slice``, ``key``, ``ordering``, ``is_delete``, ``position``."""
    stored = logs.stored
    in_chosen = np.zeros(logs.slice_of.size + 1, dtype=bool)
    wanted_files = np.isin(logs.slice_of, chosen) & (logs.log_rank >= 0)
    in_chosen[:-1] = wanted_files
    rec = stored.records
    file_pos = rec.column("file_pos").to_numpy()
    keep = in_chosen[file_pos] & pc.is_in(rec.column("key"), value_set=distinct).to_numpy(
        zero_copy_only=False
    )
    rec = rec.filter(pa.array(keep))
    file_pos = file_pos[keep]
    slice_of = logs.slice_of[file_pos]
    rank = logs.log_rank[file_pos]
    block = rec.column("block").to_numpy().astype(np.int64)
    position = (
        (rank << _RANK_SHIFT) | (block << _BLOCK_SHIFT) | rec.column("record").to_numpy().astype(np.int64)
    )
    instants = rec.column("instant").combine_chunks()
    unique = pc.unique(instants)
    valid = np.array([table.valid(i) for i in unique.to_pylist()], dtype=bool)
    counts = valid[_codes(instants, unique)] if len(unique) else np.zeros(0, dtype=bool)
    counts &= ~_rolled_back(logs, slice_of, rank, block, instants)
    out = pa.table(
        {
            "slice": pa.array(slice_of, pa.int64()),
            "key": rec.column("key"),
            "ordering": rec.column("ordering"),
            "is_delete": rec.column("is_delete"),
            "position": pa.array(position, pa.int64()),
        }
    )
    return out.filter(pa.array(counts))


def _rolled_back(
    logs: SliceLogs, slice_of: np.ndarray, rank: np.ndarray, block: np.ndarray, instants: pa.Array
) -> np.ndarray:
    """Per record: a rollback block written after it in its slice targets its block's instant."""
    rb = logs.stored.rollbacks
    rb_pos = rb.column("file_pos").to_numpy()
    rb_slice = logs.slice_of[rb_pos] if rb_pos.size else np.zeros(0, dtype=np.int64)
    mine = (
        np.isin(rb_slice, slice_of) & (logs.log_rank[rb_pos] >= 0) if rb_pos.size else rb_slice.astype(bool)
    )
    if not mine.any() or not slice_of.size:
        return np.zeros(slice_of.size, dtype=bool)
    rb = rb.filter(pa.array(mine))
    rb_slice = rb_slice[mine]
    rb_where = (logs.log_rank[rb_pos[mine]] << _RANK_SHIFT) | (
        rb.column("block").to_numpy().astype(np.int64) << _BLOCK_SHIFT
    )
    both = pc.dictionary_encode(
        pa.concat_arrays([instants.cast(pa.string()), rb.column("target").combine_chunks()])
    )
    codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_codes = max(len(both.dictionary), 1)
    rec_code = slice_of * n_codes + codes[: slice_of.size]
    rb_code = rb_slice * n_codes + codes[slice_of.size :]
    # The last rollback of each (slice, target): a record written before it is removed.
    ro = np.lexsort((rb_where, rb_code))
    last = np.append(rb_code[ro][1:] != rb_code[ro][:-1], True)
    targets, latest = rb_code[ro][last], rb_where[ro][last]
    at = np.minimum(np.searchsorted(targets, rec_code), targets.size - 1)
    record_where = (rank << _RANK_SHIFT) | (block << _BLOCK_SHIFT)
    return (targets[at] == rec_code) & (latest[at] > record_where)


@dataclass(frozen=True)
class _BaseRows:
    pairs: np.ndarray  # the candidate pair of each base row read
    positions: np.ndarray
    ordering: pa.Array
    opened: int
    read: int
    row_groups: int
    bytes_read: int


def _read_bases(
    table: SliceTable,
    slices: Sequence[FileSlice] | Mapping[int, FileSlice],
    keys: pa.StringArray,
    key_idx: np.ndarray,
    slice_pos: np.ndarray,
    read: np.ndarray,
    order: np.ndarray,
    sorted_codes: np.ndarray,
    distinct: pa.Array,
    n_slices: int,
    workers: int | None,
) -> _BaseRows:
    """The base rows of the pairs ``read``, each base file read once for its keys."""
    wanted = np.flatnonzero(read)
    empty = np.zeros(0, dtype=np.int64)
    if not wanted.size:
        return _BaseRows(empty, empty, pa.nulls(0), 0, 0, 0, 0)
    by_slice = wanted[np.argsort(slice_pos[wanted], kind="stable")]
    ordered = slice_pos[by_slice]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    bounds = np.append(starts, by_slice.size)

    def one(i: int) -> tuple[np.ndarray, np.ndarray, pa.Array, int, int]:
        pairs = by_slice[bounds[i] : bounds[i + 1]]
        pos = int(ordered[starts[i]])
        base = slices[pos].base
        assert base is not None  # in_base is only set for slices with a base file
        path = os.path.join(table.root, base.path)
        rows, groups, size = base_records(table, path, pc.unique(keys.take(pa.array(key_idx[pairs]))))
        combined = _codes(rows.keys, distinct) * n_slices + pos
        at = np.minimum(np.searchsorted(sorted_codes, combined), sorted_codes.size - 1)
        ok = sorted_codes[at] == combined
        ordering = rows.ordering if rows.ordering is not None else pa.nulls(len(rows.keys))
        return order[at[ok]], rows.positions[ok], ordering.filter(pa.array(ok)), groups, size

    count = starts.size
    answers = [one(0)] if count == 1 else list(thread_pool(workers).map(one, range(count)))
    orderings = [a[2] for a in answers]
    kind = promoted_type([o.type for o in orderings])
    return _BaseRows(
        np.concatenate([a[0] for a in answers]),
        np.concatenate([a[1] for a in answers]),
        pa.concat_arrays([o.cast(kind) if kind is not None else o for o in orderings]),
        count,
        sum(1 for a in answers if a[3] > 0),
        sum(a[3] for a in answers),
        sum(a[4] for a in answers),
    )
