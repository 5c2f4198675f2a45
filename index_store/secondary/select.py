"""Row selection (RFC-51's ``getRowIdSet``): the rows of each candidate file a predicate may match.

Candidate files come from column statistics and blooms first. Then, per candidate file, each leaf
on an indexed column is looked up in the file's index file and the leaves are combined as the
predicate says (AND intersects, OR unites). A leaf no index answers, and every leaf of a file
without a usable index file (never built, built for an older version of the file, unreadable when
the caller allows a fallback), stands for all rows: the result only ever holds more rows than
match, never fewer. It is ``exact`` for a file when every leaf was answered exactly, so that no
row needs checking.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from hudi_expr import AlwaysFalse, AlwaysTrue, And, Expression, Or, Predicate
from index_store.errors import IndexCorruptError
from index_store.secondary.cost import Choice, Costs, Purpose
from index_store.secondary.definitions import IndexDefinition
from index_store.secondary.format import IndexFile, open_cached
from index_store.secondary.kinds import KeyLookup, index_kind

__all__ = ["FileRows", "IndexUse", "UseRules", "plan_lookups", "select_rows", "worker_pool"]


@dataclass(frozen=True)
class UseRules:
    """When the index is used: RFC-51's rule (more than ``max_predicates`` indexed leaves: never),
    then by cost (``index_store.secondary.cost``): the index path only when its cost, with the
    rows selected bounded from above, is below reading the candidate files whole."""

    max_predicates: int = 10  # more indexed leaves than this: too many lookups (the RFC's rule)
    by_cost: bool = True  # False: use the index whenever a leaf can be looked up (tests, forcing)
    purpose: Purpose = "rows"  # what the rows are for: a count or an EXISTS may need no read
    columns: int | None = None  # columns a read needs (None: every column of the table)
    reader: str = "pyarrow"  # whose constants price the reads ("duckdb" for the SQL adapter)
    costs: Costs | None = None  # None: the process's constants for ``reader`` (``costs_for``)
    max_index_files: int | None = None  # a hard cap on index files opened (None: by cost alone)


@dataclass(frozen=True)
class FileRows:
    """The selected rows of one candidate file: a mask over its rows, or None for every row."""

    mask: np.ndarray | None
    exact: bool  # True: exactly the rows where the predicate is TRUE

    @property
    def count(self) -> int | None:
        return None if self.mask is None else int(self.mask.sum())


@dataclass(frozen=True)
class IndexUse:
    """Whether an index source (the secondary index, unless ``source`` says another) was used to
    select rows for a predicate, and why (for ``explain()``)."""

    used: bool
    reason: str
    indexed_leaves: int = 0
    estimated_rows: float | None = None
    candidate_rows: int = 0
    lookups: dict[str, str] = field(default_factory=dict)  # leaf -> index type that answers it
    source: str = "secondary index"
    choice: Choice | None = None  # the cost-based choice, when one was made

    def explain(self) -> str:
        head = f"{self.source} used" if self.used else f"{self.source} not used"
        line = f"{head}: {self.reason}"
        return line if self.choice is None else f"{line}\n{self.choice.text()}"


@dataclass(frozen=True)
class _Planned:
    lookup: KeyLookup
    kind: str
    column: str


def plan_lookups(bound: Expression, definitions: Sequence[IndexDefinition]) -> dict[Predicate, _Planned]:
    """For each leaf an index can answer: how (exact lookups preferred over candidate ones)."""
    by_column: dict[str, list[str]] = {}
    for d in definitions:
        for c in d.columns:
            kinds = by_column.setdefault(c, [])
            if d.index_type not in kinds:
                kinds.append(d.index_type)
    planned: dict[Predicate, _Planned] = {}
    for leaf in bound.leaves():
        if leaf.term.column is not leaf.term:
            continue  # a function of a column (year(d)): the index holds the column's values
        column = leaf.term.name
        options = []
        for kind in by_column.get(column, ()):
            lookup = index_kind(kind).lookup(leaf)
            if lookup is not None:
                options.append(_Planned(lookup, kind, column))
        if options:
            planned[leaf] = max(options, key=lambda p: p.lookup.exact)
    return planned


def select_rows(
    bound: Expression,
    planned: Mapping[Predicate, _Planned],
    candidates: Sequence[int],
    index_files: Mapping[tuple[str, str], Sequence[str | None]],
    row_counts: Sequence[int],
    index_root: Path,
    opened: dict[str, IndexFile],
    key_schemas: Mapping[tuple[str, str], pa.Schema],
    on_corrupt: str = "raise",
    absent: Mapping[Predicate, np.ndarray] | None = None,
    expected: Sequence[tuple[str, int, int | None]] | None = None,
    corrupt: list[IndexCorruptError] | None = None,
) -> list[FileRows]:
    """The selected rows of each candidate (positions into ``row_counts`` and ``index_files``).

    ``index_files[(kind, column)][i]`` is the index file of candidate ``i`` (None: none usable).
    ``opened`` caches opened index files across calls (they are immutable). ``absent[leaf][i]``
    True: candidate ``i``'s bloom filter proves the leaf's keys are not in it (no row, no read).
    ``expected[i]``: candidate ``i``'s (path, size, mtime); an index file describing another file
    is corrupt. ``corrupt`` receives the error of each index file scanned instead (``on_corrupt``
    not ``raise``), so that the caller can say so.
    """
    absent = absent or {}
    bound_keys = {
        leaf: p.lookup.keys if p.lookup.keys.is_bound else p.lookup.keys.bind(key_schemas[(p.kind, p.column)])
        for leaf, p in planned.items()
    }

    def one(i: int) -> FileRows:
        n = int(row_counts[i])

        def leaf_rows(leaf: Predicate) -> tuple[np.ndarray | None, bool]:
            p = planned.get(leaf)
            rel = index_files[(p.kind, p.column)][i] if p is not None else None
            if p is None or rel is None:
                return None, False
            if leaf in absent and absent[leaf][i]:
                return np.zeros(n, dtype=bool), True
            try:
                handle = open_cached(opened, index_root, rel)
                info = handle.info
                about = expected[i] if expected is not None else (info.path, info.size, info.mtime_ns)
                if (
                    p.column not in handle.layout
                    or info.row_count != n
                    or (info.path, info.size, info.mtime_ns) != about
                ):
                    raise IndexCorruptError(
                        str(index_root / rel),
                        f"does not describe column {p.column!r} of {about[0]} as indexed",
                    )
                return handle.rows(p.column, bound_keys[leaf]), p.lookup.exact
            except IndexCorruptError as exc:
                if on_corrupt == "raise":
                    raise
                if corrupt is not None:
                    corrupt.append(exc)  # list.append is atomic: safe from the worker threads
                return None, False  # scan instead: every row of the file is a candidate

        mask, exact = _combine(bound, leaf_rows)
        return FileRows(mask, exact)

    if len(candidates) <= 2:
        return [one(i) for i in candidates]
    return list(worker_pool().map(one, candidates))


_POOL: list[ThreadPoolExecutor] = []


def worker_pool() -> ThreadPoolExecutor:
    """A thread pool kept for the process (pyarrow releases the GIL while it reads and decodes):
    a lookup of a few rows must not pay for starting threads."""
    if not _POOL:
        workers = min(8, 2 * (os.cpu_count() or 2))
        _POOL.append(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hudi-secondary"))
    return _POOL[0]


_Rows = tuple[np.ndarray | None, bool]


def _combine(expr: Expression, leaf_rows: Callable[[Predicate], _Rows]) -> _Rows:
    """Evaluate a NOT-free tree over row masks (None: all rows) and exactness."""
    if isinstance(expr, Predicate):
        return leaf_rows(expr)
    if isinstance(expr, AlwaysTrue):
        return None, True
    if isinstance(expr, AlwaysFalse):
        return np.zeros(0, dtype=bool), True  # an empty mask: broadcast as "no row" below
    if isinstance(expr, And | Or):
        parts = [_combine(child, leaf_rows) for child in expr.children]
        return (_and if isinstance(expr, And) else _or)(parts)
    raise TypeError(f"unexpected node in a bound, NOT-free predicate: {type(expr).__name__}")


def _and(parts: list[tuple[np.ndarray | None, bool]]) -> tuple[np.ndarray | None, bool]:
    masks = [m for m, _ in parts if m is not None]
    exact = all(e for _, e in parts)
    if any(len(m) == 0 for m in masks):
        return np.zeros(0, dtype=bool), True  # FALSE AND anything: no row, exactly
    if not masks:
        return None, exact
    out = masks[0].copy()
    for m in masks[1:]:
        out &= m
    # An inexact or unanswered part can only remove rows: the intersection is still a superset.
    return out, exact


def _or(parts: list[tuple[np.ndarray | None, bool]]) -> tuple[np.ndarray | None, bool]:
    live = [(m, e) for m, e in parts if m is None or len(m) != 0]  # FALSE OR p is p
    if not live:
        return np.zeros(0, dtype=bool), True
    if any(m is None for m, _ in live):
        return None, all(e for _, e in live)
    out = live[0][0].copy()  # type: ignore[union-attr]
    for m, _ in live[1:]:
        out |= m
    return out, all(e for _, e in live)


def expand(rows: FileRows, row_count: int) -> np.ndarray:
    """The row positions (``uint64``) of a selection, every row when it has no mask."""
    if rows.mask is None:
        return np.arange(row_count, dtype=np.uint64)
    if len(rows.mask) == 0:
        return np.zeros(0, dtype=np.uint64)
    return np.flatnonzero(rows.mask).astype(np.uint64)
