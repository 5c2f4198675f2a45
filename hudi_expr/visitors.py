"""One visitor mechanism: an iterative post-order ``visit`` and a visitor class per purpose.

``visit`` never recurses, so a 10,000-deep AND chain is as safe as a balanced tree. Subclass
``ExpressionVisitor`` for whole-tree work, or ``PredicateVisitor`` to get one method per leaf kind
(``visit_less_than(term, literal)``), as PyIceberg's visitors do; those methods come from the leaves'
declarations and are abstract, so a visitor missing one fails when it is defined.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod, update_abstractmethods
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from hudi_expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    Not,
    Or,
    Predicate,
    leaf_classes,
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


class PredicateVisitor(ExpressionVisitor[T], metaclass=ABCMeta):
    """Dispatches each leaf to its declared rule: ``visit_<kind>(*leaf.args)``.

    The rules are ``visit_is_null(term)``, ``visit_less_than(term, literal)``,
    ``visit_in(term, values)`` and so on: one abstract method per declared leaf, generated from the
    declarations (``Predicate.visitor_method``), so a new leaf adds a rule every visitor must write.

    A subclass that writes some rules must write (or inherit) all of them: one missing is a
    ``TypeError`` when the class is defined, not when that leaf is first visited. A subclass that
    writes none is a partial base (rules left to its subclasses, like ``StatsEvaluator``) and cannot
    be instantiated; a base that writes only some says so with ``class X(PredicateVisitor[T],
    abstract=True)``.
    """

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract or not any(leaf.visitor_method in cls.__dict__ for leaf in _LEAVES):
            return
        missing = [
            leaf
            for leaf in _LEAVES
            if getattr(getattr(cls, leaf.visitor_method), "__isabstractmethod__", False)
        ]
        if missing:
            rules = ", ".join(f"{leaf.visitor_method} ({leaf.__name__})" for leaf in missing)
            raise TypeError(f"{cls.__name__} has no rule for {rules}; a PredicateVisitor needs one per leaf")

    def visit_predicate(self, leaf: Predicate) -> T:
        rule: Callable[..., T] = getattr(self, leaf.visitor_method)
        return rule(*leaf.args)


def _abstract_rule(leaf: type[Predicate]) -> Callable[..., Any]:
    """The abstract method for one leaf's rule, documented from its declaration."""

    def rule(self: PredicateVisitor[Any], *args: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.{leaf.visitor_method}")

    rule.__name__ = leaf.visitor_method
    rule.__qualname__ = f"PredicateVisitor.{leaf.visitor_method}"
    rule.__doc__ = f"The rule for ``{leaf.__name__}`` (``{leaf.sql_template}``), called with its ``args``."
    return abstractmethod(rule)


def _add_rules() -> tuple[type[Predicate], ...]:
    """One abstract rule on ``PredicateVisitor`` per declared leaf; returns the leaves."""
    leaves = leaf_classes()
    for leaf in leaves:
        if hasattr(PredicateVisitor, leaf.visitor_method):
            raise TypeError(f"{leaf.__name__}: {leaf.visitor_method!r} is already a visitor method")
        setattr(PredicateVisitor, leaf.visitor_method, _abstract_rule(leaf))
    update_abstractmethods(PredicateVisitor)
    return leaves


_LEAVES = _add_rules()


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
