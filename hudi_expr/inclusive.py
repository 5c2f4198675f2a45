"""``might_match``: which files may hold a row where the predicate is TRUE (the pruning mask).

One vectorized rule per leaf kind, over all files at once. Each rule returns a nullable boolean
array (null = unknown) built from facts in ``statsview``; ``visit_predicate`` turns unknown into
"may match", and a column with no statistics at all keeps every file. That is the only place
missing statistics are handled. Rules may over-approximate (keep too much), never the reverse.
Bounds are bounds: a min (max) is at most (at least) every non-null, non-NaN value of the file.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.binding import bind
from hudi_expr.expressions import Expression, Not
from hudi_expr.sortkeys import common_keys, sort_keys
from hudi_expr.stats import FileStats
from hudi_expr.statsview import (
    ColumnView,
    StatsEvaluator,
    StatsView,
    all_of,
    any_of,
    prefix_bytes,
    prefix_successor,
    search_text,
)
from hudi_expr.visitors import rewrite_not, visit

__all__ = ["InclusiveEvaluator", "might_match", "prepare"]

# Above this many IN values, test "some value in [min, max]" by binary search instead of per value.
_SEARCH_THRESHOLD = 16


def prepare(expr: Expression, stats: FileStats) -> Expression:
    """Bind to the stats' schema if needed, and make sure no NOT is left (rules assume NNF)."""
    if not expr.is_bound:
        return bind(expr, stats.schema)
    if any(isinstance(node, Not) for node in expr.walk()):
        return rewrite_not(expr)
    return expr


def might_match(expr: Expression, stats: FileStats) -> pa.BooleanArray:
    """True where a file may hold a row that makes ``expr`` TRUE; False only where none can."""
    view = StatsView(stats)
    mask = visit(prepare(expr, stats), InclusiveEvaluator(view))
    # An empty file holds no row at all, so it matches nothing.
    return pa.array(mask & ~view.empty, type=pa.bool_())


class InclusiveEvaluator(StatsEvaluator):
    """May some row of the file match? Unknown facts keep the file."""

    unknown = True
    purpose = "might_match"

    # ------------------------------------------------------------------------------------ nulls

    def visit_is_null(self, term: Any) -> pa.Array:
        # Some row is NULL.
        return self.col.has_nulls

    def visit_is_not_null(self, term: Any) -> pa.Array:
        # Some row is not NULL.
        return self.col.has_values

    def visit_is_nan(self, term: Any) -> pa.Array:
        # Some row is NaN; an unknown NaN count may hide one.
        return all_of(self.col.has_values, self.col.may_have_nan)

    def visit_is_not_nan(self, term: Any) -> pa.Array:
        # Some row is not NaN (NULL rows count too: Spark's NOT isnan(NULL) is TRUE).
        return self.col.has_non_nan

    # ------------------------------------------------------------------------------ comparisons

    def visit_less_than(self, term: Any, v: pa.Scalar) -> pa.Array:
        # The smallest value is below v. NaN sorts last, so NaN rows never satisfy a < v: a file
        # of only NULL and NaN rows cannot match, whatever its (unknown) bounds.
        return all_of(self.col.has_bounded_value, pc.less(self.col.min, self.col.scalar(v)))

    def visit_less_than_or_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        return all_of(self.col.has_bounded_value, pc.less_equal(self.col.min, self.col.scalar(v)))

    def visit_greater_than(self, term: Any, v: pa.Scalar) -> pa.Array:
        # The largest value is above v, or a NaN row (greater than every number) may be there.
        above = pc.greater(self.col.max, self.col.scalar(v))
        return all_of(self.col.has_values, self._or_nan(above))

    def visit_greater_than_or_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        above = pc.greater_equal(self.col.max, self.col.scalar(v))
        return all_of(self.col.has_values, self._or_nan(above))

    def visit_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        # v lies within [min, max] (-0.0 = 0.0 here as in SQL), and the membership structures
        # (bloom filters) may hold it. v is a number (= NaN is isnan after binding): NaN rows fail.
        s = self.col.scalar(v)
        inside = all_of(
            self.col.has_bounded_value, pc.less_equal(self.col.min, s), pc.greater_equal(self.col.max, s)
        )
        return self._contained(inside, pa.array([s]))

    def visit_not_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        # Only a file whose every non-null value equals v fails: min = max = v and no NaN
        # (bounds are bounds, so min = max = v pins every value even if they were truncated).
        s = self.col.scalar(v)
        all_v = all_of(pc.equal(self.col.min, s), pc.equal(self.col.max, s))
        return all_of(self.col.has_values, self._or_nan(pc.invert(all_v)))

    def visit_in(self, term: Any, values: pa.Array) -> pa.Array:
        values = self.col.values(values)
        # Some listed value lies within [min, max] (NaN was split off into isnan at bind time, so
        # NaN rows are in no list).
        inside = all_of(self.col.has_bounded_value, self._some_value_within(values))
        return self._contained(inside, values)

    def visit_not_in(self, term: Any, values: pa.Array) -> pa.Array:
        values = self.col.values(values)
        # Only a file whose every non-null value is one listed value fails (min = max in list).
        pinned = all_of(self.col.single_value, _is_in(self.col.min, values))
        return all_of(self.col.has_values, self._or_nan(pc.invert(pinned)))

    # --------------------------------------------------------------------------------- prefixes

    def visit_starts_with(self, term: Any, prefix: pa.Scalar) -> pa.Array:
        # Values with the prefix form the interval [p, succ(p)) in byte order; it meets [min, max]
        # when max >= p and min < succ(p). Bytes, so UTF-8 order is kept.
        p = prefix_bytes(prefix)
        bound = pa.scalar(p, self.col.max_bytes.type)
        reaches = pc.greater_equal(self.col.max_bytes, bound)
        succ = prefix_successor(p)
        if succ is None:  # p is all 0xFF bytes: nothing sorts above the interval
            return all_of(self.col.has_values, reaches)
        below = pc.less(self.col.min_bytes, pa.scalar(succ, self.col.min_bytes.type))
        return all_of(self.col.has_values, reaches, below)

    def visit_not_starts_with(self, term: Any, prefix: pa.Scalar) -> pa.Array:
        # If both bounds start with p, so does every value between them: the file cannot match.
        p = prefix_bytes(prefix)
        both = all_of(
            pc.starts_with(self.col.min_bytes, pattern=p), pc.starts_with(self.col.max_bytes, pattern=p)
        )
        return all_of(self.col.has_values, pc.invert(both))

    # ------------------------------------------------------------------------------- text search
    # Bounds say next to nothing about substrings or words, so only the NULL counts are used: a
    # file whose every row is NULL has no TRUE row, in either polarity.

    def visit_contains(self, term: Any, substring: Any) -> pa.Array:
        return self.col.has_values  # contains(a, '') is a IS NOT NULL

    def visit_not_contains(self, term: Any, substring: Any) -> pa.Array:
        if not search_text(substring):  # every string contains '' (binding folds this away)
            return pa.array(np.zeros(self.n, dtype=bool))
        return self.col.has_values

    def visit_contains_term(self, term: Any, word: Any) -> pa.Array:
        return self.col.has_values

    def visit_not_contains_term(self, term: Any, word: Any) -> pa.Array:
        return self.col.has_values

    # ---------------------------------------------------------------------------------- helpers

    def _or_nan(self, fact: pa.Array) -> pa.Array:
        """``fact``, or a NaN row may be there (only float columns hold NaN)."""
        return any_of(fact, self.col.may_have_nan) if self.col.is_float else fact

    def _some_value_within(self, values: pa.Array) -> pa.Array:
        return some_value_within(self.col, values)

    def _contained(self, fact: pa.Array, values: pa.Array) -> pa.Array:
        """Narrow an equality fact with what the column's membership structures (bloom filters)
        say; unknown keeps."""
        contained = self.col.cs.contained(values)
        # "Not contained" is a proof (a bloom filter has no false negatives): no row equals the values.
        return fact if contained is None else pc.and_kleene(fact, contained)


def some_value_within(col: ColumnView, values: pa.Array) -> pa.Array:
    """Per file: is some value of ``values`` within [min, max]? (null where the bounds are unknown)."""
    bounds = col.sortable_bounds if len(values) > _SEARCH_THRESHOLD else None
    sorted_values = _sortable_values(values) if bounds is not None else None
    if bounds is None or sorted_values is None:
        facts = [
            all_of(pc.less_equal(col.min, values[i]), pc.greater_equal(col.max, values[i]))
            for i in range(len(values))
        ]
        return any_of(*facts)
    lo, hi = bounds
    lo, hi = common_keys(lo, hi)
    sorted_values, lo = common_keys(sorted_values, lo)
    sorted_values, hi = common_keys(sorted_values, hi)
    # Binary search: the first value >= min comes before the first value > max.
    within = np.searchsorted(sorted_values, lo, side="left") < np.searchsorted(
        sorted_values, hi, side="right"
    )
    unknown = pc.or_(pc.is_null(col.min), pc.is_null(col.max))
    return pc.if_else(unknown, pa.scalar(None, pa.bool_()), pa.array(within))


def _sortable_values(values: pa.Array) -> np.ndarray | None:
    keys = sort_keys(values)
    return None if keys is None else np.sort(keys)


def _is_in(arr: pa.Array, values: pa.Array) -> pa.Array:
    """Membership with unknown (null) kept unknown."""
    found = pc.is_in(arr, value_set=values)
    return pc.if_else(pc.is_null(arr), pa.scalar(None, pa.bool_()), found) if arr.null_count else found
