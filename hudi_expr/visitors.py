"""One visitor mechanism: an iterative post-order ``visit`` and a visitor class per purpose.

``visit`` never recurses, so a 10,000-deep AND chain is as safe as a balanced tree. Subclass
``ExpressionVisitor`` for whole-tree work, or ``PredicateVisitor`` to get one method per leaf kind
(``visit_less_than(term, literal)``), as PyIceberg's visitors do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from hudi_expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
)

__all__ = ["ExpressionVisitor", "PredicateVisitor", "rewrite_not", "transform_leaves", "visit"]

T = TypeVar("T")


class ExpressionVisitor(Generic[T]):
    """Post-order visitor: each method gets its children's results."""

    def visit_true(self) -> T:
        raise NotImplementedError

    def visit_false(self) -> T:
        raise NotImplementedError

    def visit_not(self, node: Not, child: T) -> T:
        raise NotImplementedError

    def visit_and(self, node: And, left: T, right: T) -> T:
        raise NotImplementedError

    def visit_or(self, node: Or, left: T, right: T) -> T:
        raise NotImplementedError

    def visit_predicate(self, leaf: Predicate) -> T:
        raise NotImplementedError


def visit(expr: Expression, visitor: ExpressionVisitor[T]) -> T:
    """Apply ``visitor`` bottom-up with an explicit stack (no recursion limit)."""
    results: list[T] = []
    stack: list[tuple[Expression, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, (And, Or, Not)) and not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
        elif isinstance(node, And):
            right = results.pop()
            results.append(visitor.visit_and(node, results.pop(), right))
        elif isinstance(node, Or):
            right = results.pop()
            results.append(visitor.visit_or(node, results.pop(), right))
        elif isinstance(node, Not):
            results.append(visitor.visit_not(node, results.pop()))
        elif isinstance(node, AlwaysTrue):
            results.append(visitor.visit_true())
        elif isinstance(node, AlwaysFalse):
            results.append(visitor.visit_false())
        elif isinstance(node, Predicate):
            results.append(visitor.visit_predicate(node))
        else:
            raise TypeError(f"not an expression node: {node!r}")
    return results[0]


_LEAF_METHODS: dict[type[Predicate], str] = {
    IsNull: "visit_is_null",
    IsNotNull: "visit_is_not_null",
    IsNaN: "visit_is_nan",
    IsNotNaN: "visit_is_not_nan",
    EqualTo: "visit_equal",
    NotEqualTo: "visit_not_equal",
    LessThan: "visit_less_than",
    LessThanOrEqual: "visit_less_than_or_equal",
    GreaterThan: "visit_greater_than",
    GreaterThanOrEqual: "visit_greater_than_or_equal",
    StartsWith: "visit_starts_with",
    NotStartsWith: "visit_not_starts_with",
    In: "visit_in",
    NotIn: "visit_not_in",
}


class PredicateVisitor(ExpressionVisitor[T]):
    """Dispatches each leaf to ``visit_<kind>(term)``, ``(term, literal)`` or ``(term, values)``."""

    def visit_predicate(self, leaf: Predicate) -> T:
        method = getattr(self, _LEAF_METHODS[type(leaf)])
        if isinstance(leaf, (In, NotIn)):
            return method(leaf.term, leaf.values)
        if hasattr(leaf, "literal"):
            return method(leaf.term, leaf.literal)  # type: ignore[attr-defined]
        return method(leaf.term)


class _Rebuild(ExpressionVisitor[Expression]):
    """Rebuilds the tree (re-simplifying as it goes), mapping each leaf through ``leaf_fn``."""

    def __init__(self, leaf_fn: Callable[[Predicate], Expression], drop_not: bool) -> None:
        self.leaf_fn = leaf_fn
        self.drop_not = drop_not

    def visit_true(self) -> Expression:
        return AlwaysTrue()

    def visit_false(self) -> Expression:
        return AlwaysFalse()

    def visit_not(self, node: Not, child: Expression) -> Expression:
        # The child is already NOT-free, so ~ only swaps And/Or and negates leaves exactly.
        return ~child if self.drop_not else Not(child)

    def visit_and(self, node: And, left: Expression, right: Expression) -> Expression:
        return node if left is node.left and right is node.right else And(left, right)

    def visit_or(self, node: Or, left: Expression, right: Expression) -> Expression:
        return node if left is node.left and right is node.right else Or(left, right)

    def visit_predicate(self, leaf: Predicate) -> Expression:
        return self.leaf_fn(leaf)


def _same(leaf: Predicate) -> Expression:
    return leaf


def rewrite_not(expr: Expression) -> Expression:
    """Negation normal form: NOT pushed into the leaves by exact three-valued rules and De Morgan."""
    return visit(expr, _Rebuild(_same, drop_not=True))


def transform_leaves(expr: Expression, leaf_fn: Callable[[Predicate], Expression]) -> Expression:
    """A copy of ``expr`` with every leaf replaced by ``leaf_fn(leaf)``, simplified as it is rebuilt."""
    return visit(expr, _Rebuild(leaf_fn, drop_not=False))
