"""``Membership``: what a structure can say about a set of values in a column, file by file.

Min/max bounds say whether a value lies in a file's range; a membership structure says whether it
may be in the file at all. Bloom filters are one (``BloomFilterSet``); a record-level or secondary
index can be another. The evaluators ask ``ColumnStats.contained`` for equality and IN leaves and
never look at what answers (DataFusion's ``PruningStatistics::contained`` plays the same part).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

__all__ = ["Membership"]


@runtime_checkable
class Membership(Protocol):
    """Per-file knowledge of which values a column may hold."""

    def __len__(self) -> int:
        """The number of files."""
        ...

    def take(self, indices: np.ndarray) -> Membership:
        """The same knowledge for a subset of files, in the given order."""
        ...

    def contained(self, values: pa.Array) -> pa.BooleanArray:
        """Per file: False where no value of ``values`` is in the file (proven), True where one
        may be, null where nothing is known. NULL values are never contained (``IN (NULL)`` is
        never TRUE)."""
        ...
