"""What an index source is: a name, and answers to one or more of three questions.

Each question is a small protocol, checked with ``isinstance``: callers ask the sources that
answer it and never test which kind of index a source is (as DataFusion's pruning statistics).

- ``PrunesFiles``: which files may hold a row a predicate selects (``prune``, ``stats``).
- ``SelectsRows``: which rows of each candidate file (``select``, ``row_ids``, ``read``...).
- ``LocatesKeys``: which files hold each of a batch of record keys (``tag``).

A row or key answer of None means "cannot say for this query"; every answer given is a superset
of the truth (or the truth, when ``exact``), so that answers may be intersected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from hudi_expr import Expression, FileStats
from index_store.secondary.select import FileRows, IndexUse, UseRules
from index_store.tagging.locations import KeyAnswer, KeyQuery

if TYPE_CHECKING:
    from index_store.hudi_source.view import MetadataState
    from index_store.loaded import LoadedVersion
    from index_store.secondary.api import SecondaryIndexes

__all__ = [
    "IndexSource",
    "KeyAnswer",
    "KeyQuery",
    "LocatesKeys",
    "PrunesFiles",
    "RowAnswer",
    "RowQuery",
    "SelectsRows",
    "SourceQuery",
]


@dataclass(frozen=True)
class SourceQuery:
    """What a source is asked about: the columns a predicate uses, of one loaded index version."""

    loaded: LoadedVersion
    index_root: Path
    columns: tuple[str, ...]
    with_blooms: bool  # False: bounds only (layout reports, tagging's integer key bounds)
    secondary: SecondaryIndexes
    hudi: MetadataState | None = None  # Hudi's metadata table, when it is to answer too
    notes: list[str] = field(default_factory=list)  # what sources could not cover, for ``explain``


@dataclass(frozen=True)
class RowQuery:
    """Which rows of each candidate file may ``bound`` select? The candidates are the files
    pruning kept, as positions into ``loaded``'s files."""

    loaded: LoadedVersion
    root: str  # the table's
    index_root: Path
    bound: Expression  # bound to the index's schema, NOT-free
    candidates: np.ndarray  # positions into the loaded version's files
    paths: Sequence[str]  # per candidate, its table-relative path
    row_counts: np.ndarray  # per candidate, its rows on disk now
    changed: np.ndarray  # per candidate: rewritten since indexed (what the index holds is older)
    rules: UseRules | None  # when a source that costs lookups should answer (None: always)
    on_corrupt: Literal["raise", "scan", "keep_all"]
    secondary: SecondaryIndexes
    whole: np.ndarray | None = None  # per candidate: statistics prove every row matches
    total_files: int = 0  # data files on disk (what a plain scan reads)


@dataclass(frozen=True)
class RowAnswer:
    """One source's rows for a ``RowQuery``, and whether it was used and why (for ``explain``)."""

    rows: Sequence[FileRows] | None  # per candidate; None: not used (every row of every file)
    use: IndexUse
    notes: tuple[str, ...] = ()  # what it read past (an unreadable index file), one line each


@runtime_checkable
class IndexSource(Protocol):
    """Any index source: a name, and at least one of the capabilities below."""

    @property
    def name(self) -> str:
        """What ``explain`` and ``TagStats`` call it ("bloom filters")."""
        ...


@runtime_checkable
class PrunesFiles(IndexSource, Protocol):
    """A source able to rule files out: whether it is available for a query, and its answer."""

    def available(self, query: SourceQuery) -> bool:
        """Can this source say anything about the files for ``query``?"""
        ...

    def answer(self, query: SourceQuery, stats: FileStats) -> FileStats:
        """``stats`` with what this source knows of the candidate files added."""
        ...


@runtime_checkable
class SelectsRows(IndexSource, Protocol):
    """A source knowing row positions within files (a secondary index)."""

    def row_positions(self, query: RowQuery) -> RowAnswer | None:
        """The rows of each candidate that may match, or None when it cannot say."""
        ...


@runtime_checkable
class LocatesKeys(IndexSource, Protocol):
    """A source knowing where record keys are (the record index; key ranges and blooms)."""

    def key_locations(self, query: KeyQuery) -> KeyAnswer | None:
        """The (key, file) pairs that may hold ``query.keys``, or None when it cannot say."""
        ...
