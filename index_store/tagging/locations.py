"""Key locations: what an index source is asked for a batch of record keys, and what it answers.

``tag`` asks every index source that locates keys (``index_store.sources``) where each key may
be; each answers (key, file) pairs, exactly or as candidates, and the answers are intersected.
``TagContext`` is what the sources may read of the index version and the table on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from index_store.partitions.record_keys import KeyFilters
from index_store.record_key import RecordKeySpec
from index_store.tables.file_ids import stem_file_ids
from index_store.tagging.result import Located
from index_store.tagging.stats import TagMethod
from index_store.tagging.verify import Verified

__all__ = ["KeyAnswer", "KeyQuery", "RecordMatches", "TagContext"]


@dataclass(frozen=True)
class RecordMatches:
    """What a record index lookup found: entries (key position, file_idx), and its cost."""

    key_pos: np.ndarray
    file_idx: np.ndarray
    bytes_read: int


@dataclass(frozen=True)
class TagContext:
    """What tagging needs of an index version and the table on disk."""

    root: str
    paths: pa.StringArray  # table-relative paths of the index's live files, in file_idx order
    partitions: pa.StringArray
    file_idx: np.ndarray  # ascending
    present: np.ndarray  # per file: still on disk (a file deleted behind the index is never named)
    spec: RecordKeySpec
    key_filters: Callable[[], KeyFilters]
    record_lookup: Callable[[pa.Array], RecordMatches] | None  # None: no record index
    # Per file: min and max of the first key field and whether they are known, when that field
    # is an integer column (None otherwise): ``RecordKeySpec.leading_integers`` keys use it.
    leading_bounds: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray] | None] | None = None
    # Confirms (key, file) pairs another way than reading the files' keys (a value index on the
    # key column); None: read them.
    verify: Callable[[pa.StringArray, np.ndarray, np.ndarray], Verified] | None = None
    # The file id of data files (table-relative paths): the table format's rule
    # (``TableReader.file_ids``); the default, a file name's stem, is a plain table's.
    file_ids: Callable[[pa.StringArray], pa.StringArray] = stem_file_ids
    # Merge-on-read: turns the sources' candidate (key, file) pairs into the confirmed (key, file
    # slice) pairs (``tagging.merged``); None: the files hold their rows whole.
    merged: Callable[[KeyQuery, np.ndarray, np.ndarray, bool], Located] | None = None


@dataclass(frozen=True)
class KeyQuery:
    """Where may each of ``keys`` be? Asked of every source that locates keys, for one ``tag``."""

    context: TagContext
    keys: pa.StringArray
    partitions: pa.StringArray | None  # per key, its partition path (None: the whole table)
    method: TagMethod  # what the caller chose: the built-in sources answer for theirs only

    def in_scope(self, key_idx: np.ndarray, file_pos: np.ndarray) -> np.ndarray:
        """Per (key, file) pair: is the file on disk and in the key's partition? An answer names
        only such pairs (a source that knows nothing of partitions filters with this)."""
        keep = self.context.present[file_pos]
        if self.partitions is None:
            return keep
        # A null partition is the "" of a non-partitioned table (as the key ranges code it).
        equal = pc.equal(
            self.partitions.fill_null("").take(pa.array(key_idx)),
            self.context.partitions.take(pa.array(file_pos)),
        )
        return keep & pc.fill_null(equal, False).to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class KeyAnswer:
    """One source's (key, file) pairs for a ``KeyQuery``: ``key_idx`` positions into the keys,
    ``file_pos`` positions into the context's files, only files in scope (``in_scope``)."""

    key_idx: np.ndarray
    file_pos: np.ndarray
    exact: bool  # True: exactly the pairs whose file holds the key; False: candidates to verify
    counters: Mapping[str, int] = field(default_factory=dict)  # ``TagStats`` counters it fills
    seconds: Mapping[str, float] = field(default_factory=dict)  # ``TagStats.seconds`` per stage
