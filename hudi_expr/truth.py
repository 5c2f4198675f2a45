"""SQL's truth tests of a predicate, ``(p) IS [NOT] TRUE | FALSE | NULL``, as ordinary expressions.

A predicate is TRUE, FALSE or NULL on a row; a truth test of it is never NULL. ``is_true(p)``,
``is_false(p)`` and ``is_unknown(p)`` (``p IS NULL``) rewrite the tests into trees of the usual
leaves, exact under three-valued logic, and ``is_not_true``, ``is_not_false``, ``is_not_unknown``
are their exact negations. The results are never NULL, so ``~`` of one is exact too, and pruning,
row filters and SQL text need nothing new. The rules, per node ``x``, as T(x), F(x), N(x):

- A comparison, IN, NOT IN, prefix, substring or term test ``L`` of term ``t`` (its literals are
  never NULL) is NULL exactly when ``t`` is: T = ``L AND t IS NOT NULL``, F = ``NOT L AND t IS
  NOT NULL``, N = ``t IS NULL``. So is any AND/OR/NOT of tests of the one term ``t`` (all NULL or
  none), which is how ``(a > 1 AND a < 5) IS NULL`` becomes ``a IS NULL``.
- ``IS [NOT] NULL`` and the constants are never NULL. Beside tests of its term in a junction, a
  null test decides their NULL rows: ``a = 3 AND a IS NOT NULL`` is never NULL, ``a = 3 AND a IS
  NULL`` is NULL or FALSE.
- ``isnan``: on NULL, Spark says FALSE and DuckDB NULL, so no rewrite is right for both:
  ``TruthTestError``.
- Kleene's tables: T(p AND q) = T(p) AND T(q), F(p AND q) = F(p) OR F(q); OR is the dual; NOT
  swaps T and F. N(p AND q): no operand FALSE and one NULL (given none is FALSE, NULL is NOT T).

Apply the tests before binding: binding keeps each leaf's TRUE rows, not its NULL rows
(``int8_col < 1000`` binds to ``int8_col IS NOT NULL``), so a bound leaf is refused
(``TruthTestError``); bind the result instead. Trees of any depth are rewritten without recursion,
in time and size linear in the tree.
"""

from __future__ import annotations

from dataclasses import dataclass

from hudi_expr.errors import TruthTestError
from hudi_expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Expression,
    IsNotNull,
    IsNull,
    LiteralPredicate,
    Not,
    Or,
    Predicate,
    SetPredicate,
    Term,
)

__all__ = ["is_false", "is_not_false", "is_not_true", "is_not_unknown", "is_true", "is_unknown"]


def is_true(expr: Expression) -> Expression:
    """``(expr) IS TRUE``: the rows where ``expr`` is TRUE, as an expression that is never NULL."""
    return _truth(expr).true


def is_false(expr: Expression) -> Expression:
    """``(expr) IS FALSE``: the rows where ``expr`` is FALSE (never NULL)."""
    return _truth(expr).false


def is_unknown(expr: Expression) -> Expression:
    """``(expr) IS NULL`` (``IS UNKNOWN``): the rows where ``expr`` is NULL (never NULL itself)."""
    return _truth(expr).null


def is_not_true(expr: Expression) -> Expression:
    """``(expr) IS NOT TRUE``: FALSE or NULL; exactly ``~is_true(expr)``."""
    return _truth(expr).not_true


def is_not_false(expr: Expression) -> Expression:
    """``(expr) IS NOT FALSE``: TRUE or NULL; exactly ``~is_false(expr)``."""
    return _truth(expr).not_false


def is_not_unknown(expr: Expression) -> Expression:
    """``(expr) IS NOT NULL``: TRUE or FALSE; exactly ``~is_unknown(expr)``."""
    return ~_truth(expr).null


# ----------------------------------------------------------------------------------------- parts


@dataclass(frozen=True, slots=True)
class _Parts:
    """T, F, N of one node and the negations of T and F, each never NULL.

    The sizes are upper bounds on the leaves of T (and of NOT T), F (and NOT F) and N: a junction
    writes each operand's NULL rows in the smaller of two equivalent forms, so N stays linear.
    """

    true: Expression
    false: Expression
    null: Expression
    not_true: Expression
    not_false: Expression
    true_size: int
    false_size: int
    null_size: int


@dataclass(frozen=True, slots=True)
class _Same:
    """A subtree that is NULL exactly when ``term`` is: every leaf a null-propagating test of
    ``term``. Its parts are written only when an enclosing node mixes terms (``_written``)."""

    node: Expression
    term: Term
    size: int  # leaves


@dataclass(frozen=True, slots=True)
class _NullTest:
    """``term IS [NOT] NULL``: never NULL, and gathered with the tests of its term in a junction
    (``a IS NOT NULL AND a = 3`` is never NULL either)."""

    leaf: IsNull | IsNotNull

    @property
    def term(self) -> Term:
        return self.leaf.term


_Result = _Parts | _Same | _NullTest

_NEVER_NULL_TRUE = _Parts(AlwaysTrue(), AlwaysFalse(), AlwaysFalse(), AlwaysFalse(), AlwaysTrue(), 0, 0, 0)
_NEVER_NULL_FALSE = _Parts(AlwaysFalse(), AlwaysTrue(), AlwaysFalse(), AlwaysTrue(), AlwaysFalse(), 0, 0, 0)


def _written(result: _Result) -> _Parts:
    """The parts of a result; a ``_Same`` subtree ``p`` of term ``t``: T = ``p AND t IS NOT NULL``,
    F = ``NOT p AND t IS NOT NULL``, N = ``t IS NULL``."""
    if isinstance(result, _Parts):
        return result
    if isinstance(result, _NullTest):
        leaf, negation = result.leaf, ~result.leaf
        return _Parts(leaf, negation, AlwaysFalse(), negation, leaf, 1, 1, 0)
    p, t = result.node, result.term
    not_p = ~p
    present, missing = IsNotNull(t), IsNull(t)
    size = result.size + 1
    return _Parts(
        And(p, present), And(not_p, present), missing, Or(not_p, missing), Or(p, missing), size, size, 1
    )


def _leaf(leaf: Predicate) -> _Result:
    if leaf.is_bound:
        raise TruthTestError(
            f"{leaf} is bound: binding keeps a test's TRUE rows but not its NULL rows (int8_col < 1000 "
            "binds to int8_col IS NOT NULL), so an IS TRUE/FALSE/NULL test of it cannot be rewritten; "
            "rewrite the unbound predicate, then bind the result"
        )
    if isinstance(leaf, (LiteralPredicate, SetPredicate)):
        # The literals are never NULL (the constructors refuse NULL): NULL exactly when the term is.
        return _Same(leaf, leaf.term, 1)
    if isinstance(leaf, (IsNull, IsNotNull)):
        return _NullTest(leaf)
    raise TruthTestError(
        f"{leaf}: an IS TRUE/FALSE/NULL test of a predicate with isnan has no engine-independent "
        "meaning (isnan(NULL) is FALSE in Spark and NULL in DuckDB), so it is not rewritten"
    )


def _negation(part: _Result) -> _Result:
    """NOT swaps TRUE and FALSE; NULL stays NULL."""
    if isinstance(part, _Same):
        return _Same(Not(part.node), part.term, part.size)
    if isinstance(part, _NullTest):
        return _NullTest(IsNotNull(part.term) if isinstance(part.leaf, IsNull) else IsNull(part.term))
    return _Parts(
        part.false,
        part.true,
        part.null,
        part.not_false,
        part.not_true,
        part.false_size,
        part.true_size,
        part.null_size,
    )


@dataclass(slots=True)
class _Group:
    """The operands of a junction about one term: null-propagating tests and null tests."""

    same: list[_Same]
    null_tests: list[_NullTest]


def _junction(node: And | Or, parts: list[_Result]) -> _Result:
    """Kleene AND/OR of the operands' parts; the operands about one term are gathered first (AND and
    OR are commutative), so ``a > 1 AND a < 5 AND b = 2`` writes ``a``'s NULL rows once."""
    conjunction = isinstance(node, And)
    # Operands in first-seen order: a term's group at its first operand, written parts as they are.
    items: list[Term | _Parts] = []
    groups: dict[Term, _Group] = {}
    for part in parts:
        if isinstance(part, _Parts):
            items.append(part)
            continue
        group = groups.get(part.term)
        if group is None:
            group = groups[part.term] = _Group([], [])
            items.append(part.term)
        if isinstance(part, _Same):
            group.same.append(part)
        else:
            group.null_tests.append(part)
    if len(items) == 1 and not isinstance(items[0], _Parts) and not groups[items[0]].null_tests:
        # Every leaf is a test of one term: the whole junction is NULL exactly when the term is.
        return _Same(node, items[0], sum(s.size for s in groups[items[0]].same))
    operands = [
        item if isinstance(item, _Parts) else _gathered(item, groups[item], conjunction) for item in items
    ]
    if conjunction:
        # AND is NULL when no operand is FALSE and one is NULL; with none FALSE, NULL is NOT TRUE.
        picks = [o.null if o.null_size <= o.true_size else o.not_true for o in operands]
        not_false = And(*(o.not_false for o in operands))
        return _Parts(
            true=And(*(o.true for o in operands)),
            false=Or(*(o.false for o in operands)),
            null=And(Or(*picks), not_false),
            not_true=Or(*(o.not_true for o in operands)),
            not_false=not_false,
            true_size=sum(o.true_size for o in operands),
            false_size=sum(o.false_size for o in operands),
            null_size=sum(min(o.null_size, o.true_size) + o.false_size for o in operands),
        )
    # OR is NULL when no operand is TRUE and one is NULL; with none TRUE, NULL is NOT FALSE.
    picks = [o.null if o.null_size <= o.false_size else o.not_false for o in operands]
    not_true = And(*(o.not_true for o in operands))
    return _Parts(
        true=Or(*(o.true for o in operands)),
        false=And(*(o.false for o in operands)),
        null=And(Or(*picks), not_true),
        not_true=not_true,
        not_false=Or(*(o.not_false for o in operands)),
        true_size=sum(o.true_size for o in operands),
        false_size=sum(o.false_size for o in operands),
        null_size=sum(min(o.null_size, o.false_size) + o.true_size for o in operands),
    )


def _gathered(term: Term, group: _Group, conjunction: bool) -> _Parts:
    """The parts of the AND (OR) of a junction's operands about ``term``."""
    kinds = {type(test.leaf) for test in group.null_tests}
    if len(kinds) == 2:  # t IS NULL AND t IS NOT NULL: FALSE (OR: TRUE) on every row
        return _NEVER_NULL_FALSE if conjunction else _NEVER_NULL_TRUE
    if not group.same:
        return _written(group.null_tests[0])  # one null test, maybe repeated
    size = sum(s.size for s in group.same)
    if len(group.same) == 1:
        same = group.same[0]
    else:
        same = _Same((And if conjunction else Or)(*(s.node for s in group.same)), term, size)
    if not kinds:
        return _written(same)
    # Tests p of t beside a null test of t. Where t is not NULL, the null test is FALSE under AND
    # (TRUE under OR) or the other way, and p is TRUE or FALSE; where t is NULL, p is NULL.
    p, not_p = same.node, ~same.node
    present, missing = IsNotNull(term), IsNull(term)
    if kinds == ({IsNotNull} if conjunction else {IsNull}):
        # p AND t IS NOT NULL (p OR t IS NULL): the null test decides where t is NULL: never NULL.
        true = And(p, present) if conjunction else Or(p, missing)
        false = Or(not_p, missing) if conjunction else And(not_p, present)
        return _Parts(true, false, AlwaysFalse(), false, true, size + 1, size + 1, 0)
    if conjunction:  # p AND t IS NULL: NULL where t is NULL, FALSE elsewhere
        return _Parts(AlwaysFalse(), present, missing, AlwaysTrue(), missing, 0, 1, 1)
    # p OR t IS NOT NULL: TRUE where t is not NULL, NULL where it is
    return _Parts(present, AlwaysFalse(), missing, missing, AlwaysTrue(), 1, 0, 1)


def _truth(expr: Expression) -> _Parts:
    """The parts of ``expr``, bottom-up with an explicit stack (any depth), each shared subtree once."""
    done: dict[int, _Result] = {}  # id(node) -> its result; the nodes live as long as ``expr``
    results: list[_Result] = []
    # (node, its operands once they are on the stack)
    stack: list[tuple[Expression, list[Expression] | None]] = [(expr, None)]
    while stack:
        node, operands = stack.pop()
        result: _Result
        if operands is None:
            known = done.get(id(node))
            if known is not None:
                results.append(known)
                continue
            if isinstance(node, (And, Or, Not)):
                # AND/OR chains as one junction of their flattened operands: linear for long chains.
                children = [node.child] if isinstance(node, Not) else node.operands()
                stack.append((node, children))
                stack.extend((child, None) for child in reversed(children))
                continue
            if isinstance(node, AlwaysTrue):
                result = _NEVER_NULL_TRUE
            elif isinstance(node, AlwaysFalse):
                result = _NEVER_NULL_FALSE
            elif isinstance(node, Predicate):
                result = _leaf(node)
            else:
                raise TypeError(f"not an expression node: {node!r}")
        else:
            parts = results[len(results) - len(operands) :]
            del results[len(results) - len(operands) :]
            if isinstance(node, Not):
                result = _negation(parts[0])
            else:
                assert isinstance(node, (And, Or))
                result = _junction(node, parts)
        done[id(node)] = result
        results.append(result)
    return _written(results[0])
