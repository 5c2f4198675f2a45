"""Records of one metadata partition merged per key as Hudi merges them
(``HoodieMetadataPayload.preCombine`` / ``combineAndGetUpdateValue``), base file first, then log
records in log order. A delete block's key (``removed``) drops every earlier record of the key.

- ``files``: per partition key, a file is listed when some record adds it after its last
  deletion; its size is the greatest of those additions (Hudi takes the larger size, since a log
  file only grows). Tombstones of files never listed are dropped.
- ``column_stats`` / ``partition_stats``: a tombstone (``isDeleted``) replaces what came before,
  and so does a record of tight bounds (``isTightBound``: statistics recomputed over all of a
  partition's files); the records from the last of these on combine: least minimum, greatest
  maximum, counts and sizes summed (Hudi's ``mergeColumnStatsRecords``); fields not combined are
  the newest record's. Bounds compare as numbers (decimals included), strings as UTF-8 bytes.
- ``bloom_filters``, ``record_index``, ``secondary_index_*``: the newest record wins.

All merges are vectorized over the records (sorts, group-bys), none loops per key.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from index_store.hudi_metadata.records import SLOTS

__all__ = ["merge_column_stats", "merge_files", "merge_latest"]

_SUMMED = ("value_count", "null_count", "total_size", "total_uncompressed_size")


def _last_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """The row of greatest ``seq`` of each distinct ``keys`` tuple."""
    if not len(table):
        return table
    order = pc.sort_indices(table, [(k, "ascending") for k in keys] + [("seq", "ascending")])
    ordered = table.take(order)
    last = None
    for k in keys:
        col = ordered[k].combine_chunks()
        differs = pc.fill_null(pc.not_equal(col.slice(0, len(col) - 1), col.slice(1)), True)
        last = differs if last is None else pc.or_(last, differs)
    assert last is not None
    mask = pa.concat_arrays([last, pa.array([True])])
    return ordered.filter(mask)


def merge_latest(raw: pa.Table) -> pa.Table:
    """The newest record of each key, keys whose newest record is a delete-block removal or a
    tombstone (``is_deleted``, where the kind has one) dropped."""
    latest = _last_per_key(raw, ["key"])
    keep = pc.invert(latest["removed"])
    if "is_deleted" in latest.column_names:
        keep = pc.and_(keep, pc.invert(pc.fill_null(latest["is_deleted"], False)))
    return latest.filter(keep)


def _after_last_reset(
    table: pa.Table, resets: pa.Table, keys: list[str], *, inclusive: bool = False
) -> pa.Table:
    """Rows of ``table`` later than (``inclusive``: or at) the last row of ``resets`` with the
    same ``keys``."""
    if not len(resets):
        return table
    last = resets.group_by(keys).aggregate([("seq", "max")]).rename_columns([*keys, "reset_seq"])
    joined = table.join(last, keys, join_type="left outer")
    compare = pc.greater_equal if inclusive else pc.greater
    later = pc.or_kleene(pc.is_null(joined["reset_seq"]), compare(joined["seq"], joined["reset_seq"]))
    return joined.filter(pc.fill_null(later, False)).drop_columns(["reset_seq"])


def merge_files(raw: pa.Table) -> pa.Table:
    """``(key, name, size)`` of every file listed under each key (a partition, or the list of
    partitions) once the records are merged."""
    entries = raw["entries"].combine_chunks()
    flat = pc.list_flatten(entries)
    parents = pc.list_parent_indices(entries)
    events = pa.table(
        {
            "key": raw["key"].take(parents),
            "seq": raw["seq"].take(parents),
            "name": flat.field("name"),
            "size": flat.field("size"),
            "is_deleted": flat.field("is_deleted"),
        }
    )
    removals = raw.filter(raw["removed"]).select(["key", "seq"])
    adds = events.filter(pc.invert(events["is_deleted"]))
    adds = _after_last_reset(adds, removals, ["key"])
    deletes = events.filter(events["is_deleted"]).select(["key", "name", "seq"])
    adds = _after_last_reset(adds, deletes, ["key", "name"])
    merged = adds.group_by(["key", "name"]).aggregate([("size", "max")])
    merged = merged.rename_columns(["key", "name", "size"])
    return merged.sort_by([("key", "ascending"), ("name", "ascending")])


def merge_column_stats(raw: pa.Table) -> pa.Table:
    """One row per live key: statistics combined after the key's last tombstone or removal."""
    tombstone = pc.or_(raw["removed"], pc.fill_null(raw["is_deleted"], False))
    resets = raw.filter(pc.or_(tombstone, pc.fill_null(raw["is_tight_bound"], False)))
    # A tombstone resets and is dropped below; a tight record resets and is kept.
    live = _after_last_reset(raw, resets.select(["key", "seq"]), ["key"], inclusive=True)
    live = live.filter(pc.invert(pc.or_(live["removed"], pc.fill_null(live["is_deleted"], False))))
    if not len(live):
        return live
    newest = _last_per_key(live, ["key"])
    counts = live.group_by("key").aggregate([("seq", "count")])
    if pc.max(counts["seq_count"]).as_py() == 1:  # the usual case: one record per key
        return newest
    aggregations = [(f"min_{s}", "min") for s in SLOTS] + [(f"max_{s}", "max") for s in SLOTS]
    aggregations += [(c, "sum") for c in _SUMMED]
    combined = live.group_by("key").aggregate(aggregations)
    names = {f"{c}_{fn}": c for c, fn in aggregations}
    combined = combined.rename_columns([names.get(n, n) for n in combined.column_names])
    rest = newest.drop_columns([c for c, _ in aggregations])
    out = rest.join(combined, "key")
    # Kinds: a key's records all bound one column, so the newest record's kinds name the slots.
    return out.select(raw.column_names).sort_by("seq")
