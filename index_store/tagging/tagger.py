"""Tagging incoming record keys with the data file holding each (Hudi RFC-37's upsert index).

Every index source that locates keys (``index_store.sources``) is asked where each key may be,
and their (key, file) pairs are intersected. Of the built-in ones, one answers per method, over
all keys at once (``tagging.lookups``):

- ``bloom``: the record keys' ranges (``ranges.stab``: the key strings' bounds, and the min/max of
  an integer first key field, which numeric keys need since their text ranges overlap), then
  each surviving (key, file) pair probed against the file's Hudi bloom filter (each key hashed
  once): candidates, confirmed here by reading the files' key columns (``verify``). Exact: a key
  is reported only in a file that holds it.
- ``record``: the record index maps each key to its file directly. Exact as long as the index is
  current, which the caller checks (a stale index is refused before tagging starts); nothing is
  read to confirm it, nor when any other source answers exactly.

A key found in several live files (a Hudi table written with ``insert`` can hold one key in two
files of a partition) is tagged as Hudi's bloom index tags it, with every location (each copy is
updated; apache/hudi#380): one output row per (key, file) with ``on_duplicate="all"``, or a
``DuplicateKeyError`` with ``on_duplicate="error"``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import numpy as np
import pyarrow as pa

from index_store.config import IndexConfig
from index_store.errors import RecordKeyError
from index_store.record_key import RecordKeySpec
from index_store.sources.keys import sourced_locations
from index_store.tagging.locations import KeyQuery, TagContext
from index_store.tagging.result import Locations, result_rows, result_table
from index_store.tagging.stats import TAG_STATS_KEY, TagMethod, TagStats
from index_store.tagging.verify import verify_pairs

if TYPE_CHECKING:
    from index_store.sources.base import LocatesKeys

__all__ = ["ON_DUPLICATE", "OnDuplicate", "TagContext", "check_on_duplicate", "tag_keys", "tag_method"]

OnDuplicate = Literal["all", "error"]
"""A key in several live files: a row per file (as Hudi's bloom index tags every copy), or an error."""
ON_DUPLICATE: tuple[OnDuplicate, ...] = get_args(OnDuplicate)


def tag_method(config: IndexConfig, table: str, using: str) -> tuple[RecordKeySpec, TagMethod]:
    """The record key and the method (``bloom`` or ``record``) a tag of ``table`` with ``using``
    runs, or the error saying why it cannot: no key in the index, an unknown ``using``, or the
    record index asked for and not built. ``auto`` is the record index when there is one."""
    spec = RecordKeySpec.from_config(config)
    if spec is None:
        raise RecordKeyError(
            f"the index of {table} holds no record keys: build it with the key columns, "
            "build(record_key=[...]) (CLI: hudi-index build --record-key a,b)"
        )
    if using not in ("auto", "bloom", "record"):
        raise ValueError(f"using must be 'auto', 'bloom' or 'record', not {using!r}")
    if using == "record" and not config.record_index:
        raise RecordKeyError(
            f"the index of {table} has no record index: build it with record_index=True "
            "(CLI: hudi-index build --record-index), or tag with using='bloom'"
        )
    return spec, "record" if using == "record" or (using == "auto" and config.record_index) else "bloom"


def check_on_duplicate(on_duplicate: str) -> OnDuplicate:
    """``on_duplicate`` when it is one of ``ON_DUPLICATE``; else a ``ValueError`` naming them."""
    if on_duplicate not in ON_DUPLICATE:
        raise ValueError(f"on_duplicate must be 'all' or 'error', not {on_duplicate!r}")
    return cast(OnDuplicate, on_duplicate)


def tag_keys(
    context: TagContext,
    keys: pa.StringArray,
    partitions: pa.StringArray | None,
    method: TagMethod,
    on_duplicate: OnDuplicate = "all",
    sources: Sequence[LocatesKeys] | None = None,
) -> pa.Table:
    """Rows in input order: ``key``, ``partition``, ``file`` (absolute path, null for an insert),
    ``file_id`` (its file group: Hudi's file id, a plain file's name stem; null for an insert),
    with the run's ``TagStats`` in the schema metadata. A key in several live files has one row
    per file (in index order) with ``on_duplicate="all"``, raises ``DuplicateKeyError`` with
    ``"error"``; every other key has one row. ``sources``: the index sources asked where keys
    are (default: every registered one that locates keys)."""
    check_on_duplicate(on_duplicate)
    # Keys repeated in the batch are looked up once each time they appear: finding duplicates
    # costs a hash table over the batch, more than the repeated work it would save.
    query = KeyQuery(context, keys, partitions, method)
    found = sourced_locations(query, sources)
    seconds, counters = dict(found.seconds), dict(found.counters)
    key_idx, file_pos = found.key_idx, found.file_pos
    if context.merged is not None:
        # Merge-on-read: a key's latest record may be in a log file, or a delete; the file slices
        # decide, reading what verification would read and the slices' log files.
        located = context.merged(query, key_idx, file_pos, found.exact)
        key_idx, file_pos, locations = located.key_idx, located.loc_pos, located.locations
        seconds.update(located.seconds)
        for name, value in located.counters.items():
            counters[name] = counters.get(name, 0) + value
    else:
        if not found.exact:
            key_idx, file_pos = _verified(context, keys, key_idx, file_pos, seconds, counters)
        locations = Locations(context.paths, context.partitions, context.file_ids)
    rows = result_rows(
        len(keys), key_idx, file_pos, locations, on_duplicate, context.root, lambda k: keys[k].as_py()
    )
    per_key = rows.per_key
    stats = TagStats(
        method=method,
        keys=len(keys),
        files=int(context.present.sum()),
        updates=int((per_key > 0).sum()),
        inserts=int((per_key == 0).sum()),
        several_files=int((per_key > 1).sum()),
        seconds=seconds,
        pairs_by_source=dict(found.pairs_by_source),
        **cast(dict[str, Any], counters),  # stage counters: the int fields by name
    )
    metadata = {TAG_STATS_KEY: stats.to_json().encode()}
    return result_table(context.root, keys, partitions, rows, locations, metadata)


def _verified(
    context: TagContext,
    keys: pa.StringArray,
    key_idx: np.ndarray,
    file_pos: np.ndarray,
    seconds: dict[str, float],
    counters: dict[str, int],
) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs confirmed by a value index on the key, or by reading the files' keys."""
    start = time.perf_counter()
    if context.verify is not None:
        verified = context.verify(keys, key_idx, file_pos)
    else:
        paths = context.paths.to_pylist() if key_idx.size else []
        verified = verify_pairs(context.root, paths, keys, key_idx, file_pos, context.spec)
    seconds["verify"] = time.perf_counter() - start
    counters.update(
        files_opened=verified.files_opened,
        files_read=verified.files_read,
        row_groups_read=verified.row_groups_read,
        bytes_read=verified.bytes_read,
        false_positives=int((~verified.confirmed).sum()),
    )
    return key_idx[verified.confirmed], file_pos[verified.confirmed]
