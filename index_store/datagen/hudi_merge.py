"""The snapshot a merge-on-read table's writes add up to, computed from what was written (not read
back): the expected result of a reader, for the merge-on-read writer (``hudi_mor.py``).

The rule, per record key, over the writes of completed delta commits (base files and log blocks):

- the record with the greatest ordering value wins, ties going to the later commit (Hudi's
  event-time merge); without an ordering field the latest commit wins (commit-time merge);
- a delete, written as Hudi's SQL ``DELETE`` writes it (ordering value "none", so it applies in
  commit order), removes the key when it comes after the winning record's commit.

One case has no single answer: a key written again after a delete, with a smaller ordering value
than a record from before the delete. hudi-rs picks the greatest record first, then drops it for
the later delete; Hudi's Java reader merges the log in write order, where the new record replaces
the delete, and keeps a row. Such writes are refused (``AmbiguousMergeError``), so the tables
written here read alike in every reader.

Keys come as dense integer ids (``hudi_routing.KeyIndex``), so the work is numpy over the records,
and only the records of keys written more than once are sorted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["AmbiguousMergeError", "live_mask"]


class AmbiguousMergeError(ValueError):
    """Writes whose snapshot Hudi's readers disagree on."""


def _winners(
    ids: np.ndarray, commits: np.ndarray, ordering: pa.ChunkedArray | None, n_keys: int
) -> np.ndarray:
    """Which records win their key: the greatest (ordering value, commit)."""
    winner = np.bincount(ids, minlength=n_keys)[ids] == 1  # a key's only record wins
    shared = np.flatnonzero(~winner)
    if not len(shared):
        return winner
    columns = {"id": ids[shared], "commit": commits[shared]}
    order = [("id", "ascending")]
    if ordering is not None:
        columns["ordering"] = ordering.take(pa.array(shared))
        order.append(("ordering", "ascending"))
    order.append(("commit", "ascending"))
    ranked = pc.sort_indices(pa.table(columns), sort_keys=order).to_numpy()
    sorted_ids = ids[shared][ranked]
    last = np.append(sorted_ids[1:] != sorted_ids[:-1], True)
    winner[shared[ranked[last]]] = True
    return winner


def live_mask(
    ids: np.ndarray,
    commits: np.ndarray,
    ordering: pa.ChunkedArray | None,
    deletes: tuple[np.ndarray, np.ndarray],
    keys: pa.ChunkedArray,
) -> np.ndarray:
    """Which records (key ``ids``, writing ``commits``, ``ordering`` values or None) are the live
    rows, given the ``deletes`` (key ids, commits); ``keys`` only names a key in errors."""
    n_keys = int(max(ids.max(initial=-1), deletes[0].max(initial=-1))) + 1
    winner = _winners(ids, commits, ordering, n_keys)
    delete_ids, delete_commits = deletes
    if not len(delete_ids):
        return winner
    last_delete = np.full(n_keys, -1, dtype=np.int64)
    np.maximum.at(last_delete, delete_ids, delete_commits)
    deleted = winner & (last_delete[ids] > commits)
    # a record written after the delete exists, yet an older one won on its ordering value
    touched = np.flatnonzero(last_delete[ids] >= 0)
    latest = np.full(n_keys, -1, dtype=np.int64)
    np.maximum.at(latest, ids[touched], commits[touched])
    ambiguous = np.flatnonzero(deleted & (latest[ids] > last_delete[ids]))
    if len(ambiguous):
        raise AmbiguousMergeError(
            f"key {keys[int(ambiguous[0])].as_py()!r} is written again after a delete with a smaller "
            "ordering value than a record from before the delete, which Hudi's readers merge "
            "differently (hudi-rs drops the key, Hudi's Java reader keeps a row). Give the new record "
            "an ordering value at least as large as every earlier one."
        )
    return winner & ~deleted
