"""``to_pyarrow``: a row filter (``pyarrow.compute.Expression``) with the library's SQL semantics.

Arrow compares floats by IEEE rules (NaN is unordered, NaN != NaN) and its hash lookups tell -0.0
from 0.0; Spark and DuckDB put NaN above every number and make it equal to itself. The leaves
below add the NaN rows back where those engines would keep them. A NULL result drops the row.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.expressions import And, BoundReference, Expression, Not, Or, Reference
from hudi_expr.types import is_float_type
from hudi_expr.visitors import PredicateVisitor, rewrite_not, visit

__all__ = ["to_pyarrow"]


def to_pyarrow(expr: Expression, schema: pa.Schema | None = None) -> pc.Expression:
    """Keep exactly the rows where ``expr`` is TRUE.

    Pass ``schema`` (or a bound expression): NaN ordering and literal coercion need column types.
    """
    if schema is not None and not expr.is_bound:
        expr = expr.bind(schema)
    return visit(rewrite_not(expr), _RowFilter())


def _field(term: Reference | BoundReference) -> pc.Expression:
    path = term.path if isinstance(term, BoundReference) else tuple(term.name.split("."))
    field = pc.field(*path) if len(path) > 1 else pc.field(path[0])
    if isinstance(term, BoundReference) and pa.types.is_float16(term.type):
        return field.cast(pa.float32())  # no float16 compute kernels; the widening is exact
    return field


def _is_float(term: Any) -> bool:
    return isinstance(term, BoundReference) and is_float_type(term.type)


def _scalar(value: Any) -> Any:
    if isinstance(value, pa.Scalar):
        return pc.scalar(value.cast(pa.float32()) if pa.types.is_float16(value.type) else value)
    return value


class _RowFilter(PredicateVisitor[pc.Expression]):
    def visit_true(self) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self) -> pc.Expression:
        return pc.scalar(False)

    def visit_not(self, node: Not, child: pc.Expression) -> pc.Expression:  # pragma: no cover
        raise TypeError("to_pyarrow rewrites NOT away first")

    def visit_and(self, node: And, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left & right  # Kleene AND

    def visit_or(self, node: Or, left: pc.Expression, right: pc.Expression) -> pc.Expression:
        return left | right  # Kleene OR

    def visit_is_null(self, term: Any) -> pc.Expression:
        return _field(term).is_null()

    def visit_is_not_null(self, term: Any) -> pc.Expression:
        return _field(term).is_valid()

    def visit_is_nan(self, term: Any) -> pc.Expression:
        return pc.is_nan(_field(term))

    def visit_is_not_nan(self, term: Any) -> pc.Expression:
        # DuckDB semantics at row level: NOT isnan(NULL) is NULL, so NULL rows are dropped.
        return ~pc.is_nan(_field(term))

    def visit_equal(self, term: Any, v: Any) -> pc.Expression:
        return _field(term) == _scalar(v)

    def visit_not_equal(self, term: Any, v: Any) -> pc.Expression:
        # IEEE NaN != v is already true, as in SQL.
        return _field(term) != _scalar(v)

    def visit_less_than(self, term: Any, v: Any) -> pc.Expression:
        return _field(term) < _scalar(v)

    def visit_less_than_or_equal(self, term: Any, v: Any) -> pc.Expression:
        return _field(term) <= _scalar(v)

    def visit_greater_than(self, term: Any, v: Any) -> pc.Expression:
        return self._or_nan(term, _field(term) > _scalar(v))

    def visit_greater_than_or_equal(self, term: Any, v: Any) -> pc.Expression:
        return self._or_nan(term, _field(term) >= _scalar(v))

    def visit_in(self, term: Any, values: Any) -> pc.Expression:
        f = _field(term)
        found = f.isin(_values(values))
        # isin says FALSE for a NULL row; SQL says NULL. Keep NULL rows NULL (matters under NOT IN).
        return pc.if_else(f.is_valid(), found, pc.scalar(pa.scalar(None, pa.bool_())))

    def visit_not_in(self, term: Any, values: Any) -> pc.Expression:
        f = _field(term)
        found = f.isin(_values(values))
        return pc.if_else(f.is_valid(), ~found, pc.scalar(pa.scalar(None, pa.bool_())))

    def visit_starts_with(self, term: Any, prefix: Any) -> pc.Expression:
        return pc.starts_with(_field(term), pattern=_prefix(prefix))

    def visit_not_starts_with(self, term: Any, prefix: Any) -> pc.Expression:
        return ~pc.starts_with(_field(term), pattern=_prefix(prefix))

    def _or_nan(self, term: Any, test: pc.Expression) -> pc.Expression:
        # NaN sorts above every number, so it is > and >= any non-NaN literal.
        return test | pc.is_nan(_field(term)) if _is_float(term) else test


def _values(values: Any) -> Any:
    if isinstance(values, pa.Array):
        return values.cast(pa.float32()) if pa.types.is_float16(values.type) else values
    return list(values)


def _prefix(prefix: Any) -> str:
    p = prefix.as_py() if isinstance(prefix, pa.Scalar) else prefix
    return p.decode("utf-8", errors="surrogateescape") if isinstance(p, bytes) else p
