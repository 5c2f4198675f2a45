"""``all_match``: which files have every row TRUE for the predicate (strict evaluation).

Answers COUNT(*) and whole-file deletes from metadata alone. The mirror of ``inclusive``: each
rule must hold for every row, so any NULL row (comparisons with NULL are not TRUE) or possible NaN
row that fails the test rules the file out, and whatever stays unknown means "not surely".
An empty file matches vacuously.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.expressions import Expression
from hudi_expr.inclusive import prepare, some_value_within
from hudi_expr.stats import FileStats
from hudi_expr.statsview import (
    StatsEvaluator,
    StatsView,
    all_of,
    any_of,
    prefix_bytes,
    prefix_successor,
    search_text,
)
from hudi_expr.visitors import visit

__all__ = ["StrictEvaluator", "all_match"]


def all_match(expr: Expression, stats: FileStats) -> pa.BooleanArray:
    """True where every row of the file surely makes ``expr`` TRUE."""
    view = StatsView(stats)
    mask = visit(prepare(expr, stats), StrictEvaluator(view))
    return pa.array(mask | view.empty, type=pa.bool_())


class StrictEvaluator(StatsEvaluator):
    """Does every row of the file match? Unknown facts mean "not surely".

    Sound, not complete: an OR whose rows are split between its two sides is not recognized.
    """

    unknown = False
    purpose = "all_match"

    def visit_is_null(self, term: Any) -> pa.Array:
        return self.col.all_null

    def visit_is_not_null(self, term: Any) -> pa.Array:
        return self.col.no_nulls

    def visit_is_nan(self, term: Any) -> pa.Array:
        return self.col.all_nan

    def visit_is_not_nan(self, term: Any) -> pa.Array:
        # DuckDB's NOT isnan(NULL) is NULL, so NULL rows fail here.
        return all_of(self.col.no_nulls, self.col.no_nan)

    def visit_less_than(self, term: Any, v: pa.Scalar) -> pa.Array:
        # Every value below v: max < v, and no NULL or NaN row (NaN is above every number).
        return all_of(self.col.no_nulls, self.col.no_nan, pc.less(self.col.max, self.col.scalar(v)))

    def visit_less_than_or_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        return all_of(self.col.no_nulls, self.col.no_nan, pc.less_equal(self.col.max, self.col.scalar(v)))

    def visit_greater_than(self, term: Any, v: pa.Scalar) -> pa.Array:
        # min > v; NaN rows are greater than v too, so they do not spoil it, and a file of only
        # NaN rows matches whatever its (unknown) bounds.
        above = pc.greater(self.col.min, self.col.scalar(v))
        return all_of(self.col.no_nulls, any_of(self.col.no_bounded_value, above))

    def visit_greater_than_or_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        above = pc.greater_equal(self.col.min, self.col.scalar(v))
        return all_of(self.col.no_nulls, any_of(self.col.no_bounded_value, above))

    def visit_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        s = self.col.scalar(v)
        pinned = all_of(pc.equal(self.col.min, s), pc.equal(self.col.max, s))
        return all_of(self.col.no_nulls, self.col.no_nan, pinned)

    def visit_not_equal(self, term: Any, v: pa.Scalar) -> pa.Array:
        # v outside [min, max]; NaN rows differ from v (a number: != NaN is NOT isnan after
        # binding), so they do not spoil it, and a file of only NaN rows matches.
        s = self.col.scalar(v)
        outside = any_of(pc.less(self.col.max, s), pc.greater(self.col.min, s))
        return all_of(self.col.no_nulls, any_of(self.col.no_bounded_value, outside))

    def visit_in(self, term: Any, values: pa.Array) -> pa.Array:
        values = self.col.values(values)
        found = pc.is_in(self.col.min, value_set=values)
        return all_of(self.col.no_nulls, self.col.no_nan, self.col.single_value, found)

    def visit_not_in(self, term: Any, values: pa.Array) -> pa.Array:
        values = self.col.values(values)
        # No listed value within [min, max]; the list holds no NaN, so NaN rows are not in it.
        none_within = pc.invert(some_value_within(self.col, values))
        return all_of(self.col.no_nulls, any_of(self.col.no_bounded_value, none_within))

    def visit_starts_with(self, term: Any, prefix: pa.Scalar) -> pa.Array:
        # Both bounds start with p, hence every value between them does.
        p = prefix_bytes(prefix)
        both = all_of(
            pc.starts_with(self.col.min_bytes, pattern=p), pc.starts_with(self.col.max_bytes, pattern=p)
        )
        return all_of(self.col.no_nulls, both)

    def visit_not_starts_with(self, term: Any, prefix: pa.Scalar) -> pa.Array:
        # [min, max] misses the interval [p, succ(p)): max < p, or min >= succ(p).
        p = prefix_bytes(prefix)
        below = pc.less(self.col.max_bytes, pa.scalar(p, self.col.max_bytes.type))
        succ = prefix_successor(p)
        if succ is None:
            return all_of(self.col.no_nulls, below)
        above = pc.greater_equal(self.col.min_bytes, pa.scalar(succ, self.col.min_bytes.type))
        return all_of(self.col.no_nulls, any_of(below, above))

    # Whether a string holds a substring or a word is not in the statistics: only the empty
    # substring is known to be in every non-null string (binding folds it to IS NOT NULL).

    def visit_contains(self, term: Any, substring: Any) -> pa.Array:
        if not search_text(substring):
            return self.col.no_nulls
        return pa.array(np.zeros(self.n, dtype=bool))

    def visit_not_contains(self, term: Any, substring: Any) -> pa.Array:
        return pa.array(np.zeros(self.n, dtype=bool))

    def visit_contains_term(self, term: Any, word: Any) -> pa.Array:
        return pa.array(np.zeros(self.n, dtype=bool))

    def visit_not_contains_term(self, term: Any, word: Any) -> pa.Array:
        return pa.array(np.zeros(self.n, dtype=bool))
