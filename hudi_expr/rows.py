"""``to_pyarrow``: a row filter (``pyarrow.compute.Expression``) with the library's SQL semantics.

Arrow compares floats by IEEE rules (NaN is unordered, NaN != NaN) and its hash lookups tell -0.0
from 0.0; Spark and DuckDB put NaN above every number and make it equal to itself. The leaves
below add the NaN rows back where those engines would keep them. A NULL result drops the row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.errors import ExpressionTooDeepError
from hudi_expr.expressions import And, Applied, BoundReference, Expression, Not, Or, Reference
from hudi_expr.terms import normalize_term, term_regex
from hudi_expr.types import is_float_type
from hudi_expr.visitors import PredicateVisitor, rewrite_not, visit

__all__ = ["MAX_ROW_FILTER_DEPTH", "to_pyarrow"]


def to_pyarrow(expr: Expression, schema: pa.Schema | None = None) -> pc.Expression:
    """Keep exactly the rows where ``expr`` is TRUE.

    Pass ``schema`` (or a bound expression): NaN ordering and literal coercion need column types.
    AND/OR chains are flattened and deep alternating nests rebalanced (see ``_Spine``); a filter
    still nested deeper than ``MAX_ROW_FILTER_DEPTH`` raises ``ExpressionTooDeepError`` rather than
    reach pyarrow, whose evaluator crashes (stack overflow) on expressions a few thousand deep.
    """
    if schema is not None and not expr.is_bound:
        expr = expr.bind(schema)
    done = _finish(visit(rewrite_not(expr), _RowFilter()))
    limit = MAX_ROW_FILTER_DEPTH
    if done.depth > limit:
        raise ExpressionTooDeepError(
            f"the row filter nests {done.depth} levels deep after flattening and rebalancing its "
            f"AND/OR; the limit is {limit} (pyarrow's evaluator overflows its stack and crashes "
            "on deeper expressions): simplify the predicate, e.g. into an IN list"
        )
    return done.expr


MAX_ROW_FILTER_DEPTH = 1_000
"""The deepest row filter handed to pyarrow, in nested calls (an AND/OR chain is one level).

pyarrow 26 crashes near 8,500 levels on an 8 MiB stack (less on smaller thread stacks); after
flattening and rebalancing, only pathological leaves come anywhere near this limit."""


@dataclass
class _Done:
    """A finished pyarrow expression and an upper bound on its nesting depth."""

    expr: pc.Expression
    depth: int


_LEAF_DEPTH = 4  # a comparison, IN or text test with its casts and NULL/NaN handling
_SHALLOW = 32  # a part at most this deep joins a chain; a deeper one becomes (or extends) a spine


class _Chain(list[_Done]):
    """The operands of an AND (or OR) chain, combined in groups once complete (see ``_combine``)."""

    def __init__(self, op: str, items: list[_Done]) -> None:
        super().__init__(items)
        self.op = op
        self.item_depth = max((i.depth for i in items), default=0)

    def add(self, items: list[_Done]) -> None:
        self.extend(items)
        self.item_depth = max([self.item_depth, *(i.depth for i in items)])

    @property
    def depth(self) -> int:
        levels = max(1, math.ceil(math.log(max(len(self), 1), _GROUP)))
        return self.item_depth + 2 * levels


class _Spine:
    """``base`` combined, in order, with each step: ``(base AND x1 AND x2) OR y1 ...``.

    A deep alternating nest such as ``((a AND b) OR c) AND d ...`` is a spine: one deep side and
    one shallow operand per level. Each step is the map ``x -> (x AND A) OR B`` (AND ``s``:
    ``A = s, B = FALSE``; OR ``s``: ``A = TRUE, B = s``), and two maps compose into one,
    ``(A1 AND A2, (B1 AND A2) OR B2)``, because Kleene's AND/OR distribute over each other like
    Boolean ones. Composing the steps pairwise gives an equal filter of logarithmic depth (each
    operand is evaluated at most log2(steps) times).
    """

    def __init__(self, base: _Done) -> None:
        self.base = base
        self.steps: list[_Chain] = []
        self.step_depth = 0

    def push(self, op: str, other: Any) -> None:
        items = list(other) if isinstance(other, _Chain) and other.op == op else [_finish(other)]
        if self.steps and self.steps[-1].op == op:
            self.steps[-1].add(items)
        else:
            self.steps.append(_Chain(op, items))
        self.step_depth = max(self.step_depth, self.steps[-1].depth)

    @property
    def depth(self) -> int:
        return max(self.base.depth, self.step_depth) + 4 * math.ceil(math.log2(len(self.steps) + 1)) + 4

    def finish(self) -> _Done:
        maps: list[_Map] = [
            (_combine(step), None) if step.op == "and" else (None, _combine(step)) for step in self.steps
        ]
        a, b = _compose(maps, 0, len(maps))
        done = _either("or", _either("and", self.base, a), b)
        assert done is not None  # the base is never None
        return done


_Map = tuple["_Done | None", "_Done | None"]


def _compose(maps: list[_Map], lo: int, hi: int) -> _Map:
    """The maps ``lo..hi`` applied in order, as one; recursion depth log2(hi - lo)."""
    if hi - lo == 1:
        return maps[lo]
    mid = (lo + hi) // 2
    a1, b1 = _compose(maps, lo, mid)
    a2, b2 = _compose(maps, mid, hi)
    return _either("and", a1, a2), _either("or", _either("and", b1, a2) if b1 is not None else None, b2)


def _either(op: str, x: _Done | None, y: _Done | None) -> _Done | None:
    """``x op y`` with None as the identity (TRUE for AND, FALSE for OR), wrapped so that arrow
    does not flatten it into an enclosing chain."""
    if x is None or y is None:
        return y if x is None else x
    joined = x.expr & y.expr if op == "and" else x.expr | y.expr
    return _Done(pc.if_else(joined, True, False), max(x.depth, y.depth) + 2)


def _part(part: Any) -> Any:
    return _Done(part, _LEAF_DEPTH) if isinstance(part, pc.Expression) else part


def _depth(part: Any) -> int:
    return part.depth


def _join(op: str, left: Any, right: Any) -> Any:
    """``left op right``: a chain while shallow, else a spine grown along the deeper side."""
    left, right = _part(left), _part(right)
    if max(_depth(left), _depth(right)) <= _SHALLOW:
        return _chain(op, left, right)
    deep, other = (left, right) if _depth(left) >= _depth(right) else (right, left)
    if isinstance(deep, _Chain) and deep.op == op:
        deep.add(list(other) if isinstance(other, _Chain) and other.op == op else [_finish(other)])
        return deep
    spine = deep if isinstance(deep, _Spine) else _Spine(_finish(deep))
    spine.push(op, other)
    return spine


def _chain(op: str, left: Any, right: Any) -> _Chain:
    # Results are fresh objects of this visitor: extending in place keeps long chains linear.
    items = left if isinstance(left, _Chain) and left.op == op else _Chain(op, [_finish(left)])
    items.add(list(right) if isinstance(right, _Chain) and right.op == op else [_finish(right)])
    return items


def _finish(part: Any) -> _Done:
    part = _part(part)
    if isinstance(part, _Chain):
        return _combine(part)
    if isinstance(part, _Spine):
        return part.finish()
    return part


def _combine(part: _Chain) -> _Done:
    """A chain as groups of at most ``_GROUP`` operands, each group wrapped in an identity.

    Arrow flattens nested AND/OR into one chain and then recurses along it in C++, so 10,000
    operands overflow its stack (a crash, whatever the tree's shape). ``if_else(g, true, false)``
    is the identity on TRUE/FALSE/NULL that it does not flatten through.
    """
    items = [i.expr for i in part]
    while len(items) > 1:
        groups = [items[i : i + _GROUP] for i in range(0, len(items), _GROUP)]
        items = []
        for group in groups:
            joined = group[0]
            for item in group[1:]:
                joined = joined & item if part.op == "and" else joined | item
            items.append(pc.if_else(joined, True, False) if len(groups) > 1 else joined)
    return _Done(items[0], part.depth)


_GROUP = 64


def _field(term: Reference | BoundReference | Applied) -> pc.Expression:
    if isinstance(term, Applied):
        if term.term.type is None:  # type: ignore[union-attr]  # a Reference has no type: unbound
            raise TypeError(f"{term.name}: a function of a column needs a bound expression (pass schema)")
        return term.transform.row_expression(_field(term.term), term.term.type)  # type: ignore[union-attr]
    path = term.path if isinstance(term, BoundReference) else tuple(term.name.split("."))
    field = pc.field(*path) if len(path) > 1 else pc.field(path[0])
    if isinstance(term, BoundReference) and pa.types.is_float16(term.type):
        return field.cast(pa.float32())  # no float16 compute kernels; the widening is exact
    return field


def _is_float(term: Any) -> bool:
    t = getattr(term, "type", None)
    return isinstance(term, (BoundReference, Applied)) and t is not None and is_float_type(t)


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

    def visit_and(self, node: And, left: Any, right: Any) -> Any:
        return _join("and", left, right)  # Kleene AND

    def visit_or(self, node: Or, left: Any, right: Any) -> Any:
        return _join("or", left, right)  # Kleene OR

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
        return pc.starts_with(_text(term), pattern=_prefix(prefix))

    def visit_not_starts_with(self, term: Any, prefix: Any) -> pc.Expression:
        return ~pc.starts_with(_text(term), pattern=_prefix(prefix))

    def visit_contains(self, term: Any, substring: Any) -> pc.Expression:
        return pc.match_substring(_text(term), pattern=_prefix(substring))

    def visit_not_contains(self, term: Any, substring: Any) -> pc.Expression:
        return ~pc.match_substring(_text(term), pattern=_prefix(substring))

    def visit_contains_term(self, term: Any, word: Any) -> pc.Expression:
        return _has_term(term, word)

    def visit_not_contains_term(self, term: Any, word: Any) -> pc.Expression:
        return ~_has_term(term, word)

    def _or_nan(self, term: Any, test: pc.Expression) -> pc.Expression:
        # NaN sorts above every number, so it is > and >= any non-NaN literal.
        return test | pc.is_nan(_field(term)) if _is_float(term) else test


def _values(values: Any) -> Any:
    if isinstance(values, pa.Array):
        return values.cast(pa.float32()) if pa.types.is_float16(values.type) else values
    return list(values)


def _text(term: Any) -> pc.Expression:
    # The string kernels take no dictionary, view or fixed-size binary: a bound term knows the
    # value type to decode to, and the other types hold the same bytes.
    if not isinstance(term, (BoundReference, Applied)) or term.type is None:
        return _field(term)
    t = term.type
    if pa.types.is_fixed_size_binary(t):
        t = pa.binary()
    elif pa.types.is_string_view(t):
        t = pa.large_string()
    elif pa.types.is_binary_view(t):
        t = pa.large_binary()
    return _field(term).cast(t)


def _has_term(term: Any, word: Any) -> pc.Expression:
    """The lower-cased text has the term ``word`` (NULL for NULL), as ``hudi_expr.terms`` defines."""
    pattern = term_regex(normalize_term(word.as_py() if isinstance(word, pa.Scalar) else word))
    return pc.match_substring_regex(pc.utf8_lower(_text(term)), pattern=pattern)


def _prefix(prefix: Any) -> str | bytes:
    # Arrow matches a bytes pattern bytewise, so binary prefixes need not be valid UTF-8.
    return prefix.as_py() if isinstance(prefix, pa.Scalar) else prefix
