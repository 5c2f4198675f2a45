"""Which record of a key a merge-on-read table's readers keep: the rule of its merge mode, over
many keys at once.

A file slice holds a key's records in write order: the base file's row, then the log records by
``_log_sequence``. Hudi's log record reader folds them in that order, each record replacing the one
kept so far when (``HoodieRecordMerger``'s commit- and event-time modes):

- commit time ordering: always (the last written wins);
- event time ordering: its ordering value is at least the kept one's (ties go to the later write),
  or either has no ordering value (a delete Hudi wrote without one, ``IntWrapper(0)``, applies in
  write order; so does whatever follows it).

The fold's result is found without folding: after a key's last record without an ordering value
(its position ``z``, or before the first record when there is none), the winner is the greatest
(ordering value, position) among the records from ``z`` on, the one at ``z`` ranking lowest; with
commit time ordering, the last record. A key whose winner is a delete has no live row.

hudi-rs 0.5 gives the same answer but in one case (``datagen/hudi_merge.py``): a key written again
after a delete without an ordering value, with a smaller ordering value than a record from before
the delete. The fold keeps the new record (a live row, as Hudi's Java reader does); hudi-rs keeps
the older record, then drops it for the delete (``write_mor_table`` refuses such writes).

Which mode: ``hoodie.record.merge.mode`` (table versions 8 and 9); before it, the payload class
(``DefaultHoodieRecordPayload`` and ``EventTimeAvroPayload`` order by event time, Hudi's default
``OverwriteWithLatestAvroPayload`` by commit time). A custom merger or payload may keep or drop a
record by rules of its own, so such a table is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.errors import UnsupportedTableError

__all__ = ["MergeRule", "latest_records"]

_EVENT_TIME_PAYLOADS = {
    "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "org.apache.hudi.common.model.EventTimeAvroPayload",
}
_COMMIT_TIME_PAYLOADS = {"org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"}


@dataclass(frozen=True)
class MergeRule:
    """A table's merge mode, as far as which record of a key survives: ``ordering_field`` names the
    field compared under event time ordering; None is commit time ordering."""

    ordering_field: str | None = None

    @classmethod
    def of(cls, properties: Mapping[str, str], table: str) -> MergeRule:
        """The rule of a Hudi table from its ``hoodie.properties`` (``table`` names it in errors)."""

        def prop(key: str) -> str:
            return properties.get(key, "").strip()

        ordering = prop("hoodie.table.ordering.fields") or prop("hoodie.table.precombine.field")
        mode = prop("hoodie.record.merge.mode").upper()
        payload = prop("hoodie.table.payload.class") or prop("hoodie.compaction.payload.class")
        if not mode:
            if payload in _EVENT_TIME_PAYLOADS:
                mode = "EVENT_TIME_ORDERING"
            elif not payload or payload in _COMMIT_TIME_PAYLOADS:
                mode = "COMMIT_TIME_ORDERING"
        if mode == "COMMIT_TIME_ORDERING" or (mode == "EVENT_TIME_ORDERING" and not ordering):
            return cls(None)  # event time without an ordering field: Hudi orders by commit
        if mode == "EVENT_TIME_ORDERING":
            fields = [f.strip() for f in ordering.split(",") if f.strip()]
            if len(fields) != 1:
                raise UnsupportedTableError(
                    f"Hudi table {table} orders records by several fields {fields}: tagging its "
                    "merge-on-read file slices supports one ordering field"
                )
            return cls(fields[0])
        how = f"merge mode {mode}" if mode else f"payload {payload}"
        raise UnsupportedTableError(
            f"Hudi table {table} merges records with {how}, whose rules decide which record of a key "
            "survives: tagging its merge-on-read file slices supports commit and event time "
            "ordering (hoodie.record.merge.mode) and Hudi's overwrite payloads only"
        )


def latest_records(
    codes: np.ndarray, positions: np.ndarray, ordering: pa.Array | None, n_keys: int
) -> np.ndarray:
    """Per key (``codes``: each record's key, 0..n_keys-1), the index of the record the fold keeps,
    -1 for a key without records. ``positions``: write order (distinct per key); ``ordering``: the
    records' ordering values (event time ordering), None for commit time ordering."""
    winner = np.full(n_keys, -1, dtype=np.int64)
    if not codes.size:
        return winner
    if ordering is None:
        # The last written: sort by (key, position) and keep each key's last record.
        order = np.lexsort((positions, codes))
    else:
        no_value = ordering.is_null().to_numpy(zero_copy_only=False)
        start = np.full(n_keys, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(start, codes[no_value], positions[no_value])
        from_start = positions >= start[codes]  # the last record without a value, and after it
        table = pa.table({"key": codes, "counts": from_start, "value": ordering, "position": positions})
        # A null value sorts first: the record at the start only wins when nothing follows it.
        sort_keys = [(name, "ascending", "at_start") for name in table.column_names]
        order = pc.sort_indices(table, sort_keys=sort_keys).to_numpy()
    ordered = codes[order]
    last = np.append(ordered[1:] != ordered[:-1], True)
    winner[ordered[last]] = order[last]
    return winner
