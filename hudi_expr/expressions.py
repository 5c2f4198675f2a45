"""Immutable boolean expression nodes, their builders and the simplifications made at construction.

Every node is hashable, compares by value and has an exact ``~`` under SQL three-valued logic, so
``~(a > 5)`` is ``a <= 5`` (never the NULL rows). Constructors simplify (constants fold, an IN of one
value becomes ``=``, an empty IN is FALSE, duplicates go), so every tree a visitor sees is simple.
``And``/``Or`` are associative: equality looks at the flattened operand sequence, and trees of any
depth are handled without recursion.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from hudi_expr.transforms import Transform

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Applied",
    "BoundReference",
    "Column",
    "Contains",
    "ContainsTerm",
    "EqualTo",
    "Expression",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNaN",
    "IsNotNaN",
    "IsNotNull",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "LiteralPredicate",
    "Not",
    "NotContains",
    "NotContainsTerm",
    "NotEqualTo",
    "NotIn",
    "NotStartsWith",
    "Or",
    "Predicate",
    "Reference",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "col",
    "contains_term",
]

# Python values accepted as unbound literals; a bound literal is a non-null ``pa.Scalar``.
_LITERAL_TYPES = (bool, int, float, decimal.Decimal, str, bytes, _dt.date, _dt.datetime, _dt.time)

# Polynomial hash of an operand sequence, so (a & b) & c and a & (b & c) hash alike in O(1).
_HASH_BASE = 1_000_003
_HASH_MOD = (1 << 61) - 1


class _Immutable:
    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)


# ----------------------------------------------------------------------------------------- terms


class Reference(_Immutable):
    """An unbound column reference; ``name`` is a dotted path for struct fields (``"s.x"``)."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a column name must be a non-empty string, got {name!r}")
        self._set(name=name)

    def __eq__(self, other: object) -> bool:
        return type(other) is Reference and other.name == self.name

    def __hash__(self) -> int:
        return hash(("ref", self.name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Reference, (self.name,))

    @property
    def column(self) -> Reference:
        """The column itself (an ``Applied`` term's ``column`` is the column under its function)."""
        return self

    @property
    def is_bound(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"Reference({self.name!r})"


class BoundReference(_Immutable):
    """A column resolved against a schema: its path, arrow type and nullability."""

    __slots__ = ("name", "nullable", "path", "type")
    name: str
    path: tuple[str, ...]
    type: pa.DataType
    nullable: bool

    def __init__(self, name: str, path: Sequence[str], type: pa.DataType, nullable: bool = True) -> None:
        self._set(name=name, path=tuple(path), type=type, nullable=nullable)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is BoundReference
            and other.path == self.path
            and other.type == self.type
            and other.nullable == self.nullable
        )

    def __hash__(self) -> int:
        return hash(("bound", self.path, str(self.type)))

    def __reduce__(self) -> tuple[Any, ...]:
        return (BoundReference, (self.name, self.path, self.type, self.nullable))

    @property
    def column(self) -> BoundReference:
        return self

    @property
    def is_bound(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"BoundReference({self.name!r}, {self.type})"


class Applied(_Immutable):
    """A monotonic function of one column, ``year(d)`` or ``q * 2``: a term whose statistics are the
    column's mapped through the function (``hudi_expr.transforms``).

    ``name`` is its SQL-like text, never a column's name, so code that looks terms up by column
    name finds nothing for it and keeps every file. Once its column is bound it has the ``type``
    of the function's result (``BindError`` when the function is not monotonic on that type).
    """

    __slots__ = ("name", "nullable", "term", "transform", "type")
    transform: Transform
    term: Term
    name: str
    type: pa.DataType | None
    nullable: bool

    def __init__(self, transform: Transform, term: Any) -> None:
        from hudi_expr.transforms import Transform

        if not isinstance(transform, Transform):
            raise TypeError(f"expected a hudi_expr.transforms.Transform, got {transform!r}")
        t = _as_term(term)
        source = t.type if isinstance(t, (BoundReference, Applied)) else None
        result = transform.result_type(source) if source is not None else None
        self._set(
            transform=transform,
            term=t,
            name=transform.sql(t.name),
            type=result,
            nullable=t.nullable if isinstance(t, (BoundReference, Applied)) else True,
        )

    @property
    def column(self) -> Reference | BoundReference:
        """The column under the function(s)."""
        return self.term.column

    @property
    def is_bound(self) -> bool:
        return self.term.is_bound

    def __eq__(self, other: object) -> bool:
        return type(other) is Applied and other.transform == self.transform and other.term == self.term

    def __hash__(self) -> int:
        return hash(("applied", self.transform, self.term))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Applied, (self.transform, self.term))

    def __repr__(self) -> str:
        return f"Applied({self.transform!r}, {self.term!r})"


Term = Reference | BoundReference | Applied


def _as_term(term: Any) -> Term:
    if isinstance(term, (Reference, BoundReference, Applied)):
        return term
    if isinstance(term, Column):
        return term.ref
    if isinstance(term, str):
        return Reference(term)
    raise TypeError(f"expected a column name or reference, got {term!r}")


def _check_literal(value: Any, what: str) -> Any:
    """Validate an unbound literal (or pass a bound ``pa.Scalar`` through); NULL is rejected."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, pa.Scalar) and not value.is_valid):
        raise ValueError(
            f"NULL literal in {what}: a comparison with NULL is never TRUE; use is_null()/is_not_null()"
        )
    if isinstance(value, (pa.Scalar, *_LITERAL_TYPES)):
        return value
    raise TypeError(f"unsupported literal {value!r} of type {type(value).__name__} in {what}")


def _literal_key(value: Any) -> Any:
    """Identity of a literal for de-duplication: 1, 1.0 and True stay distinct; NaNs are one."""
    if isinstance(value, float) and math.isnan(value):
        return (float, "nan")
    if isinstance(value, pa.Scalar):
        # A NaN scalar is unequal to itself: key it like the NaN float, or e != e.
        if pa.types.is_floating(value.type) and value.is_valid and math.isnan(value.as_py()):
            return (str(value.type), "nan")
        return (str(value.type), value)
    return (type(value), value)


# ------------------------------------------------------------------------------------ expressions


class Expression(_Immutable):
    """Base of every boolean expression node."""

    __slots__ = ("_hash",)
    _hash: int

    def __and__(self, other: Expression) -> Expression:
        return And(self, _as_expression(other))

    def __rand__(self, other: Expression) -> Expression:
        return And(_as_expression(other), self)

    def __or__(self, other: Expression) -> Expression:
        return Or(self, _as_expression(other))

    def __ror__(self, other: Expression) -> Expression:
        return Or(_as_expression(other), self)

    def __invert__(self) -> Expression:
        return _invert(self)

    def __bool__(self) -> bool:
        raise TypeError(
            "an expression has no truth value: combine predicates with & | ~ rather than and/or/not, "
            "and write a < x < b as (x > a) & (x < b)"
        )

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expression) and _equal(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __str__(self) -> str:
        from hudi_expr.printer import to_sql

        return to_sql(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self}]"

    @property
    def children(self) -> tuple[Expression, ...]:
        """Direct sub-expressions (empty for leaves and constants)."""
        return ()

    @property
    def is_bound(self) -> bool:
        """True when every leaf refers to a column resolved against a schema."""
        return all(not isinstance(leaf, Predicate) or leaf.is_bound for leaf in self.walk())

    def walk(self) -> Iterator[Expression]:
        """Every node, pre-order, without recursion."""
        stack: list[Expression] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def leaves(self) -> Iterator[Predicate]:
        """The predicate leaves, left to right."""
        return (node for node in self.walk() if isinstance(node, Predicate))

    def references(self) -> list[str]:
        """Names of the columns the expression uses, in first-use order."""
        return list(dict.fromkeys(leaf.term.column.name for leaf in self.leaves()))

    def bind(self, schema: pa.Schema, case_sensitive: bool = True) -> Expression:
        """Resolve columns and coerce literals; the result is NOT-free (negation normal form)."""
        from hudi_expr.binding import bind

        return bind(self, schema, case_sensitive=case_sensitive)

    def to_json(self) -> str:
        """The portable JSON form; ``from_json`` reads it back to an equal expression."""
        from hudi_expr.serde import to_json

        return to_json(self)

    def to_pyarrow(self, schema: pa.Schema | None = None) -> Any:
        """A ``pyarrow.compute.Expression`` keeping exactly the rows where this is TRUE.

        Give ``schema`` unless the expression is bound: NaN ordering needs the column types.
        """
        from hudi_expr.rows import to_pyarrow

        return to_pyarrow(self, schema)


def _as_expression(value: Any) -> Expression:
    if isinstance(value, Expression):
        return value
    if value is True:
        return AlwaysTrue()
    if value is False:
        return AlwaysFalse()
    raise TypeError(f"cannot combine an expression with {value!r}")


class _Constant(Expression):
    __slots__ = ()
    _instance: ClassVar[Any] = None

    def __new__(cls) -> Any:
        if cls._instance is None:
            inst = object.__new__(cls)
            inst._set(_hash=hash(cls.__name__))
            cls._instance = inst
        return cls._instance

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), ())


class AlwaysTrue(_Constant):
    """TRUE for every row, NULL rows included."""

    __slots__ = ()
    _instance: ClassVar[Any] = None


class AlwaysFalse(_Constant):
    """TRUE for no row."""

    __slots__ = ()
    _instance: ClassVar[Any] = None


class Not(Expression):
    """SQL NOT; ``rewrite_not`` (and ``bind``) push it down to the leaves."""

    __slots__ = ("child",)
    child: Expression

    def __new__(cls, child: Expression) -> Expression:  # type: ignore[misc]  # simplifies to any node
        child = _as_expression(child)
        if isinstance(child, Not):
            return child.child
        if isinstance(child, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(child, AlwaysFalse):
            return AlwaysTrue()
        node = object.__new__(cls)
        node._set(child=child, _hash=hash(("not", child._hash)))
        return node

    def __reduce__(self) -> tuple[Any, ...]:
        return (Not, (self.child,))

    @property
    def children(self) -> tuple[Expression, ...]:
        return (self.child,)


class _Junction(Expression):
    """And/Or: binary nodes, balanced when built from many operands, compared as operand sequences."""

    __slots__ = ("_width", "left", "right")
    left: Expression
    right: Expression
    _width: int
    _absorbing: ClassVar[type[_Constant]]
    _neutral: ClassVar[type[_Constant]]

    def __new__(cls, *operands: Expression) -> Expression:  # type: ignore[misc]  # simplifies to any node
        kept: list[Expression] = []
        seen: set[Expression] = set()
        for op in operands:
            op = _as_expression(op)
            if isinstance(op, cls._absorbing):
                return op
            if isinstance(op, cls._neutral) or op in seen:
                continue
            seen.add(op)
            kept.append(op)
        if not kept:
            return cls._neutral()
        # Pair neighbours level by level: a balanced tree with no recursion, whatever the count.
        while len(kept) > 1:
            paired = [cls._make(kept[i], kept[i + 1]) for i in range(0, len(kept) - 1, 2)]
            if len(kept) % 2:
                paired.append(kept[-1])
            kept = paired
        return kept[0]

    @classmethod
    def _make(cls, left: Expression, right: Expression) -> Expression:
        node = object.__new__(cls)
        lh, lw = (left._hash, left._width) if type(left) is cls else (hash(left), 1)
        rh, rw = (right._hash, right._width) if type(right) is cls else (hash(right), 1)
        h = (lh * pow(_HASH_BASE, rw, _HASH_MOD) + rh) % _HASH_MOD
        node._set(left=left, right=right, _width=lw + rw, _hash=h)
        return node

    def __reduce__(self) -> tuple[Any, ...]:
        # Flat operands: a 10,000-deep chain pickles without deep recursion and comes back balanced.
        return (type(self), tuple(self.operands()))

    @property
    def children(self) -> tuple[Expression, ...]:
        return (self.left, self.right)

    def operands(self) -> list[Expression]:
        """The flattened operands: ``(a & b) & c`` and ``a & (b & c)`` both give ``[a, b, c]``."""
        out: list[Expression] = []
        stack: list[Expression] = [self]
        while stack:
            node = stack.pop()
            if type(node) is type(self):
                stack.append(node.right)
                stack.append(node.left)
            else:
                out.append(node)
        return out


class And(_Junction):
    """Conjunction; ``And(a, b, c, ...)`` builds a balanced tree."""

    __slots__ = ()
    _absorbing = AlwaysFalse
    _neutral = AlwaysTrue


class Or(_Junction):
    """Disjunction; ``Or(a, b, c, ...)`` builds a balanced tree."""

    __slots__ = ()
    _absorbing = AlwaysTrue
    _neutral = AlwaysFalse


# ------------------------------------------------------------------------------------- predicates

# The declared leaves by op (JSON tag), in declaration order, and by class name (to pair negations).
# Filled by ``Predicate.__init_subclass__``; closed at the end of this module.
_LEAF_CLASSES: dict[str, type[Predicate]] = {}
_LEAVES_BY_NAME: dict[str, type[Predicate]] = {}
_declarations_closed = False


class _Negation:
    """``negation`` of a leaf class or of a leaf: the declared leaf class of its exact negation
    (``LessThan.negation`` and ``(col("a") < 1).negation`` are ``GreaterThanOrEqual``)."""

    def __get__(self, leaf: object, owner: type[Predicate]) -> type[Predicate]:
        negation: type[Predicate] | None = owner.__dict__.get("_negation")
        if negation is None:
            raise AttributeError(f"{owner.__name__} is not a declared leaf: it has no negation")
        return negation


class Predicate(Expression):
    """A leaf: a test of one column.

    Each concrete leaf class declares its identity once, in its class statement, and everything
    that needs to know the leaves (visitors, JSON, the printer, ``~``) reads that declaration, so
    no two lists of leaves can disagree::

        class LessThan(
            LiteralPredicate,
            op="lt",                        # the JSON tag ({"op": "lt", ...}) and name in messages
            visitor="visit_less_than",      # the PredicateVisitor rule every visitor must define
            negation="GreaterThanOrEqual",  # the exact negation (the two must name each other)
            sql="{column} < {value}",       # what str() prints, over the kind's placeholders
        ): ...

    A leaf derives from one kind (``UnaryPredicate``, ``LiteralPredicate``, ``SetPredicate``), which
    fixes its constructor arguments and the placeholders its SQL template may use. Leaves are final,
    and declared in this module only: once it is loaded the set is closed, so every visitor defined
    afterwards is checked against all of them (see ``PredicateVisitor``).
    """

    __slots__ = ("term",)
    term: Term
    op: ClassVar[str]
    visitor_method: ClassVar[str]
    sql_template: ClassVar[str]
    # The placeholders of ``sql_template``, in order (the printer renders only these).
    sql_fields: ClassVar[tuple[str, ...]]
    # Per kind: the placeholders a leaf's SQL template may use.
    placeholders: ClassVar[frozenset[str]] = frozenset()
    _negation_name: ClassVar[str]
    _negation: ClassVar[type[Predicate]]
    # Readable on the class too (``LessThan.negation``), so tables of leaf classes need not repeat it.
    negation = _Negation()

    def __init_subclass__(
        cls,
        *,
        op: str | None = None,
        visitor: str | None = None,
        negation: str | None = None,
        sql: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if any(base in _LEAF_CLASSES.values() for base in cls.__mro__[1:]):
            raise TypeError(f"{cls.__name__}: a leaf class is final; declare a new leaf from a kind instead")
        declared = {"op": op, "visitor": visitor, "negation": negation, "sql": sql}
        if all(value is None for value in declared.values()):
            return  # a kind or another abstract base, not a leaf
        missing = [name for name, value in declared.items() if not isinstance(value, str) or not value]
        if missing:
            declares = "op, visitor, negation and sql"
            raise TypeError(f"leaf {cls.__name__} must declare {declares}: missing {missing}")
        assert op is not None and visitor is not None and negation is not None and sql is not None
        _declare_leaf(cls, op, visitor, negation, sql)

    @property
    def is_bound(self) -> bool:
        return self.term.is_bound

    @property
    def args(self) -> tuple[Any, ...]:
        """The constructor arguments: ``(term,)``, ``(term, literal)`` or ``(term, values)``.

        ``type(leaf)(*leaf.args) == leaf``; visitor rules are called with these, after ``self``.
        """
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self.args)


def _declare_leaf(cls: type[Predicate], op: str, visitor: str, negation: str, sql: str) -> None:
    """Check one leaf declaration and record it; the negation is paired once both are declared."""
    name = cls.__name__
    if _declarations_closed:
        raise TypeError(
            f"leaf {name} is declared after hudi_expr.expressions was loaded: declare leaves there, "
            "so that every visitor is checked for their rules"
        )
    kind = _kind(cls)
    if kind is None:
        raise TypeError(f"leaf {name} must derive from UnaryPredicate, LiteralPredicate or SetPredicate")
    for other in _LEAF_CLASSES.values():
        for what, mine, theirs in (
            ("op", op, other.op),
            ("visitor", visitor, other.visitor_method),
            ("name", name, other.__name__),
        ):
            if mine == theirs:
                raise TypeError(f"leaf {name}: {what} {mine!r} is already declared by {other.__name__}")
    if not visitor.startswith("visit_") or not visitor.isidentifier():
        raise TypeError(f"leaf {name}: visitor {visitor!r} must be an identifier starting with visit_")
    if negation == name:
        raise TypeError(f"leaf {name} cannot be its own negation")
    fields: list[str] = []
    for _, field, spec, conversion in string.Formatter().parse(sql):
        if field is None:
            continue
        if field not in kind.placeholders or spec or conversion:
            allowed = ", ".join("{" + p + "}" for p in sorted(kind.placeholders))
            raise TypeError(f"leaf {name}: sql {sql!r} may use only {allowed} (no format specs)")
        fields.append(field)
    cls.op = op
    cls.visitor_method = visitor
    cls.sql_template = sql
    cls.sql_fields = tuple(fields)
    cls._negation_name = negation
    pair = _LEAVES_BY_NAME.get(negation)
    if pair is not None:
        if pair._negation_name != name or _kind(pair) is not kind:
            raise TypeError(
                f"leaf {name} names {negation} as its negation, but {negation} names "
                f"{pair._negation_name} or is of another kind: a negation pair names each other, one kind"
            )
        cls._negation, pair._negation = pair, cls
    _LEAF_CLASSES[op] = cls
    _LEAVES_BY_NAME[name] = cls


def _kind(cls: type[Predicate]) -> type[Predicate] | None:
    """The kind a leaf derives from: the nearest base that sets the SQL placeholders."""
    for base in cls.__mro__:
        if issubclass(base, Predicate) and base.__dict__.get("placeholders"):
            return base
    return None


def _close_declarations() -> None:
    """End of this module: every negation must be paired; no leaf may be declared from now on."""
    global _declarations_closed
    unpaired = [cls.__name__ for cls in _LEAF_CLASSES.values() if "_negation" not in cls.__dict__]
    if unpaired:
        raise TypeError(f"leaves whose declared negation is not a declared leaf: {unpaired}")
    _declarations_closed = True


def leaf_classes() -> tuple[type[Predicate], ...]:
    """Every declared leaf class, in declaration order."""
    return tuple(_LEAF_CLASSES.values())


def leaf_class(op: str) -> type[Predicate] | None:
    """The leaf class declared with ``op`` (its JSON tag), or None."""
    return _LEAF_CLASSES.get(op)


class UnaryPredicate(Predicate):
    """IS [NOT] NULL and IS [NOT] NaN: ``cls(term)``.

    SQL placeholders: ``{column}``, the (quoted) column.
    """

    __slots__ = ()
    placeholders = frozenset({"column"})

    def __init__(self, term: Any) -> None:
        t = _as_term(term)
        self._set(term=t, _hash=hash((self.op, t)))

    @property
    def args(self) -> tuple[Any, ...]:
        return (self.term,)


class IsNull(
    UnaryPredicate,
    op="is_null",
    visitor="visit_is_null",
    negation="IsNotNull",
    sql="{column} IS NULL",
):
    """``a IS NULL``."""

    __slots__ = ()


class IsNotNull(
    UnaryPredicate,
    op="is_not_null",
    visitor="visit_is_not_null",
    negation="IsNull",
    sql="{column} IS NOT NULL",
):
    """``a IS NOT NULL``."""

    __slots__ = ()


class IsNaN(
    UnaryPredicate,
    op="is_nan",
    visitor="visit_is_nan",
    negation="IsNotNaN",
    sql="isnan({column})",
):
    """``isnan(a)``: TRUE only for NaN values (never for NULL)."""

    __slots__ = ()


class IsNotNaN(
    UnaryPredicate,
    op="is_not_nan",
    visitor="visit_is_not_nan",
    negation="IsNaN",
    sql="NOT isnan({column})",
):
    """``NOT isnan(a)``. On NULL rows Spark says TRUE and DuckDB says NULL: pruning allows for both."""

    __slots__ = ()


class LiteralPredicate(Predicate):
    """A comparison of a column with one literal (``pa.Scalar`` once bound): ``cls(term, literal)``.

    SQL placeholders: ``{column}``; ``{value}``, the literal; and for prefix tests, which DuckDB's
    ``starts_with`` runs on text, ``{prefix_column}`` and ``{prefix}``: the column and the literal,
    or ``hex(column)`` and the prefix's hex digits when the prefix is binary.
    """

    __slots__ = ("literal",)
    literal: Any
    placeholders = frozenset({"column", "value", "prefix_column", "prefix"})

    def __init__(self, term: Any, literal: Any) -> None:
        t = _as_term(term)
        lit = _check_literal(literal, self.op)
        self._set(term=t, literal=lit, _hash=hash((self.op, t, _literal_key(lit))))

    @property
    def args(self) -> tuple[Any, ...]:
        return (self.term, self.literal)


class EqualTo(
    LiteralPredicate,
    op="eq",
    visitor="visit_equal",
    negation="NotEqualTo",
    sql="{column} = {value}",
):
    """``a = v``."""

    __slots__ = ()


class NotEqualTo(
    LiteralPredicate,
    op="not_eq",
    visitor="visit_not_equal",
    negation="EqualTo",
    sql="{column} <> {value}",
):
    """``a <> v``."""

    __slots__ = ()


class LessThan(
    LiteralPredicate,
    op="lt",
    visitor="visit_less_than",
    negation="GreaterThanOrEqual",
    sql="{column} < {value}",
):
    """``a < v``."""

    __slots__ = ()


class LessThanOrEqual(
    LiteralPredicate,
    op="lt_eq",
    visitor="visit_less_than_or_equal",
    negation="GreaterThan",
    sql="{column} <= {value}",
):
    """``a <= v``."""

    __slots__ = ()


class GreaterThan(
    LiteralPredicate,
    op="gt",
    visitor="visit_greater_than",
    negation="LessThanOrEqual",
    sql="{column} > {value}",
):
    """``a > v``."""

    __slots__ = ()


class GreaterThanOrEqual(
    LiteralPredicate,
    op="gt_eq",
    visitor="visit_greater_than_or_equal",
    negation="LessThan",
    sql="{column} >= {value}",
):
    """``a >= v``."""

    __slots__ = ()


class StartsWith(
    LiteralPredicate,
    op="starts_with",
    visitor="visit_starts_with",
    negation="NotStartsWith",
    sql="starts_with({prefix_column}, {prefix})",
):
    """``starts_with(a, prefix)``, i.e. ``a LIKE 'prefix%'``, bytewise on strings and binary."""

    __slots__ = ()


class NotStartsWith(
    LiteralPredicate,
    op="not_starts_with",
    visitor="visit_not_starts_with",
    negation="StartsWith",
    sql="NOT starts_with({prefix_column}, {prefix})",
):
    """``NOT starts_with(a, prefix)``."""

    __slots__ = ()


class Contains(
    LiteralPredicate,
    op="contains",
    visitor="visit_contains",
    negation="NotContains",
    sql="contains({column}, {value})",
):
    """``contains(a, s)``, i.e. ``a LIKE '%s%'``: the string holds ``s`` (case-sensitive); strings only."""

    __slots__ = ()


class NotContains(
    LiteralPredicate,
    op="not_contains",
    visitor="visit_not_contains",
    negation="Contains",
    sql="NOT contains({column}, {value})",
):
    """``NOT contains(a, s)``."""

    __slots__ = ()


class ContainsTerm(
    LiteralPredicate,
    op="contains_term",
    visitor="visit_contains_term",
    negation="NotContainsTerm",
    sql="contains_term({column}, {value})",
):
    """``contains_term(a, word)``: the lower-cased string has ``word`` (lower-cased) among its word
    terms, as ``hudi_expr.terms`` tokenizes it; strings only. Binding checks ``word`` is one term."""

    __slots__ = ()


class NotContainsTerm(
    LiteralPredicate,
    op="not_contains_term",
    visitor="visit_not_contains_term",
    negation="ContainsTerm",
    sql="NOT contains_term({column}, {value})",
):
    """``NOT contains_term(a, word)``."""

    __slots__ = ()


class SetPredicate(Predicate):
    """``a [NOT] IN (v1, v2, ...)``; ``values`` is a tuple (unbound) or a ``pa.Array`` (bound).

    ``cls(term, values)``. SQL placeholders: ``{column}``; ``{values}``, the values comma-separated.
    """

    __slots__ = ("values",)
    values: Any
    placeholders = frozenset({"column", "values"})

    def __new__(cls, term: Any, values: Any) -> Expression:  # type: ignore[misc]  # IN (v) is = v
        t = _as_term(term)
        if isinstance(values, (pa.Array, pa.ChunkedArray)):
            vals: Any = _unique_array(values, cls.op)
            count = len(vals)
            first = vals[0] if count else None
            key: Any = ("array", str(vals.type), count)
        else:
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                raise TypeError(f"{cls.op} needs a collection of values, got {values!r}")
            unique: dict[Any, Any] = {}
            for v in values:
                v = _check_literal(v, cls.op)
                unique.setdefault(_literal_key(v), v)
            vals = tuple(unique.values())
            count = len(vals)
            first = vals[0] if count else None
            key = tuple(unique)
        # IN () is FALSE and NOT IN () is TRUE for every row, NULL rows too (an OR/AND of nothing).
        if count == 0:
            return AlwaysFalse() if cls is In else AlwaysTrue()
        if count == 1:
            return (EqualTo if cls is In else NotEqualTo)(t, first)
        node = object.__new__(cls)
        node._set(term=t, values=vals, _hash=hash((cls.op, t, key)))
        return node

    @property
    def args(self) -> tuple[Any, ...]:
        return (self.term, self.values)


class In(
    SetPredicate,
    op="in",
    visitor="visit_in",
    negation="NotIn",
    sql="{column} IN ({values})",
):
    """``a IN (...)``."""

    __slots__ = ()


class NotIn(
    SetPredicate,
    op="not_in",
    visitor="visit_not_in",
    negation="In",
    sql="{column} NOT IN ({values})",
):
    """``a NOT IN (...)``."""

    __slots__ = ()


_close_declarations()


def _unique_array(values: pa.Array | pa.ChunkedArray, op: str) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        raise ValueError(f"NULL in an {op} list is never matched by a row; remove it or use is_null()")
    import pyarrow.compute as pc

    return pc.unique(values)


def negate_leaf(leaf: Predicate) -> Expression:
    """The exact negation of a leaf under three-valued logic (NOT(a < 5) is a >= 5)."""
    negation: Callable[..., Expression] = leaf.negation
    return negation(*leaf.args)


def _invert(expr: Expression) -> Expression:
    """Exact negation by De Morgan, without recursion (NOT(NOT x) is x, so a Not is not entered)."""
    results: list[Expression] = []
    stack: list[tuple[Expression, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        if isinstance(node, _Junction) and not expanded:
            stack.append((node, True))
            stack.append((node.right, False))
            stack.append((node.left, False))
        elif isinstance(node, _Junction):
            right = results.pop()
            left = results.pop()
            results.append((Or if isinstance(node, And) else And)(left, right))
        elif isinstance(node, Not):
            results.append(node.child)
        elif isinstance(node, AlwaysTrue):
            results.append(AlwaysFalse())
        elif isinstance(node, AlwaysFalse):
            results.append(AlwaysTrue())
        elif isinstance(node, Predicate):
            results.append(negate_leaf(node))
        else:  # pragma: no cover - every node kind is listed above
            raise TypeError(f"cannot negate {node!r}")
    return results[0]


def _leaf_equal(a: Predicate, b: Predicate) -> bool:
    if a.term != b.term:
        return False
    if isinstance(a, LiteralPredicate) and isinstance(b, LiteralPredicate):
        return _literal_equal(a.literal, b.literal)
    if isinstance(a, SetPredicate) and isinstance(b, SetPredicate):
        va, vb = a.values, b.values
        if isinstance(va, pa.Array) or isinstance(vb, pa.Array):
            return isinstance(va, pa.Array) and isinstance(vb, pa.Array) and _arrays_equal(va, vb)
        return len(va) == len(vb) and all(_literal_equal(x, y) for x, y in zip(va, vb, strict=True))
    return True


def _arrays_equal(va: pa.Array, vb: pa.Array) -> bool:
    if va.equals(vb):
        return True
    if va.type != vb.type or len(va) != len(vb) or not pa.types.is_floating(va.type):
        return False
    # Array.equals says NaN != NaN; as literals, NaNs are one value (like _literal_key).
    import pyarrow.compute as pc

    nan_a, nan_b = pc.is_nan(va), pc.is_nan(vb)
    return nan_a.equals(nan_b) and va.filter(pc.invert(nan_a)).equals(vb.filter(pc.invert(nan_b)))


def _literal_equal(a: Any, b: Any) -> bool:
    return _literal_key(a) == _literal_key(b)


def _equal(a: Expression, b: Expression) -> bool:
    """Structural equality modulo And/Or associativity, iterative so any depth works."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if type(x) is not type(y) or x._hash != y._hash:
            return False
        # Same type (checked above): y is of x's kind too.
        if isinstance(x, _Junction) and isinstance(y, _Junction):
            xs, ys = x.operands(), y.operands()
            if len(xs) != len(ys):
                return False
            stack.extend(zip(xs, ys, strict=True))
        elif isinstance(x, Not) and isinstance(y, Not):
            stack.append((x.child, y.child))
        elif isinstance(x, Predicate) and isinstance(y, Predicate) and not _leaf_equal(x, y):
            return False
    return True


# --------------------------------------------------------------------------------------- builders


class Column:
    """Builder returned by ``col``: ``col("a") > 5``, ``col("s.x").isin([1, 2])``."""

    __slots__ = ("ref",)

    def __init__(self, name: str) -> None:
        self.ref = Reference(name)

    def __repr__(self) -> str:
        return f"col({self.ref.name!r})"

    def __hash__(self) -> int:
        return hash(self.ref)

    def __eq__(self, other: Any) -> Expression:  # type: ignore[override]  # col("a") == 1 builds a leaf
        return EqualTo(self.ref, other)

    def __ne__(self, other: Any) -> Expression:  # type: ignore[override]  # col("a") != 1 builds a leaf
        return NotEqualTo(self.ref, other)

    def __lt__(self, other: Any) -> Expression:
        return LessThan(self.ref, other)

    def __le__(self, other: Any) -> Expression:
        return LessThanOrEqual(self.ref, other)

    def __gt__(self, other: Any) -> Expression:
        return GreaterThan(self.ref, other)

    def __ge__(self, other: Any) -> Expression:
        return GreaterThanOrEqual(self.ref, other)

    def isin(self, values: Iterable[Any]) -> Expression:
        return In(self.ref, values)

    def notin(self, values: Iterable[Any]) -> Expression:
        return NotIn(self.ref, values)

    def between(self, low: Any, high: Any) -> Expression:
        """SQL ``BETWEEN``: both ends included."""
        return And(GreaterThanOrEqual(self.ref, low), LessThanOrEqual(self.ref, high))

    def is_null(self) -> Expression:
        return IsNull(self.ref)

    def is_not_null(self) -> Expression:
        return IsNotNull(self.ref)

    def is_nan(self) -> Expression:
        return IsNaN(self.ref)

    def is_not_nan(self) -> Expression:
        return IsNotNaN(self.ref)

    def starts_with(self, prefix: str | bytes) -> Expression:
        return StartsWith(self.ref, prefix)

    def not_starts_with(self, prefix: str | bytes) -> Expression:
        return NotStartsWith(self.ref, prefix)

    def contains(self, substring: str) -> Expression:
        """``contains(a, substring)``, i.e. ``a LIKE '%substring%'`` (case-sensitive)."""
        return Contains(self.ref, substring)

    def not_contains(self, substring: str) -> Expression:
        return NotContains(self.ref, substring)

    def contains_term(self, word: str) -> Expression:
        """The lower-cased text has the word ``word`` among its terms (see ``hudi_expr.terms``)."""
        return ContainsTerm(self.ref, word)

    def not_contains_term(self, word: str) -> Expression:
        return NotContainsTerm(self.ref, word)


def col(name: str) -> Column:
    """A column by name or dotted struct path, for building predicates with Python operators."""
    return Column(name)


def contains_term(column_name: str, word: str) -> Expression:
    """``contains_term(column, word)``: ``col(column_name).contains_term(word)``."""
    return ContainsTerm(Reference(column_name), word)
