"""A float32 column compared in double precision: where a double literal falls among the floats.

``hudi_expr`` rounds a literal to the column's precision (DuckDB's reading of ``float_col = 0.1``).
An engine that widens the column instead (Spark's ``CAST(f AS DOUBLE) = 0.1D``) compares the
float, made exact as a double, with the exact double: no float equals the double 0.1, and
``< 0.1D`` means "at most the float below it". This module places such a literal.
"""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np

from hudi_expr import (
    AlwaysFalse,
    EqualTo,
    Expression,
    GreaterThanOrEqual,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Reference,
)
from hudi_expr.expressions import Applied, LiteralPredicate

__all__ = ["as_double", "compare_float_as_double", "float32_exact"]


def as_double(value: Any) -> Any:
    """A number as the engine casts it to DOUBLE for the comparison (an int or a decimal constant
    of a comparison whose type is DOUBLE); anything else unchanged."""
    if isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
        return float(value)
    return value


def float32_exact(value: Any) -> bool:
    """Whether a double equals some float32 (NaN does: NaN = NaN in DuckDB and Spark)."""
    if not isinstance(value, float):
        return False
    with np.errstate(over="ignore"):  # beyond the float range: inf, which differs from value
        return value != value or float(np.float32(value)) == value


def compare_float_as_double(op: type[LiteralPredicate], ref: Reference | Applied, value: Any) -> Expression:
    """``op(ref, value)`` for a float32 column ``ref`` compared with ``value`` as doubles.

    ``op`` is EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan or GreaterThanOrEqual.
    """
    value = as_double(value)
    if not isinstance(value, float) or float32_exact(value):
        return op(ref, value)
    with np.errstate(over="ignore"):
        near = np.float32(value)
        if float(near) < value:
            low, high = near, np.nextafter(near, np.float32(np.inf))
        else:
            low, high = np.nextafter(near, np.float32(-np.inf)), near
    if op is EqualTo:
        return AlwaysFalse()  # no float equals it
    if op is NotEqualTo:
        return IsNotNull(ref)  # every float differs from it
    if op in (LessThan, LessThanOrEqual):
        return LessThanOrEqual(ref, float(low))
    return GreaterThanOrEqual(ref, float(high))
