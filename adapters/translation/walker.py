"""One translation walker for every engine adapter: an engine's filter tree -> ``hudi_expr``.

An engine adapter only reads its own node format, through ``NodeAccessors``: the ``shape`` of a
node (which of the forms below it is, with its operands), a node read as a ``column``, a node read
as a ``literal``, and a node's ``source_text``. Everything that does not depend on the engine is
decided here, once, for all engines:

- An untranslatable part (``shape`` gives None, or an accessor raises ``Untranslatable``) becomes
  TRUE ("may match") and its text goes to ``not_used``: the translation keeps every row the filter
  keeps, never fewer.
- NOT is pushed down while walking (De Morgan), and a translated leaf is negated exactly under
  three-valued logic, so ``NOT (untranslatable)`` is TRUE as well, never FALSE.
- A comparison with NULL is never TRUE, negated or not: FALSE in both polarities. ``x IN (..,
  NULL)`` is ``x IN (..)``, and ``x NOT IN (.., NULL)`` is never TRUE.
- ``IS [NOT] DISTINCT FROM`` is never NULL: its negation is the other one.
- ``LIKE`` is an equality, a prefix or a substring test only when its escape rules make it one.
- A truth test ``(p) IS [NOT] TRUE | FALSE | NULL`` is ``hudi_expr.truth``'s rewrite of ``p``
  translated exactly: under it NULL is no longer FALSE, so every shortcut above that reads NULL as
  FALSE is untranslatable there, and so is the whole test when any part of ``p`` is (TRUE for that
  part would be wrong under IS FALSE or IS NULL). NOT of a truth test is the opposite test.

The walk keeps its own stack: a 10,000-term AND chain or a 10,000-deep NOT never reaches Python's
recursion limit. No engine is imported here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from adapters.translation import widening
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Contains,
    ContainsTerm,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Or,
    Reference,
    StartsWith,
    TruthTestError,
    is_false,
    is_not_false,
    is_not_true,
    is_not_unknown,
    is_true,
    is_unknown,
)
from hudi_expr.expressions import Applied, LiteralPredicate
from hudi_expr.terms import normalize_term
from hudi_expr.translation import Translation

__all__ = [
    "NULL",
    "Between",
    "BooleanColumn",
    "Column",
    "Comparison",
    "Conjunction",
    "Constant",
    "Disjunction",
    "DistinctFrom",
    "InList",
    "LikeTest",
    "NanTest",
    "Negation",
    "NodeAccessors",
    "NullTest",
    "PrefixTest",
    "Shape",
    "SubstringTest",
    "TermTest",
    "TruthKind",
    "TruthTest",
    "Untranslatable",
    "is_predicate",
    "like",
    "translate",
    "translation",
    "truth_kind",
]

N = TypeVar("N")


class Untranslatable(Exception):
    """Raised by an accessor for a node the walker must treat as unknown (TRUE, and not used)."""


class _Null:
    """The type of ``NULL``."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()
"""What ``NodeAccessors.literal`` returns for a NULL constant (None is no marker: it is a value)."""


@dataclass(slots=True)
class Column:
    """A column as the engine's filter reads it.

    ``float_as_double``: a float32 column that the engine compares in double precision (through an
    exact float -> double cast), so a double literal is placed between two floats rather than
    rounded to one the way ``hudi_expr`` reads it.
    """

    ref: Reference | Applied  # a column, or a monotonic function of one (``year(d)``)
    float_as_double: bool = False


# ------------------------------------------------------------------------------------ node shapes
# What ``NodeAccessors.shape`` returns: the forms the walker knows, with the engine's own nodes as
# operands. Operands read as columns or literals go through ``column`` and ``literal``.


@dataclass(slots=True)
class Conjunction(Generic[N]):
    """``c1 AND c2 AND ...``."""

    children: Sequence[N]


@dataclass(slots=True)
class Disjunction(Generic[N]):
    """``c1 OR c2 OR ...``."""

    children: Sequence[N]


@dataclass(slots=True)
class Negation(Generic[N]):
    """``NOT child``."""

    child: N


@dataclass(slots=True)
class Comparison(Generic[N]):
    """``left op right``, one side a column and the other a literal (``5 < a`` is ``a > 5``).

    ``op`` is one of EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan,
    GreaterThanOrEqual. ``negation``: what ``NOT (column op literal)`` is in the engine, when the
    engine states it; by default the exact three-valued negation ``hudi_expr`` uses (``NOT a < v``
    is ``a >= v``: NaN ordered above every number, as in DuckDB and Spark).
    """

    op: type[LiteralPredicate]
    left: N
    right: N
    negation: type[LiteralPredicate] | None = None


@dataclass(slots=True)
class DistinctFrom(Generic[N]):
    """``left IS DISTINCT FROM right`` (``distinct``) or ``IS NOT DISTINCT FROM`` (Spark's ``<=>``)."""

    left: N
    right: N
    distinct: bool


@dataclass(slots=True)
class Between(Generic[N]):
    """``value BETWEEN low AND high``."""

    value: N
    low: N
    high: N


@dataclass(slots=True)
class InList(Generic[N]):
    """``value IN (items)``, or ``NOT IN`` when ``negated``."""

    value: N
    items: Sequence[N]
    negated: bool = False


@dataclass(slots=True)
class NullTest(Generic[N]):
    """``operand IS NULL`` (``is_null``) or ``IS NOT NULL``."""

    operand: N
    is_null: bool


@dataclass(slots=True)
class NanTest(Generic[N]):
    """``isnan(operand)``: FALSE for NULL."""

    operand: N


@dataclass(slots=True)
class PrefixTest(Generic[N]):
    """``starts_with(operand, prefix)``."""

    operand: N
    prefix: N


@dataclass(slots=True)
class SubstringTest(Generic[N]):
    """``contains(operand, substring)``."""

    operand: N
    substring: N


@dataclass(slots=True)
class TermTest(Generic[N]):
    """``contains_term(operand, word)`` (see ``hudi_expr.terms``)."""

    operand: N
    word: N


@dataclass(slots=True)
class LikeTest(Generic[N]):
    """``operand LIKE pattern`` (``NOT LIKE`` when ``negated``); ``escape`` is the engine's escape
    character for this LIKE (None: the pattern has none)."""

    operand: N
    pattern: N
    escape: str | None = None
    negated: bool = False


TruthKind = Literal["true", "false", "null", "not true", "not false", "not null"]


@dataclass(slots=True)
class TruthTest(Generic[N]):
    """``(operand) IS <kind>`` of a predicate ``operand`` (``IS NULL`` of a column is a ``NullTest``):
    ``kind`` is "true", "false", "null" (``IS NULL``, ``IS UNKNOWN``), "not true", "not false" or
    "not null"."""

    operand: N
    kind: TruthKind


@dataclass(slots=True)
class Constant(Generic[N]):
    """A constant used as the whole condition (``WHERE TRUE``, ``WHERE NULL``), read by ``literal``."""

    node: N


@dataclass(slots=True)
class BooleanColumn(Generic[N]):
    """A boolean column used as the whole condition (``WHERE flag``), read by ``column``."""

    node: N


Shape = (
    Conjunction[N]
    | Disjunction[N]
    | Negation[N]
    | Comparison[N]
    | DistinctFrom[N]
    | Between[N]
    | InList[N]
    | NullTest[N]
    | NanTest[N]
    | PrefixTest[N]
    | SubstringTest[N]
    | TermTest[N]
    | LikeTest[N]
    | TruthTest[N]
    | Constant[N]
    | BooleanColumn[N]
)

# The shapes of predicates: what a truth test applies to (a column or a constant is not one).
_PREDICATES = (
    Conjunction,
    Disjunction,
    Negation,
    Comparison,
    DistinctFrom,
    Between,
    InList,
    NullTest,
    NanTest,
    PrefixTest,
    SubstringTest,
    TermTest,
    LikeTest,
    TruthTest,
)


def is_predicate(shape: Shape[N] | None) -> bool:
    """Whether ``shape`` is a test or a junction of tests: ``(shape) IS NULL`` is then a truth test,
    not a column's ``NullTest`` (adapters decide with this which one a node is)."""
    return isinstance(shape, _PREDICATES)


def truth_kind(value: Any, distinct: bool) -> TruthKind | None:
    """The truth test ``p IS [NOT] DISTINCT FROM value`` is for a predicate ``p`` (``IS NOT DISTINCT
    FROM TRUE`` is ``IS TRUE``, ``<=> NULL`` is ``IS NULL``); None unless ``value`` is TRUE, FALSE or
    ``NULL``."""
    if value is NULL:
        kind: TruthKind = "null"
    elif value is True:
        kind = "true"
    elif value is False:
        kind = "false"
    else:
        return None
    return _OPPOSITE[kind] if distinct else kind


_OPPOSITE: dict[TruthKind, TruthKind] = {
    "true": "not true",
    "false": "not false",
    "null": "not null",
    "not true": "true",
    "not false": "false",
    "not null": "null",
}
_TESTS: dict[TruthKind, Callable[[Expression], Expression]] = {
    "true": is_true,
    "false": is_false,
    "null": is_unknown,
    "not true": is_not_true,
    "not false": is_not_false,
    "not null": is_not_unknown,
}


class NodeAccessors(Protocol[N]):
    """What an engine adapter supplies: how to read its nodes. Nothing else is engine-specific."""

    def shape(self, node: N) -> Shape[N] | None:
        """The form of ``node`` with its operands; None when it is none of the known forms."""
        ...

    def column(self, node: N) -> Column:
        """``node`` as a column of the table; raises ``Untranslatable`` when it is not one."""
        ...

    def literal(self, node: N) -> Any:
        """``node`` as a ``hudi_expr`` literal (``NULL`` for NULL); raises ``Untranslatable`` when it
        is not a constant the engine's value can be known for."""
        ...

    def source_text(self, node: N) -> str:
        """The text ``node`` came from, reported in ``not_used`` when it is not translated."""
        ...

    def compared(self, column: Column, operands: Sequence[N]) -> Column:
        """``column`` as the engine compares it with the constants among ``operands`` (one leaf's):
        the engine may widen it to a constant's type first. Raises ``Untranslatable`` when that
        comparison has no exact form."""
        ...


# ----------------------------------------------------------------------------------------- walk


def translation(nodes: NodeAccessors[N], roots: Iterable[N]) -> Translation:
    """The conjunction of ``roots`` and the text of each part not used (once, first seen first)."""
    not_used: list[str] = []
    expr = And(*[translate(nodes, root, not_used=not_used) for root in roots])
    return Translation(expr, tuple(dict.fromkeys(not_used)))


def translate(
    nodes: NodeAccessors[N], root: N, negated: bool = False, not_used: list[str] | None = None
) -> Expression:
    """The expression of ``root`` (of ``NOT root`` when ``negated``), TRUE where unknown.

    The source text of each untranslated part is appended to ``not_used``.
    """
    unused: list[str] = []
    results: list[Expression] = []
    # (node, negated, exact, what the node waits for once its operands are on the stack): ``exact``
    # under a truth test, where the translation must keep the node's NULL rows too, not only TRUE.
    stack: list[tuple[N, bool, bool, Conjunction[N] | Disjunction[N] | _Pending | None]] = [
        (root, negated, False, None)
    ]
    while stack:
        node, neg, exact, waiting = stack.pop()
        if isinstance(waiting, _Pending):
            operand = results.pop()
            try:
                if len(unused) > waiting.unused:
                    raise Untranslatable  # TRUE for a part of the operand: wrong under IS FALSE
                test = _OPPOSITE[waiting.kind] if neg else waiting.kind  # never NULL: NOT is exact
                results.append(_TESTS[test](operand))
            except (Untranslatable, TruthTestError):
                del unused[waiting.unused :]  # the whole test is what is not used
                unused.append(_part(nodes, node, exact))
                results.append(AlwaysTrue())
            continue
        if waiting is not None:
            count = len(waiting.children)
            parts = results[len(results) - count :]
            del results[len(results) - count :]
            is_and = isinstance(waiting, Conjunction) != neg  # De Morgan under NOT
            results.append(And(*parts) if is_and else Or(*parts))
            continue
        shape = nodes.shape(node)
        if isinstance(shape, (Conjunction, Disjunction)):
            stack.append((node, neg, exact, shape))
            stack.extend((child, neg, exact, None) for child in reversed(shape.children))
        elif isinstance(shape, Negation):
            stack.append((shape.child, not neg, exact, None))
        elif isinstance(shape, TruthTest):
            stack.append((node, neg, exact, _Pending(shape.kind, len(unused))))
            stack.append((shape.operand, False, True, None))
        else:
            try:
                if shape is None:
                    raise Untranslatable
                results.append(_leaf(nodes, shape, neg, exact))
            except Untranslatable:
                unused.append(_part(nodes, node, exact))
                results.append(AlwaysTrue())
    if not_used is not None:
        not_used.extend(unused)
    return results[0]


def _part(nodes: NodeAccessors[N], node: N, exact: bool) -> str:
    """The text of an untranslated part; inside a truth test's operand it only counts (the whole
    test is what is reported), so the engine is not asked for it."""
    return "" if exact else nodes.source_text(node)


@dataclass(slots=True)
class _Pending:
    """A truth test whose operand is being walked; ``unused``: the parts not used before it."""

    kind: TruthKind
    unused: int


def _null(exact: bool) -> Expression:
    """A test with a NULL operand: NULL on every row, so never TRUE, negated or not (FALSE). Under a
    truth test its NULL rows count, and no expression is NULL on every row: untranslatable."""
    if exact:
        raise Untranslatable
    return AlwaysFalse()


def _leaf(nodes: NodeAccessors[N], shape: Shape[N], neg: bool, exact: bool) -> Expression:
    """The expression of one leaf form (of its negation when ``neg``); may raise Untranslatable.

    ``exact``: NULL exactly where the form is NULL too (under a truth test), not merely TRUE exactly
    where it is TRUE.
    """
    if isinstance(shape, Comparison):
        return _comparison(nodes, shape, neg, exact)
    if isinstance(shape, DistinctFrom):
        return _distinct(nodes, shape, neg, exact)
    if isinstance(shape, Between):
        operands = (shape.value, shape.low, shape.high)
        low = _comparison(nodes, Comparison(GreaterThanOrEqual, shape.value, shape.low), neg, exact, operands)
        high = _comparison(nodes, Comparison(LessThanOrEqual, shape.value, shape.high), neg, exact, operands)
        return Or(low, high) if neg else And(low, high)
    if isinstance(shape, InList):
        return _in(nodes, shape, neg != shape.negated, exact)
    if isinstance(shape, NullTest):
        ref = nodes.column(shape.operand).ref
        return IsNull(ref) if shape.is_null != neg else IsNotNull(ref)
    leaf: Expression
    if isinstance(shape, NanTest):
        leaf = IsNaN(nodes.column(shape.operand).ref)
    elif isinstance(shape, PrefixTest):
        column = nodes.column(shape.operand)
        prefix = nodes.literal(shape.prefix)
        if prefix is NULL:
            return _null(exact)
        if not isinstance(prefix, str) or column.float_as_double:
            raise Untranslatable
        leaf = StartsWith(column.ref, prefix)
    elif isinstance(shape, (SubstringTest, TermTest)):
        column = nodes.column(shape.operand)
        text = nodes.literal(shape.substring if isinstance(shape, SubstringTest) else shape.word)
        if text is NULL:
            return _null(exact)
        if not isinstance(text, str) or column.float_as_double:
            raise Untranslatable
        if isinstance(shape, SubstringTest):
            leaf = Contains(column.ref, text)
        else:
            try:
                normalize_term(text)
            except ValueError:
                raise Untranslatable from None  # not one word: the engine reports the error
            leaf = ContainsTerm(column.ref, text)
    elif isinstance(shape, LikeTest):
        column = nodes.column(shape.operand)
        pattern = nodes.literal(shape.pattern)
        if pattern is NULL:
            return _null(exact)
        if not isinstance(pattern, str) or column.float_as_double:
            raise Untranslatable
        leaf = like(column.ref, pattern, shape.escape)
        neg = neg != shape.negated
    elif isinstance(shape, Constant):
        value = nodes.literal(shape.node)
        if value is NULL:
            return _null(exact)  # WHERE NULL and WHERE NOT NULL keep no row
        if not isinstance(value, bool):
            raise Untranslatable
        return AlwaysTrue() if value != neg else AlwaysFalse()
    elif isinstance(shape, BooleanColumn):
        return EqualTo(nodes.column(shape.node).ref, not neg)
    else:  # a junction or NOT is walked, never a leaf
        raise Untranslatable
    return ~leaf if neg else leaf


# Each comparison with the column on the other side (``5 < a`` is ``a > 5``), and its exact
# three-valued negation (NaN is ordered, so ``NOT a < v`` is ``a >= v``).
_FLIPPED: dict[type[LiteralPredicate], type[LiteralPredicate]] = {
    EqualTo: EqualTo,
    NotEqualTo: NotEqualTo,
    LessThan: GreaterThan,
    LessThanOrEqual: GreaterThanOrEqual,
    GreaterThan: LessThan,
    GreaterThanOrEqual: LessThanOrEqual,
}


def _sides(nodes: NodeAccessors[N], left: N, right: N) -> tuple[Column, N, bool]:
    """The column side, the other side, and whether they were swapped (the column was on the right)."""
    try:
        return nodes.column(left), right, False
    except Untranslatable:
        return nodes.column(right), left, True


def _comparison(
    nodes: NodeAccessors[N], shape: Comparison[N], neg: bool, exact: bool, operands: Sequence[N] = ()
) -> Expression:
    """``operands``: every operand of the leaf (a BETWEEN's three), which decide the compared type."""
    column, other, swapped = _sides(nodes, shape.left, shape.right)
    column = nodes.compared(column, operands or (shape.left, shape.right))
    value = nodes.literal(other)
    if value is NULL:
        return _null(exact)
    # Exact under three-valued logic: NOT (a < v) is a >= v, NULL where a is NULL either way. A
    # negation pair is of one kind (checked where the leaves are declared).
    op = (shape.negation or cast(type[LiteralPredicate], shape.op.negation)) if neg else shape.op
    return _compare(_FLIPPED[op] if swapped else op, column, value, exact)


def _distinct(nodes: NodeAccessors[N], shape: DistinctFrom[N], neg: bool, exact: bool) -> Expression:
    column, other, _ = _sides(nodes, shape.left, shape.right)
    column = nodes.compared(column, (shape.left, shape.right))
    value = nodes.literal(other)
    same = shape.distinct == neg  # IS NOT DISTINCT FROM; never NULL, so NOT is the other one
    if value is NULL:
        return IsNull(column.ref) if same else IsNotNull(column.ref)
    if same:
        # = is NULL where the column is, where IS NOT DISTINCT FROM is FALSE: a truth test sees it.
        equal = _compare(EqualTo, column, value)
        return And(equal, IsNotNull(column.ref)) if exact else equal
    return Or(_compare(NotEqualTo, column, value), IsNull(column.ref))


def _in(nodes: NodeAccessors[N], shape: InList[N], neg: bool, exact: bool) -> Expression:
    column = nodes.compared(nodes.column(shape.value), (shape.value, *shape.items))
    values = [nodes.literal(item) for item in shape.items]
    kept = [v for v in values if v is not NULL]
    if exact and len(kept) < len(values):
        raise Untranslatable  # x IN (1, NULL) is NULL, not FALSE, where x <> 1
    if neg and len(kept) < len(values):
        return AlwaysFalse()  # x NOT IN (.., NULL) is never TRUE
    if column.float_as_double:
        # A double no float equals is never matched (and NOT IN is TRUE for it): drop it.
        kept = [v for v in map(widening.as_double, kept) if widening.float32_exact(v)]
        if not kept:
            if exact:
                raise Untranslatable  # FALSE (NOT IN: TRUE) on every row but the NULL ones
            return IsNotNull(column.ref) if neg else AlwaysFalse()
    expr = In(column.ref, kept)
    return ~expr if neg else expr


def _compare(op: type[LiteralPredicate], column: Column, value: Any, exact: bool = False) -> Expression:
    if column.float_as_double:
        compared = widening.compare_float_as_double(op, column.ref, value)
        if exact and not isinstance(compared, LiteralPredicate):
            raise Untranslatable  # = 0.1D is FALSE (<> TRUE) on every row but the NULL ones
        return compared
    return op(column.ref, value)


def like(ref: Reference | Applied, pattern: str, escape: str | None = None) -> Expression:
    """``ref LIKE pattern`` as an equality, a prefix or a substring test (``'%text%'``); raises
    ``Untranslatable`` otherwise.

    ``_`` anywhere, or ``%`` inside the text, makes none of those; an escaped character is itself
    (``escape`` None: the pattern has no escape character). A trailing escape is untranslatable
    (an error at run time).
    """
    chars: list[str] = []
    wild: list[bool] = []  # per character of ``chars``: an unescaped %
    it = iter(pattern)
    for ch in it:
        if ch == escape:
            nxt = next(it, None)
            if nxt is None:
                raise Untranslatable
            chars.append(nxt)
            wild.append(False)
        elif ch == "_":
            raise Untranslatable
        else:
            chars.append(ch)
            wild.append(ch == "%")
    start, end = 0, len(chars)
    while start < end and wild[start]:
        start += 1
    while end > start and wild[end - 1]:
        end -= 1
    if any(wild[start:end]):
        raise Untranslatable  # a wildcard inside the text
    text = "".join(chars[start:end])
    leading, trailing = start > 0, end < len(chars)
    if not leading and not trailing:
        return EqualTo(ref, text)
    if not text:
        # '%' matches every non-null string, and NOT LIKE '%' none: StartsWith('') negates exactly
        # (binding makes it IS NOT NULL, its negation FALSE; IS NOT NULL's would be IS NULL).
        return StartsWith(ref, "")
    if not leading:
        return StartsWith(ref, text)
    if not trailing:
        raise Untranslatable  # a suffix test
    return Contains(ref, text)
