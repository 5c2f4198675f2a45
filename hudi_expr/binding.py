"""Binding: resolve column paths against an arrow schema and coerce every literal to its column type.

``bind`` first pushes NOT down to the leaves (``rewrite_not``), then folds what the types decide, so
each rewrite below keeps exactly the rows where the original is TRUE: ``int8_col < 1000`` becomes
``int8_col IS NOT NULL`` (TRUE for every non-null row, never for NULL), ``int_col = 1.5`` becomes
FALSE, ``float_col = NaN`` becomes ``isnan(float_col)``. Because negation happened before folding,
a bound tree must not be negated again to mean the negation of the original: negate the unbound one.

Before the leaves are bound, equalities on one column are gathered into one IN list
(``merge_equalities``): a 10,000-term ``a = v1 OR a = v2 ...`` is then evaluated as one vectorized
IN test instead of 10,000 comparisons, and ``a <> v1 AND a <> v2 ...`` as one NOT IN.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.errors import AmbiguousColumnError, BindError
from hudi_expr.expressions import (
    AlwaysFalse,
    And,
    Applied,
    BoundReference,
    Contains,
    ContainsTerm,
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
    LiteralPredicate,
    Not,
    NotContains,
    NotContainsTerm,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    Predicate,
    Reference,
    SetPredicate,
    StartsWith,
    UnaryPredicate,
)
from hudi_expr.terms import normalize_term
from hudi_expr.types import (
    Coerced,
    coerce_literal,
    is_binary_like,
    is_comparable_type,
    is_float_type,
    is_string_like,
)
from hudi_expr.visitors import rewrite_not, transform_leaves

__all__ = ["bind", "merge_equalities", "resolve"]

_ALWAYS_FALSE = AlwaysFalse()

# A column, or a monotonic function of one: both have a name, a type and a nullability.
BoundTerm = BoundReference | Applied


def bind(expr: Expression, schema: pa.Schema, case_sensitive: bool = True) -> Expression:
    """A NOT-free copy of ``expr`` whose leaves reference typed columns with coerced literals."""
    cache: dict[str, BoundReference] = {}

    def bind_term(term: Reference | BoundReference | Applied) -> BoundReference | Applied:
        if term.is_bound:
            return term  # type: ignore[return-value]  # a bound term is one of those two
        if isinstance(term, Applied):
            # The function's result type decides how literals coerce (BindError if not monotonic).
            return Applied(term.transform, bind_term(term.term))
        ref = cache.get(term.name)
        if ref is None:
            ref = cache[term.name] = resolve(schema, term.name, case_sensitive)
        return ref

    def bind_leaf(leaf: Predicate) -> Expression:
        if leaf.is_bound:
            return leaf
        return _bind_predicate(leaf, bind_term(leaf.term))

    if isinstance(expr, Predicate):
        return bind_leaf(expr)  # one leaf: no NOT to push down, no equalities to merge
    return transform_leaves(merge_equalities(rewrite_not(expr)), bind_leaf)


# Why merging is exact under three-valued logic. On a row where a is NULL, a = v1 OR ... OR a = vn
# is NULL and so is a IN (v1, ..., vn); elsewhere both are TRUE exactly when a equals some vi, and
# FALSE otherwise (NaN equals NaN in both: _bind_set gives IN the isnan form and both zeros that =
# gets from _fold_comparison and the comparison kernels). OR is commutative and associative, so the
# other operands may stand anywhere. Dually, a <> v1 AND ... AND a <> vn is a NOT IN (v1, ..., vn):
# NULL on NULL rows, else TRUE exactly when a equals no vi. No literal is NULL (the constructors
# refuse them and the adapters fold ``a = NULL`` before building a leaf), so a list never holds one.
# Each value is then coerced on its own by _bind_set, as each comparison would have been (a value
# the type cannot hold leaves the list, as its = would be FALSE and its <> IS NOT NULL).
_GATHERED: dict[type[Expression], tuple[type[Predicate], type[SetPredicate]]] = {
    Or: (EqualTo, In),
    And: (NotEqualTo, NotIn),
}


def merge_equalities(expr: Expression) -> Expression:
    """``a = 1 OR b = 3 OR a = 2`` as ``a IN (1, 2) OR b = 3``; ``a <> 1 AND a <> 2`` as ``a NOT IN (1, 2)``.

    Every maximal OR is flattened once, and its ``=`` and IN leaves on one unbound column become one
    IN where the first of them stood, values in order of appearance (AND with ``<>`` and NOT IN
    likewise). Linear in the size of the tree, without recursion. Bound leaves, and IN lists held as
    arrow arrays, are left as they are.
    """
    results: list[Expression] = []
    # (node, its children once expanded): children are the flattened operands of an And/Or.
    stack: list[tuple[Expression, list[Expression] | None]] = [(expr, None)]
    while stack:
        node, children = stack.pop()
        if children is None:
            if isinstance(node, (And, Or)):
                children = node.operands()
            elif isinstance(node, Not):
                children = [node.child]
            else:
                results.append(node)
                continue
            stack.append((node, children))
            stack.extend((child, None) for child in reversed(children))
            continue
        start = len(results) - len(children)
        parts = results[start:]
        del results[start:]
        if isinstance(node, Not):
            results.append(node if parts[0] is node.child else Not(parts[0]))
        else:
            results.append(_gather(node, children, parts))
    return results[0]


def _gather(node: Expression, children: list[Expression], parts: list[Expression]) -> Expression:
    """``node`` (an And/Or of ``children``) over ``parts``, the equalities on one column gathered."""
    single, many = _GATHERED[type(node)]
    owner: list[Reference | None] = []  # per part: the column it is gathered under, if any
    values: dict[Reference, list[Any]] = {}  # per column, in first-use order: its leaves' values
    leaves: dict[Reference, int] = {}  # per column: how many leaves are gathered
    for part in parts:
        found: Any = None
        if isinstance(part, LiteralPredicate) and type(part) is single:
            found = (part.literal,)
        elif isinstance(part, SetPredicate) and type(part) is many and isinstance(part.values, tuple):
            found = part.values
        term = part.term if found is not None and isinstance(part, Predicate) else None
        if not isinstance(term, Reference):
            owner.append(None)
            continue
        owner.append(term)
        leaves[term] = leaves.get(term, 0) + 1
        values.setdefault(term, []).extend(found)
    if all(n == 1 for n in leaves.values()):
        unchanged = all(p is c for p, c in zip(parts, children, strict=True))
        return node if unchanged else type(node)(*parts)
    out: list[Expression] = []
    for part, column in zip(parts, owner, strict=True):
        if column is None or leaves[column] == 1:
            out.append(part)
        elif column in values:  # the column's first leaf: the whole list stands here
            out.append(many(column, values.pop(column)))
    return type(node)(*out)


def resolve(schema: pa.Schema, name: str, case_sensitive: bool = True) -> BoundReference:
    """The column ``name`` (a top-level name, or a dotted path into structs) of ``schema``."""
    at = schema.get_field_index(name) if case_sensitive else -1  # -1: absent, or a repeated name
    if at >= 0:
        exact = schema.field(at)
        return _bound(exact, (exact.name,), [exact])
    fields: list[pa.Field] = list(schema)
    exact = _find(fields, name, case_sensitive)
    if exact is not None:
        return _bound(exact, (exact.name,), [exact])
    path: list[str] = []
    chain: list[pa.Field] = []
    parts = name.split(".")
    for i, part in enumerate(parts):
        field = _find(fields, part, case_sensitive)
        if field is None:
            known = ", ".join(f.name for f in fields)
            where = f" in struct {'.'.join(path)!r}" if path else ""
            raise BindError(f"unknown column {name!r}: no field {part!r}{where}; columns are: {known}")
        path.append(field.name)
        chain.append(field)
        if i < len(parts) - 1:
            if not pa.types.is_struct(field.type):
                raise BindError(
                    f"column {'.'.join(path)!r} of type {field.type} has no field {parts[i + 1]!r}"
                )
            fields = [field.type.field(j) for j in range(field.type.num_fields)]
    return _bound(chain[-1], tuple(path), chain)


def _find(fields: list[pa.Field], name: str, case_sensitive: bool) -> pa.Field | None:
    if case_sensitive:
        return next((f for f in fields if f.name == name), None)
    matches = [f for f in fields if f.name.lower() == name.lower()]
    if len(matches) > 1:
        names = [f.name for f in matches]
        raise AmbiguousColumnError(f"column name {name!r} is ambiguous without case: {names}")
    return matches[0] if matches else None


def _bound(field: pa.Field, path: tuple[str, ...], chain: list[pa.Field]) -> BoundReference:
    t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
    # A NULL struct makes its fields NULL too: the path is required only if every step is.
    return BoundReference(".".join(path), path, t, nullable=any(f.nullable for f in chain))


def _bind_predicate(leaf: Predicate, ref: BoundTerm) -> Expression:
    t = ref.type
    if isinstance(leaf, UnaryPredicate):
        return _bind_unary(leaf, ref)
    if isinstance(leaf, (Contains, NotContains, ContainsTerm, NotContainsTerm)):
        return _bind_text_search(leaf, ref)
    if not is_comparable_type(t):
        raise BindError(f"cannot use {leaf.op} on column {ref.name!r} of type {t}: values are not comparable")
    if isinstance(leaf, (StartsWith, NotStartsWith)):
        return _bind_prefix(leaf, ref)
    if isinstance(leaf, SetPredicate):
        return _bind_set(leaf, ref)
    assert isinstance(leaf, LiteralPredicate)
    return _fold_comparison(type(leaf), ref, coerce_literal(leaf.literal, t, ref.name))


def _bind_unary(leaf: UnaryPredicate, ref: BoundTerm) -> Expression:
    if isinstance(leaf, (IsNaN, IsNotNaN)) and not is_float_type(ref.type):
        # Only floats hold NaN: isnan(x) is never TRUE elsewhere, NOT isnan(x) is x IS NOT NULL.
        return _ALWAYS_FALSE if isinstance(leaf, IsNaN) else IsNotNull(ref)
    if isinstance(leaf, IsNull) and not ref.nullable:
        return _ALWAYS_FALSE
    return type(leaf)(ref)


def _fold_comparison(kind: type[LiteralPredicate], ref: BoundTerm, c: Coerced) -> Expression:
    """One comparison with a coerced literal, rewritten to keep exactly its TRUE rows."""
    if c.kind == "exact":
        return kind(ref, c.value)
    if c.kind == "between":
        # floor < v < ceil with nothing of the type in between: = never holds, < v is <= floor.
        return {
            EqualTo: lambda: _ALWAYS_FALSE,
            NotEqualTo: lambda: IsNotNull(ref),
            LessThan: lambda: LessThanOrEqual(ref, c.floor),
            LessThanOrEqual: lambda: LessThanOrEqual(ref, c.floor),
            GreaterThan: lambda: GreaterThanOrEqual(ref, c.ceil),
            GreaterThanOrEqual: lambda: GreaterThanOrEqual(ref, c.ceil),
        }[kind]()
    if c.kind == "nan":
        # NaN equals NaN and sorts above every other value, +inf included (Spark, DuckDB).
        return {
            EqualTo: lambda: IsNaN(ref),
            NotEqualTo: lambda: IsNotNaN(ref),
            LessThan: lambda: IsNotNaN(ref),
            LessThanOrEqual: lambda: IsNotNull(ref),
            GreaterThan: lambda: _ALWAYS_FALSE,
            GreaterThanOrEqual: lambda: IsNaN(ref),
        }[kind]()
    below = c.kind == "below"
    # Beyond every value of the type: the comparison is decided for every non-null row.
    holds_for_all = {
        EqualTo: False,
        NotEqualTo: True,
        LessThan: not below,
        LessThanOrEqual: not below,
        GreaterThan: below,
        GreaterThanOrEqual: below,
    }[kind]
    return IsNotNull(ref) if holds_for_all else _ALWAYS_FALSE


def _bind_prefix(leaf: Predicate, ref: BoundTerm) -> Expression:
    assert isinstance(leaf, LiteralPredicate)
    t = ref.type
    prefix: Any = leaf.literal
    if isinstance(prefix, pa.Scalar) and (is_string_like(prefix.type) or is_binary_like(prefix.type)):
        prefix = prefix.as_py()  # any other scalar is refused below (as_py of some would raise)
    if is_string_like(t):
        if isinstance(prefix, bytes):
            try:
                prefix = prefix.decode("utf-8")
            except UnicodeDecodeError:
                raise BindError(f"prefix {prefix!r} for string column {ref.name!r} is not UTF-8") from None
        if not isinstance(prefix, str):
            raise BindError(
                f"prefix for string column {ref.name!r} of type {t} must be a string, got {prefix!r}"
            )
        scalar_type: pa.DataType = pa.string()
    elif is_binary_like(t):
        if isinstance(prefix, str):
            prefix = prefix.encode("utf-8")
        if not isinstance(prefix, bytes):
            raise BindError(
                f"prefix for binary column {ref.name!r} of type {t} must be bytes, got {prefix!r}"
            )
        scalar_type = pa.binary()
    else:
        raise BindError(f"starts_with needs a string or binary column; {ref.name!r} has type {t}")
    if not prefix:
        # Every non-null value starts with the empty prefix.
        return IsNotNull(ref) if isinstance(leaf, StartsWith) else _ALWAYS_FALSE
    return type(leaf)(ref, pa.scalar(prefix, scalar_type))


def _bind_text_search(leaf: LiteralPredicate, ref: BoundTerm) -> Expression:
    """contains and contains_term: a string column, and text (a word: one term, lower-cased)."""
    t = ref.type
    if not is_string_like(t):
        raise BindError(f"{leaf.op} needs a string column; {ref.name!r} has type {t}")
    text: Any = leaf.literal
    if isinstance(text, pa.Scalar) and (is_string_like(text.type) or is_binary_like(text.type)):
        text = text.as_py()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise BindError(f"{leaf.op} text {text!r} for column {ref.name!r} is not UTF-8") from None
    if not isinstance(text, str):
        raise BindError(f"{leaf.op} on column {ref.name!r} needs text, got {text!r}")
    if isinstance(leaf, (ContainsTerm, NotContainsTerm)):
        try:
            text = normalize_term(text)
        except ValueError as exc:
            raise BindError(f"{exc} (column {ref.name!r})") from None
    elif not text:
        # Every non-null string contains the empty string.
        return IsNotNull(ref) if isinstance(leaf, Contains) else _ALWAYS_FALSE
    return type(leaf)(ref, pa.scalar(text, pa.string()))


def _bind_set(leaf: SetPredicate, ref: BoundTerm) -> Expression:
    t = ref.type
    values = leaf.values
    has_nan = False
    exact = _coerce_many(values, t, ref.name)
    if exact is None:
        coerced = [coerce_literal(v, t, ref.name) for v in values]
        # A value the type cannot hold equals no row: it leaves IN and NOT IN (for non-null rows).
        items = [_py(c.value) for c in coerced if c.kind == "exact"]
        has_nan = any(c.kind == "nan" for c in coerced)
        exact = pa.array(items, type=t)
    if is_float_type(t):
        if pa.types.is_float16(t):
            exact = exact.cast(pa.float32())  # arrow's set kernels lack float16; exact widening
        has_nan = has_nan or bool(pc.any(pc.is_nan(exact)).as_py())
        exact = _with_both_zeros(pc.filter(exact, pc.invert(pc.is_nan(exact))))
    if isinstance(leaf, In):
        # x IN (.., NaN) is TRUE for the listed values and for NaN rows.
        matched = In(ref, exact) if len(exact) else _ALWAYS_FALSE
        return Or(matched, IsNaN(ref)) if has_nan else matched
    # x NOT IN (...) is TRUE only for non-null rows outside the list (never for NULL rows).
    outside = NotIn(ref, exact) if len(exact) else IsNotNull(ref)
    return And(outside, IsNotNaN(ref)) if has_nan else outside


def _py(s: pa.Scalar) -> Any:
    return s.value if pa.types.is_timestamp(s.type) else s.as_py()


def _coerce_many(values: Any, t: pa.DataType, column: str) -> pa.Array | None:
    """Fast path for a large IN list whose values already have the column's natural Python type."""
    if isinstance(values, pa.Array):
        if values.type == t:
            return values
        values = values.to_pylist()
    if not values:
        return pa.array([], type=t)
    kinds = {type(v) for v in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    natural = (
        (kind is int and pa.types.is_integer(t))
        or (kind is str and is_string_like(t))
        or (kind is bytes and is_binary_like(t))
    )
    if not natural:
        return None
    try:
        return pa.array(values, type=t)
    except (OverflowError, pa.ArrowInvalid):
        return None  # some value is out of range: take the exact path, value by value


def _with_both_zeros(values: pa.Array) -> pa.Array:
    """-0.0 = 0.0 in SQL, but arrow's hash lookups tell them apart: list both when either is there."""
    if len(values) and pc.any(pc.equal(values, 0)).as_py():
        zeros = pa.array([0.0, -0.0], type=values.type)
        return pc.unique(pa.concat_arrays([values, zeros]))
    return values
