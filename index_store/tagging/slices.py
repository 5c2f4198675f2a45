"""Which merge-on-read file slice holds each incoming key's latest live record.

A merge-on-read file group's rows are its latest slice: the base file's rows merged with the
records of its log files (updates, inserts, deletes). A key is in a slice when the record a reader
keeps of it there (``merge_rule``: the last written, or the greatest ordering value) is not a
delete: a key whose latest record is a delete is absent (an upsert of it is an insert), and a key
updated in a log stays in its file group.

Given a batch of keys and, per key, candidate slices (``tag`` finds them from the index), each
candidate slice is read once, on a thread pool, for the keys asked of it only:

- its base file: the key column (and the ordering field under event time ordering) of the row
  groups whose key statistics admit one of those keys (``verify.row_groups_admitting``);
- its log files: the records whose blocks count (``hudi_log.scan_log_files``: valid instants,
  rollbacks), in write order (``_log_sequence``), after the base file's rows.

The decision is then vectorized over the slice's records of the wanted keys. A slice is reported
by its file id, its partition, and one file: its base file, or its latest log file when it has none.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from index_store.data_files import reading_data_file
from index_store.errors import TableFormatError
from index_store.hudi_log import IS_DELETE, ORDERING_VALUE, RECORD_KEY, SEQUENCE, scan_log_files
from index_store.hudi_log.records import promoted_type
from index_store.record_key import RecordKeySpec
from index_store.tables.base import FileSlice
from index_store.tables.file_ids import stem_file_ids
from index_store.tagging.merge_rule import MergeRule, latest_records
from index_store.tagging.result import Locations
from index_store.tagging.verify import (
    column_indices,
    row_groups_admitting,
    rows_that_may_match,
    thread_pool,
)

__all__ = [
    "SliceMatches",
    "SliceRecords",
    "SliceTable",
    "base_records",
    "locate_in_slices",
    "slice_locations",
]


@dataclass(frozen=True)
class SliceTable:
    """What deciding needs of a merge-on-read table: its root, how its record keys are made, how
    its records of a key replace one another, and which log blocks count (the timeline's valid
    instants, ``hudi_log.valid_instants``)."""

    root: str
    spec: RecordKeySpec
    rule: MergeRule
    valid: Callable[[str], bool]


@dataclass(frozen=True)
class SliceMatches:
    """The (key, slice) pairs whose slice holds the key's latest live record, and what finding
    them read."""

    key_idx: np.ndarray
    slice_pos: np.ndarray
    slices_read: int
    base_files_opened: int  # base files whose footer was read (some wanted key may be there)
    base_files_read: int  # base files some of whose key column was read
    row_groups_read: int
    bytes_read: int  # compressed bytes of the base files' key (and ordering) column chunks
    log_files_read: int
    log_records: int  # records of the log files' counted blocks


@dataclass(frozen=True)
class _SliceAnswer:
    live: np.ndarray  # per wanted key of the slice
    base_opened: bool
    base_read: bool
    row_groups: int
    bytes_read: int
    log_files: int
    log_records: int


def locate_in_slices(
    table: SliceTable,
    slices: Sequence[FileSlice],
    keys: pa.StringArray,
    key_idx: np.ndarray,
    slice_pos: np.ndarray,
    workers: int | None = None,
    in_base: np.ndarray | None = None,
) -> SliceMatches:
    """Of the candidate pairs (``keys[key_idx[j]]``, ``slices[slice_pos[j]]``), those whose slice
    holds the key's latest record and that record is not a delete. Pairs are grouped by slice;
    each candidate slice is read once. ``in_base`` (per pair; default: all True) says whether the
    slice's base file may hold the key: when the index's complete answer for the base file left the
    key out, only the slice's log files are read for it."""
    if not key_idx.size:
        empty = np.zeros(0, dtype=np.int64)
        return SliceMatches(empty, empty, 0, 0, 0, 0, 0, 0, 0)
    order = np.argsort(slice_pos, kind="stable")
    ordered = slice_pos[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    bounds = np.append(starts, order.size)
    chosen = ordered[starts]

    def one(i: int) -> tuple[np.ndarray, _SliceAnswer]:
        pairs = order[bounds[i] : bounds[i + 1]]
        wanted = keys.take(pa.array(key_idx[pairs]))
        maybe_base = wanted if in_base is None else wanted.filter(pa.array(in_base[pairs]))
        return pairs, _live_in_slice(table, slices[int(chosen[i])], wanted, maybe_base)

    # One slice is read here: handing it to a thread costs more than reading it.
    answers = [one(0)] if chosen.size == 1 else list(thread_pool(workers).map(one, range(chosen.size)))
    confirmed = np.zeros(key_idx.size, dtype=bool)
    for pairs, answer in answers:
        confirmed[pairs[answer.live]] = True
    return SliceMatches(
        key_idx[confirmed],
        slice_pos[confirmed],
        len(answers),
        sum(a.base_opened for _, a in answers),
        sum(a.base_read for _, a in answers),
        sum(a.row_groups for _, a in answers),
        sum(a.bytes_read for _, a in answers),
        sum(a.log_files for _, a in answers),
        sum(a.log_records for _, a in answers),
    )


def slice_locations(slices: Sequence[FileSlice]) -> Locations:
    """How ``tag`` reports each slice: its base file (its latest log file when it has none), its
    partition and its file id."""
    paths = [s.base.path if s.base is not None else s.logs[-1].path for s in slices]
    return Locations(
        pa.array(paths, pa.string()),
        pa.array([s.partition for s in slices], pa.string()),
        stem_file_ids,  # unused: every location's id is known
        pa.array([s.file_id for s in slices], pa.string()),
    )


@dataclass(frozen=True)
class SliceRecords:
    """A slice's records of the wanted keys, in no particular order."""

    keys: pa.Array
    positions: np.ndarray  # write order: base rows negative, log records by sequence
    ordering: pa.Array | None  # None: commit time ordering
    deletes: np.ndarray


def _live_in_slice(
    table: SliceTable, file_slice: FileSlice, wanted: pa.StringArray, maybe_base: pa.StringArray
) -> _SliceAnswer:
    """Per wanted key: is its latest record in ``file_slice`` live? (``maybe_base``: the wanted
    keys its base file may hold.)"""
    distinct = pc.unique(wanted)
    parts: list[SliceRecords] = []
    groups = size = 0
    if file_slice.base is not None and len(maybe_base):
        path = os.path.join(table.root, file_slice.base.path)
        base, groups, size = base_records(table, path, pc.unique(maybe_base))
        parts.append(base)
    log_records = 0
    if file_slice.logs:
        logs, log_records = _log_records(table, file_slice, distinct)
        parts.append(logs)
    records = _concat(parts, table.rule)
    codes = pc.index_in(records.keys, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.int64)
    winner = latest_records(codes, records.positions, records.ordering, len(distinct))
    found = winner >= 0
    live = found.copy()
    live[found] = ~records.deletes[winner[found]]
    where = pc.index_in(wanted, value_set=distinct).to_numpy(zero_copy_only=False).astype(np.int64)
    return _SliceAnswer(
        live[where],
        file_slice.base is not None and len(maybe_base) > 0,
        file_slice.base is not None and groups > 0,
        groups,
        size,
        len(file_slice.logs),
        log_records,
    )


def base_records(table: SliceTable, path: str, distinct: pa.StringArray) -> tuple[SliceRecords, int, int]:
    """The base file's rows of the wanted keys, only the row groups that may hold one; the row
    groups and compressed bytes read."""
    spec, field = table.spec, table.rule.ordering_field
    with reading_data_file(path, what="base file", doing="tagging", then="run sync and tag again"):
        pf = pq.ParquetFile(path)
        groups = row_groups_admitting(pf, distinct, spec)
        names = pf.schema_arrow.names
        missing = [c for c in spec.read_columns if c not in names]
        if missing:
            raise TableFormatError(
                f"record key column {missing[0]!r} is not a column of base file {path} (its columns: {names})"
            )
        columns = list(spec.read_columns) + ([field] if field is not None and field in names else [])
        rows = pf.read_row_groups(groups, columns=columns) if groups else pf.schema_arrow.empty_table()
    rows = rows_that_may_match(rows.select(columns), distinct, spec)
    keys = spec.keys_of(rows)
    hit = pc.is_in(keys, value_set=distinct)
    kept = rows.filter(hit)
    n = kept.num_rows
    ordering = None
    if field is not None:
        ordering = kept.column(field).combine_chunks() if field in kept.column_names else pa.nulls(n)
    size = sum(
        pf.metadata.row_group(g).column(c).total_compressed_size
        for g in groups
        for c in column_indices(pf, columns)
    )
    # Base rows come before every log record (negative positions, in file order).
    records = SliceRecords(
        keys.filter(hit), np.arange(n, dtype=np.int64) - n, ordering, np.zeros(n, dtype=bool)
    )
    return records, len(groups), size


def _log_records(
    table: SliceTable, file_slice: FileSlice, distinct: pa.StringArray
) -> tuple[SliceRecords, int]:
    """The counted log records of the wanted keys, and how many records the logs' counted blocks
    hold."""
    paths = [os.path.join(table.root, f.path) for f in file_slice.logs]
    try:
        scan = scan_log_files(
            paths,
            table.valid,
            key_spec=table.spec,
            ordering_field=table.rule.ordering_field,
            partition_path=file_slice.partition,
        )
    except FileNotFoundError as exc:
        raise TableFormatError(
            f"log file {exc.filename} disappeared while tagging; run sync and tag again"
        ) from None
    records = scan.records
    kept = records.filter(pc.is_in(records.column(RECORD_KEY), value_set=distinct))
    ordering = None
    if table.rule.ordering_field is not None:
        ordering = kept.column(ORDERING_VALUE).combine_chunks()
    out = SliceRecords(
        kept.column(RECORD_KEY).combine_chunks(),
        kept.column(SEQUENCE).to_numpy().astype(np.int64),
        ordering,
        kept.column(IS_DELETE).to_numpy().astype(bool),
    )
    return out, records.num_rows


def _concat(parts: list[SliceRecords], rule: MergeRule) -> SliceRecords:
    """The base file's and the logs' records as one, ordering values in one type."""
    if not parts:
        return SliceRecords(pa.array([], pa.string()), np.zeros(0, np.int64), None, np.zeros(0, bool))
    ordering = None
    if rule.ordering_field is not None:
        values = [p.ordering for p in parts if p.ordering is not None]
        kind = promoted_type([v.type for v in values])
        ordering = pa.concat_arrays([v.cast(kind) if kind is not None else v for v in values])
    return SliceRecords(
        pa.concat_arrays([p.keys.cast(pa.string()) for p in parts]),
        np.concatenate([p.positions for p in parts]),
        ordering,
        np.concatenate([p.deletes for p in parts]),
    )
