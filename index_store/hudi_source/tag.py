"""``tag`` from Hudi's ``record_index`` partition: point lookups of the keys asked (only the HFile
blocks they can be in are read), each entry's file group mapped to its live file.

The record index holds one location per key, as Hudi's own record-index tagging uses it: a key
that several live files hold (inserts allowing duplicates) gets the one it names, never every copy
(``TagStats.locations`` says ``"one"``). It is used only when it can be right about inserts: a
metadata table behind its data table, a ``record_index`` partition still being built, an entry
naming a file group with no live slice, or a record index HFile that does not read (damaged) raise
a typed error (``MetadataTableError``) rather than report a key as new.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import HFileError, MetadataOutOfStepError, MetadataTableError
from index_store.hudi_source.view import SOURCE_NAME, MetadataState
from index_store.tables.base import TableReader
from index_store.tagging.result import Locations, result_rows, result_table
from index_store.tagging.stats import TAG_STATS_KEY, TagStats
from index_store.tagging.tagger import OnDuplicate

__all__ = ["RECORD_INDEX_SOURCE", "tag_from_record_index"]

RECORD_INDEX_SOURCE = f"{SOURCE_NAME} (record_index)"


def _locations(reader: TableReader) -> tuple[Locations, pa.StringArray]:
    """Each live file slice's location (base file, else its latest log file) and its group key
    (``partition`` NUL ``file id``), in one array each."""
    slices = reader.file_slices()
    paths = pa.array([(s.base or s.logs[-1]).path for s in slices], pa.string())
    parts = pa.array([s.partition for s in slices], pa.string())
    ids = pa.array([s.file_id for s in slices], pa.string())
    return Locations(paths, parts, reader.file_ids, ids), pc.binary_join_element_wise(parts, ids, "\0")


def tag_from_record_index(
    reader: TableReader,
    state: MetadataState,
    keys: pa.StringArray,
    partitions: pa.StringArray | None,
    on_duplicate: OnDuplicate,
) -> pa.Table:
    """``IndexedTable.tag``'s result from the record index of ``state``'s metadata table."""
    assert state.mdt is not None
    if not state.in_step:
        raise MetadataOutOfStepError(reader.root, state.reason)
    state.mdt.layout.require_partition("record_index")
    started = time.perf_counter()
    unique = pc.unique(keys)
    try:
        found = state.mdt.record_index(unique.to_pylist())  # MetadataTableError for a replaced group
    except HFileError as exc:
        # A damaged record index HFile: the keys it holds have no known location, and calling
        # them inserts would be wrong.
        raise MetadataTableError(
            f"the record index of {reader.root} does not read ({exc}): the keys' locations are unknown, "
            "so it cannot tag; let Hudi rebuild the record_index partition, or build this library's "
            "index (hudi-index build) and tag with source='own'"
        ) from exc
    looked = time.perf_counter() - started
    locations, groups = _locations(reader)
    entry = pc.binary_join_element_wise(found["partition"], found["file_id"], "\0")
    loc = pc.index_in(entry, value_set=groups)
    key_of = pc.index_in(keys, value_set=found["record_key"].combine_chunks())
    # Pairs (input key, location): every input position whose key has an entry.
    key_idx = np.flatnonzero(pc.is_valid(key_of).to_numpy(zero_copy_only=False))
    entry_of = key_of.filter(pc.is_valid(key_of)).to_numpy(zero_copy_only=False).astype(np.int64)
    loc_pos = loc.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)[entry_of]
    if (loc_pos < 0).any():
        bad = found.slice(int(entry_of[np.argmax(loc_pos < 0)]), 1).to_pylist()[0]
        raise MetadataTableError(
            f"the record index of {reader.root} places key {bad['record_key']!r} in file group "
            f"{bad['file_id']} of partition {bad['partition']!r}, which has no live slice: the key's "
            "location is unknown, so the record index cannot be used for it (hudi-index build)"
        )
    if partitions is not None and key_idx.size:
        # Tagging within the given partition: an entry in another partition is not this key's.
        same = pc.equal(partitions.take(pa.array(key_idx)), locations.partitions.take(pa.array(loc_pos)))
        keep = pc.fill_null(same, False).to_numpy(zero_copy_only=False)
        key_idx, loc_pos = key_idx[keep], loc_pos[keep]
    rows = result_rows(
        len(keys), key_idx, loc_pos, locations, on_duplicate, reader.root, lambda k: str(keys[k].as_py())
    )
    updates = int(np.count_nonzero(rows.per_key))
    stats = TagStats(
        method="record",
        keys=len(keys),
        files=len(locations),
        after_bloom=int(key_idx.size),
        updates=updates,
        inserts=len(keys) - updates,
        seconds={"record": looked, "total": time.perf_counter() - started},
        pairs_by_source={RECORD_INDEX_SOURCE: int(key_idx.size)},
        locations="one",
    )
    return result_table(
        reader.root, keys, partitions, rows, locations, {TAG_STATS_KEY: stats.to_json().encode()}
    )
