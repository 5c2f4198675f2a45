"""Literal guarantees: what a predicate being TRUE says about one column's value, as a set.

``a = 1 AND (b = 'x' OR b = 'y') AND c != 3`` is TRUE only on rows where ``a IN {1}``, ``b IN {'x',
'y'}`` and ``c NOT IN {3}``. Key tagging and index lookups start from these sets (which values to
look up), the way DataFusion's ``LiteralGuarantee`` feeds its bloom-filter pruning. Only what
holds for every TRUE row is returned; a predicate that says nothing certain about a column gives
no guarantee on it (never a wrong one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.expressions import And, BoundReference, EqualTo, Expression, In, NotEqualTo, NotIn, Or

__all__ = ["LiteralGuarantee", "literal_guarantees"]


@dataclass(frozen=True)
class LiteralGuarantee:
    """Every row where the predicate is TRUE has ``column`` IN (or NOT IN) ``values``."""

    column: str
    kind: Literal["in", "not_in"]
    values: pa.Array  # distinct, non-null, in the column's type


def literal_guarantees(expr: Expression) -> list[LiteralGuarantee]:
    """The guarantees of a bound predicate (``bind`` first: values are typed), one per column and
    kind, ``in`` sets intersected across conjuncts and ``not_in`` sets united."""
    found: dict[tuple[str, str], pa.Array] = {}
    for conjunct in _flatten(expr, And):
        guarantee = _of_conjunct(conjunct)
        if guarantee is None:
            continue
        key = (guarantee.column, guarantee.kind)
        if key not in found:
            found[key] = guarantee.values
        elif guarantee.kind == "in":  # a = 1 AND a IN (1, 2): both hold, so a is in both sets
            found[key] = found[key].filter(pc.is_in(found[key], value_set=guarantee.values))
        else:  # a != 1 AND a != 2: neither value
            found[key] = pc.unique(pa.concat_arrays([found[key], guarantee.values]))
    return [LiteralGuarantee(column, _kind(kind), values) for (column, kind), values in found.items()]


def _kind(kind: str) -> Literal["in", "not_in"]:
    return "in" if kind == "in" else "not_in"


def _of_conjunct(expr: Expression) -> LiteralGuarantee | None:
    """A conjunct's guarantee: a leaf, or an OR whose every branch is an IN of the same column."""
    leaf = _of_leaf(expr)
    if leaf is not None or not isinstance(expr, Or):
        return leaf
    column: str | None = None
    sets: list[pa.Array] = []
    for branch in _flatten(expr, Or):
        g = _of_leaf(branch)
        # A branch that says nothing about the column (or says NOT IN) lets any value through.
        if g is None or g.kind != "in" or (column is not None and g.column != column):
            return None
        column = g.column
        sets.append(g.values)
    assert column is not None
    return LiteralGuarantee(column, "in", pc.unique(pa.concat_arrays(sets)))


def _of_leaf(expr: Expression) -> LiteralGuarantee | None:
    if isinstance(expr, EqualTo | NotEqualTo) and isinstance(expr.term, BoundReference):
        values = pa.array([expr.literal.as_py()], expr.term.type)
    elif isinstance(expr, In | NotIn) and isinstance(expr.term, BoundReference):
        values = expr.values
    else:
        return None
    kind = _kind("in" if isinstance(expr, EqualTo | In) else "not_in")
    return LiteralGuarantee(expr.term.name, kind, values.drop_null())


def _flatten(expr: Expression, kind: type[And] | type[Or]) -> list[Expression]:
    """The operands of nested ``kind`` nodes (``operands`` walks without recursion)."""
    return expr.operands() if isinstance(expr, kind) else [expr]
