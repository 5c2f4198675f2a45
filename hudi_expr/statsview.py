"""Per-column facts derived once from ``FileStats`` and shared by the rules of both evaluators.

Every fact is a nullable ``pa.BooleanArray`` over the files: null means unknown. Rules combine them
with Kleene logic (``and_kleene``: FALSE AND unknown is FALSE), so a fact that is known to rule a file
out still does even when another is unknown; the evaluator turns what stays unknown into "may match"
(inclusive) or "not surely" (strict) in one place.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.expressions import And, Applied, BoundReference, Not, Or, Predicate
from hudi_expr.stats import ColumnStats, FileStats
from hudi_expr.types import is_binary_like, is_float_type, is_string_like
from hudi_expr.visitors import PredicateVisitor

__all__ = [
    "ColumnView",
    "StatsEvaluator",
    "StatsView",
    "all_of",
    "any_of",
    "prefix_bytes",
    "prefix_successor",
    "search_text",
    "to_mask",
]


def all_of(*facts: pa.Array) -> pa.Array:
    out = facts[0]
    for f in facts[1:]:
        out = pc.and_kleene(out, f)
    return out


def any_of(*facts: pa.Array) -> pa.Array:
    out = facts[0]
    for f in facts[1:]:
        out = pc.or_kleene(out, f)
    return out


class StatsView:
    """Lazily derived views of one ``FileStats``; one per evaluation."""

    def __init__(self, stats: FileStats) -> None:
        self.stats = stats
        # Keyed by the term itself: a column may be named like a function of another ("year(d)").
        self._columns: dict[BoundReference | Applied, ColumnView | None] = {}

    @property
    def num_files(self) -> int:
        return self.stats.num_files

    @cached_property
    def empty(self) -> np.ndarray:
        """Files known to hold no rows (they match nothing, and every row of them matches)."""
        return to_mask(pc.equal(self.stats.row_count, 0), unknown=False)

    def column(self, term: BoundReference | Applied) -> ColumnView | None:
        if term not in self._columns:
            self._columns[term] = self._view(term)
        return self._columns[term]

    def _view(self, term: BoundReference | Applied) -> ColumnView | None:
        if isinstance(term, Applied):
            # A monotonic function's statistics are its column's, mapped (see hudi_expr.transforms).
            inner = self.column(term.term)  # type: ignore[arg-type]  # bound: checked by the caller
            if inner is None or term.type is None:
                return None
            return ColumnView(applied_stats(term, inner), self.stats.row_count, term.type)
        cs = self.stats.column(term.name)
        ok = cs is not None and cs.min.type == term.type
        return ColumnView(cs, self.stats.row_count, term.type) if ok else None


class ColumnView:
    """Facts about one column over all files."""

    def __init__(self, cs: ColumnStats | None, row_count: pa.Array, t: pa.DataType) -> None:
        assert cs is not None
        self.cs = cs
        self.row_count = row_count
        self.is_float = is_float_type(t)
        # Arrow has no float16 comparison kernels; float32 holds every float16 exactly.
        self.type = pa.float32() if pa.types.is_float16(t) else t

    @cached_property
    def min(self) -> pa.Array:
        return self.cs.min.cast(self.type) if self.cs.min.type != self.type else self.cs.min

    @cached_property
    def max(self) -> pa.Array:
        return self.cs.max.cast(self.type) if self.cs.max.type != self.type else self.cs.max

    @cached_property
    def has_values(self) -> pa.Array:
        """Some row is neither NULL: false exactly when null_count == row_count (empty files too)."""
        return pc.not_equal(self.cs.null_count, self.row_count)

    @cached_property
    def has_nulls(self) -> pa.Array:
        return pc.invert(self.no_nulls)

    @cached_property
    def no_nulls(self) -> pa.Array:
        """null_count == 0, or every row is NaN (nan_count == row_count: an unknown NULL count is 0)."""
        counted = pc.equal(self.cs.null_count, 0)
        return any_of(counted, self.all_nan.fill_null(False)) if self.is_float else counted

    @cached_property
    def all_null(self) -> pa.Array:
        return pc.equal(self.cs.null_count, self.row_count)

    @cached_property
    def may_have_nan(self) -> pa.Array:
        """Only float columns hold NaN; an unknown NaN count may hide some."""
        if not self.is_float:
            return pa.array(np.zeros(len(self.row_count), dtype=bool))
        return pc.greater(self.cs.nan_count, 0)

    @cached_property
    def no_nan(self) -> pa.Array:
        if not self.is_float:
            return pa.array(np.ones(len(self.row_count), dtype=bool))
        return pc.equal(self.cs.nan_count, 0)

    @cached_property
    def all_nan(self) -> pa.Array:
        return pc.equal(self.cs.nan_count, self.row_count)

    @cached_property
    def has_non_nan(self) -> pa.Array:
        """Some row is not NaN (NULL rows count: NOT isnan(NULL) is TRUE in Spark)."""
        return pc.greater(self.row_count, self.cs.nan_count)

    @cached_property
    def has_bounded_value(self) -> pa.Array:
        """Some row holds a value that min/max bound (neither NULL nor NaN). Only such a row can make
        a test NaN fails TRUE (<, <=, =, IN); a float column whose every row is NULL or NaN
        (nan_count == row_count - null_count) has none, whatever its bounds are (usually unknown)."""
        if not self.is_float:
            return self.has_values
        bounded = pc.subtract(pc.subtract(self.row_count, self.cs.null_count), self.cs.nan_count)
        # has_non_nan alone decides an all-NaN file whose NULL count is unknown.
        return all_of(self.has_values, self.has_non_nan, pc.greater(bounded, 0))

    @cached_property
    def no_bounded_value(self) -> pa.Array:
        """Every row is NULL or NaN: whatever is said of the values within [min, max] holds."""
        return pc.invert(self.has_bounded_value)

    @cached_property
    def single_value(self) -> pa.Array:
        """min == max: every non-NaN, non-null value is that one value."""
        return pc.equal(self.min, self.max)

    @cached_property
    def min_bytes(self) -> pa.Array:
        return _as_binary(self.min)

    @cached_property
    def max_bytes(self) -> pa.Array:
        return _as_binary(self.max)

    def scalar(self, value: pa.Scalar) -> pa.Scalar:
        """A bound literal in the type the bounds are compared in."""
        return value if value.type == self.type else value.cast(self.type)

    def values(self, values: pa.Array) -> pa.Array:
        """A bound IN list in the type the bounds are compared in."""
        return values if values.type == self.type else values.cast(self.type)

    @property
    def sortable_bounds(self) -> tuple[np.ndarray, np.ndarray] | None:
        """min and max as monotone numpy keys (see ``sortkeys``), cached with the stats."""
        return self.cs.sort_keys


class StatsEvaluator(PredicateVisitor[np.ndarray]):
    """Evaluates a bound NNF expression over all files to a numpy mask, one rule per leaf kind.

    Subclasses give the rules and ``unknown``: what a file whose facts stay unknown gets (True,
    "may match", for pruning; False, "not surely", for strict evaluation). A column with no
    statistics at all gets ``unknown`` for every file: missing stats are handled here only.
    """

    unknown: bool
    purpose: str  # for error messages: "might_match", "all_match"

    def __init__(self, view: StatsView) -> None:
        self.view = view
        self.n = view.num_files
        self.col: ColumnView  # the column of the leaf being evaluated

    def visit_true(self) -> np.ndarray:
        return np.ones(self.n, dtype=bool)

    def visit_false(self) -> np.ndarray:
        return np.zeros(self.n, dtype=bool)

    def visit_not(self, node: Not, child: np.ndarray) -> np.ndarray:
        raise TypeError(f"{self.purpose} needs NOT pushed to the leaves: call rewrite_not (bind does)")

    def visit_and(self, node: And, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left & right

    def visit_or(self, node: Or, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        return left | right

    def visit_predicate(self, leaf: Predicate) -> np.ndarray:
        if not leaf.is_bound:
            raise TypeError(f"{self.purpose} needs a bound expression; {leaf} is not bound")
        col = self.view.column(leaf.term)  # type: ignore[arg-type]  # bound: BoundReference or Applied
        if col is None:
            return np.full(self.n, self.unknown, dtype=bool)
        self.col = col
        return to_mask(super().visit_predicate(leaf), unknown=self.unknown)


def applied_stats(term: Applied, column: ColumnView) -> ColumnStats:
    """The statistics of ``f(col)`` from those of ``col``: bounds mapped through ``f`` (swapped for
    a non-increasing ``f``), the same NULL count, NaN only where ``f`` keeps a float, no blooms."""
    source = column.type
    low, high = term.transform.bounds(column.min, column.max, source)
    result = term.type
    assert result is not None
    keeps_nan = is_float_type(source) and is_float_type(result)
    nan_count = column.cs.nan_count if keeps_nan else pa.array(np.zeros(len(low), dtype=np.int64))
    return ColumnStats(low, high, column.cs.null_count, nan_count)


def to_mask(fact: pa.Array | pa.ChunkedArray, unknown: bool) -> np.ndarray:
    """A nullable boolean fact as a numpy mask, unknown entries set to ``unknown``."""
    if isinstance(fact, np.ndarray):
        return fact
    filled = fact.fill_null(unknown) if fact.null_count else fact
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)


def _as_binary(arr: pa.Array) -> pa.Array:
    """Strings as bytes, so slicing by byte length never splits a character's comparison."""
    t = arr.type
    if is_string_like(t):
        return arr.cast(pa.large_binary() if pa.types.is_large_string(t) else pa.binary())
    if is_binary_like(t) and not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        return arr.cast(pa.binary())  # views and fixed-size bytes: the kernels slice offsets arrays
    return arr


def prefix_bytes(prefix: pa.Scalar) -> bytes:
    """A bound StartsWith prefix as bytes (strings compare as their UTF-8 bytes)."""
    p = prefix.as_py()
    return p.encode("utf-8") if isinstance(p, str) else p


def prefix_successor(p: bytes) -> bytes | None:
    """The least byte string above every string starting with ``p``: its last byte below 0xFF
    incremented, the rest dropped. None when ``p`` is all 0xFF (no such bound)."""
    stripped = p.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def search_text(literal: Any) -> str:
    """The text of a contains or contains_term literal (a string scalar once bound)."""
    return str(literal.as_py() if isinstance(literal, pa.Scalar) else literal)
