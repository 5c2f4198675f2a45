"""``pyarrow.compute.Expression`` to and from ``hudi_expr``, for pyarrow datasets and residual filters.

``to_pyarrow`` is ``hudi_expr.to_pyarrow``: a row filter keeping exactly the rows where a
``hudi_expr`` expression is TRUE.

``from_pyarrow`` goes the other way, for pruning only. A pyarrow expression is read through its
public pickle form (``Expression.__reduce__``): arrow serializes an expression as a one-row IPC
file whose schema metadata lists the tree in pre-order (``call``/``field_ref``/``literal``/
``options``/``end``) and whose columns hold the literals and function options as typed arrow
scalars. So literals keep their exact arrow type and no text is parsed.

The translation keeps a *superset*: every row the pyarrow expression selects (under arrow's own
semantics: IEEE NaN, NULL handling of ``is_in`` ...) satisfies the returned ``hudi_expr``
expression (under the library's SQL semantics). Use it to skip files; keep applying the pyarrow
expression itself as the residual row filter. Each node is translated in both polarities (the
rows where it is TRUE, the rows where it is FALSE), so ``~`` needs no sound push-down of its own;
a subtree that cannot be translated is TRUE in both polarities and is listed in ``not_used``.

Arrow's IEEE comparisons are kept sound the cheap way: ``a > 5`` becomes ``a > 5`` (which also
keeps NaN rows), and ``NOT (a > 5)`` becomes ``a <= 5 OR isnan(a)``. Where arrow compares through
inexact doubles (a float literal against a decimal or integer column, a decimal literal against a
float column; without a schema any column may be either) the bounds get a relative slack of
2**-40, ``=``/``<>`` lose their exclusion side, and float ``is_in`` lists become ranges covering
arrow's rounding of the list to the column's scale. Pass the schema for exact float leaves.

This is why the translation is not ``adapters.translation.walker``'s: the walker pushes NOT down
with SQL's exact negation, which IEEE comparisons, ``if_else`` and ``and_not`` do not follow.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

import hudi_expr
from adapters.translation import Translation
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BindError,
    BoundReference,
    Contains,
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
    NotContains,
    NotEqualTo,
    NotIn,
    NotStartsWith,
    Or,
    StartsWith,
)
from hudi_expr.expressions import LiteralPredicate
from hudi_expr.types import is_binary_like, is_string_like

__all__ = ["Translation", "from_pyarrow", "parse_pyarrow", "to_pyarrow"]


def to_pyarrow(expr: Expression, schema: pa.Schema | None = None) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` keeping exactly the rows where ``expr`` is TRUE.

    Same as ``hudi_expr.to_pyarrow``: give ``schema`` unless ``expr`` is bound (NaN ordering and
    literal coercion need the column types).
    """
    return hudi_expr.to_pyarrow(expr, schema)


def parse_pyarrow(expr: pc.Expression, schema: pa.Schema | None = None) -> Expression:
    """``from_pyarrow(expr, schema).expr``: the pruning expression alone."""
    return from_pyarrow(expr, schema).expr


def from_pyarrow(expr: pc.Expression, schema: pa.Schema | None = None) -> Translation:
    """Translate a pyarrow filter into a ``hudi_expr`` expression for file pruning.

    Supported: ``equal``/``not_equal``/``less``/``less_equal``/``greater``/``greater_equal``
    between a field and a literal (either side), ``and``/``or``/``and_not`` (Kleene or not),
    ``invert``, ``is_in`` (every null matching behavior), ``is_null`` (``nan_is_null`` too),
    ``is_valid``, ``is_nan``, ``starts_with`` and ``match_substring`` (case-sensitive), ``if_else``
    of translatable parts, boolean literals, bare boolean fields and nested fields
    (``pc.field("s", "x")`` is ``s.x``).
    Anything else is TRUE and reported in ``not_used``.

    ``schema`` is optional: with it, a leaf that cannot be bound to the schema (unknown column,
    incomparable literal) is not used, and float literals against float columns need no widening.
    The result is unbound either way; bind it (or pass the schema on) to prune.
    """
    if not isinstance(expr, pc.Expression):
        raise TypeError(f"expected a pyarrow.compute.Expression, got {type(expr).__name__}")
    try:
        tree = _decode(expr)
    except (pa.ArrowException, ValueError, IndexError, struct.error, TypeError) as exc:
        # E.g. a field referenced by position, which arrow itself cannot serialize.
        return Translation(AlwaysTrue(), (f"{expr} (unreadable: {exc})",))
    translator = _Translator(schema)
    pos, _neg = translator.translate(tree)
    return Translation(pos, tuple(dict.fromkeys(translator.not_used)))


# ------------------------------------------------------------------------------- decoding


@dataclass(frozen=True)
class _Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class _Field:
    path: tuple[str, ...]


@dataclass(frozen=True)
class _Call:
    name: str
    args: tuple[Any, ...]
    options: pa.StructScalar | None


_Node = _Literal | _Field | _Call


def _decode(expr: pc.Expression) -> _Node:
    """The expression tree, read from arrow's own serialization (what pickling uses)."""
    reduced = expr.__reduce__()
    buf = reduced[1][0]
    reader = ipc.open_file(pa.py_buffer(buf) if not isinstance(buf, pa.Buffer) else buf)
    batch = reader.get_batch(0)
    pairs = _metadata_pairs(reader.schema)

    def scalar(index: str) -> pa.Scalar:
        return batch.column(int(index))[0]

    # Pre-order tokens with "end" closing each call; read with an explicit stack (any depth).
    frames: list[tuple[str, list[Any], list[Any]]] = []  # (name, args, [options])
    result: list[_Node] = []
    i = 0

    def emit(node: _Node) -> None:
        (frames[-1][1] if frames else result).append(node)

    while i < len(pairs):
        key, value = pairs[i]
        i += 1
        if key == "literal":
            emit(_Literal(scalar(value)))
        elif key == "field_ref":
            emit(_Field((value,)))
        elif key == "nested_field_ref":
            count = int(value)
            path = []
            for _ in range(count):
                k, v = pairs[i]
                if k != "field_ref":
                    raise ValueError(f"unexpected {k!r} in a nested field reference")
                path.append(v)
                i += 1
            emit(_Field(tuple(path)))
        elif key == "call":
            frames.append((value, [], []))
        elif key == "options":
            frames[-1][2].append(scalar(value))
        elif key == "end":
            name, args, options = frames.pop()
            emit(_Call(name, tuple(args), options[0] if options else None))
        else:
            raise ValueError(f"unknown serialized expression key {key!r}")
    if frames or len(result) != 1:
        raise ValueError("malformed serialized expression")
    return result[0]


def _metadata_pairs(schema: pa.Schema) -> list[tuple[str, str]]:
    """The schema's key/value metadata in order, repeated keys included.

    ``Schema.metadata`` is a dict (repeated keys collapse), so read the IPC schema message, a
    flatbuffer: Message.header (field 2) is the Schema, whose field 2 is ``custom_metadata``.
    """
    data = schema.serialize().to_pybytes()
    start = 8 if data[:4] == b"\xff\xff\xff\xff" else 4  # continuation marker, then length
    fb = memoryview(data)[start:]

    def u32(pos: int) -> int:
        return int(struct.unpack_from("<I", fb, pos)[0])

    def table_field(table: int, index: int) -> int | None:
        vtable = table - int(struct.unpack_from("<i", fb, table)[0])
        vt_size = int(struct.unpack_from("<H", fb, vtable)[0])
        slot = 4 + 2 * index
        if slot + 2 > vt_size:
            return None
        offset = int(struct.unpack_from("<H", fb, vtable + slot)[0])
        return table + offset if offset else None

    def deref(pos: int) -> int:
        return pos + u32(pos)

    def string(pos: int) -> str:
        at = deref(pos)
        return bytes(fb[at + 4 : at + 4 + u32(at)]).decode("utf-8")

    message = u32(0)
    header = table_field(message, 2)
    if header is None:
        raise ValueError("schema message without a header")
    kv_field = table_field(deref(header), 2)
    if kv_field is None:
        return []
    vector = deref(kv_field)
    pairs = []
    for n in range(u32(vector)):
        element = vector + 4 + 4 * n
        kv = deref(element)
        key_at, value_at = table_field(kv, 0), table_field(kv, 1)
        pairs.append((string(key_at) if key_at else "", string(value_at) if value_at else ""))
    return pairs


# ---------------------------------------------------------------------------- translation

_Pair = tuple[Expression, Expression]  # (TRUE rows, FALSE rows), both as supersets
_UNUSED: _Pair = (AlwaysTrue(), AlwaysTrue())
_NEVER: _Pair = (AlwaysFalse(), AlwaysFalse())

# Comparison name -> (its leaf, the name with the operands swapped).
_COMPARISONS: dict[str, tuple[type[LiteralPredicate], str]] = {
    "equal": (EqualTo, "equal"),
    "not_equal": (NotEqualTo, "not_equal"),
    "less": (LessThan, "greater"),
    "less_equal": (LessThanOrEqual, "greater_equal"),
    "greater": (GreaterThan, "less"),
    "greater_equal": (GreaterThanOrEqual, "less_equal"),
}
# "and_"/"or_" are what ``pc.and_``/``pc.or_`` name their calls on expressions (pyarrow 26).
_ANDS = {"and", "and_", "and_kleene"}
_ORS = {"or", "or_", "or_kleene"}
_JUNCTIONS = _ANDS | _ORS | {"and_not", "and_not_kleene"}
_ARITY = {"invert": 1, "if_else": 3}  # the junctions take 2
_SIMPLE_TYPES = (bool, int, float, decimal.Decimal, str, bytes, _dt.date)


class _Translator:
    def __init__(self, schema: pa.Schema | None) -> None:
        self.schema = schema
        self.not_used: list[str] = []

    def translate(self, root: _Node) -> _Pair:
        """Both polarities of every node, post-order with an explicit stack."""
        done: dict[int, _Pair] = {}
        stack: list[tuple[_Node, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if isinstance(node, _Call) and node.name in _JUNCTIONS | {"invert", "if_else"} and not expanded:
                stack.append((node, True))
                stack.extend((arg, False) for arg in reversed(node.args))
                continue
            parts = [done[id(a)] for a in node.args] if expanded and isinstance(node, _Call) else []
            done[id(node)] = self._node(node, parts)
        return done[id(root)]

    def _node(self, node: _Node, parts: list[_Pair]) -> _Pair:
        if isinstance(node, _Call) and parts and len(parts) == _ARITY.get(node.name, 2):
            if node.name == "invert":
                return parts[0][1], parts[0][0]
            if node.name in _ANDS:
                return And(parts[0][0], parts[1][0]), Or(parts[0][1], parts[1][1])
            if node.name in _ORS:
                return Or(parts[0][0], parts[1][0]), And(parts[0][1], parts[1][1])
            if node.name in ("and_not", "and_not_kleene"):
                return And(parts[0][0], parts[1][1]), Or(parts[0][1], parts[1][0])
            if node.name == "if_else":
                # A NULL condition gives NULL; otherwise the chosen branch.
                (c_t, c_f), (x_t, x_f), (y_t, y_f) = parts
                return Or(And(c_t, x_t), And(c_f, y_t)), Or(And(c_t, x_f), And(c_f, y_f))
        try:
            pair = self._leaf(node)
        except (BindError, TypeError, ValueError, ArithmeticError, pa.ArrowException):
            pair = None
        if pair is None:
            self.not_used.append(_render(node))
            return _UNUSED
        return pair

    # ------------------------------------------------------------------------------ leaves

    def _leaf(self, node: _Node) -> _Pair | None:
        if isinstance(node, _Literal):
            if not pa.types.is_boolean(node.value.type):
                return None
            if not node.value.is_valid:
                return _NEVER
            return (AlwaysTrue(), AlwaysFalse()) if node.value.as_py() else (AlwaysFalse(), AlwaysTrue())
        if isinstance(node, _Field):
            name = self._name(node)
            if name is None or not self._is_type(name, pa.types.is_boolean):
                return None
            return self._checked(EqualTo(name, True), EqualTo(name, False))
        name_of_call = node.name
        if name_of_call in _COMPARISONS and len(node.args) == 2:
            return self._comparison(node)
        if not node.args:
            return None
        target = node.args[0]
        if (
            name_of_call in ("starts_with", "match_substring")
            and isinstance(target, _Call)
            and target.name == "cast"
        ):
            target = self._text_cast(target)
        if not isinstance(target, _Field):
            return None
        name = self._name(target)
        if name is None:
            return None
        opts = node.options
        if name_of_call == "is_valid" and len(node.args) == 1:
            return self._checked(IsNotNull(name), IsNull(name))
        if name_of_call == "is_null" and len(node.args) == 1:
            if opts is not None and _option(opts, "nan_is_null"):
                return self._checked(Or(IsNull(name), IsNaN(name)), And(IsNotNull(name), IsNotNaN(name)))
            return self._checked(IsNull(name), IsNotNull(name))
        if name_of_call == "is_nan" and len(node.args) == 1:
            return self._checked(IsNaN(name), IsNotNaN(name))
        if name_of_call == "starts_with" and len(node.args) == 1 and opts is not None:
            if _option(opts, "ignore_case"):
                return None
            pattern = _option(opts, "pattern")
            if not isinstance(pattern, (str, bytes)):
                return None
            return self._checked(StartsWith(name, pattern), NotStartsWith(name, pattern))
        if name_of_call == "match_substring" and len(node.args) == 1 and opts is not None:
            pattern = _option(opts, "pattern")
            if _option(opts, "ignore_case") or not isinstance(pattern, str):
                return None
            return self._checked(Contains(name, pattern), NotContains(name, pattern))
        if name_of_call == "is_in" and len(node.args) == 1 and opts is not None:
            return self._is_in(name, opts)
        return None

    def _comparison(self, node: _Call) -> _Pair | None:
        left, right = node.args
        kind = node.name
        if isinstance(left, _Literal) and isinstance(right, _Field):
            left, right = right, left
            kind = _COMPARISONS[kind][1]
        if not (isinstance(left, _Field) and isinstance(right, _Literal)):
            return None
        name = self._name(left)
        if name is None:
            return None
        lit = right.value
        if not lit.is_valid:
            return _NEVER  # a comparison with NULL is NULL: neither TRUE nor FALSE
        value = _py_literal(lit)
        if pa.types.is_floating(lit.type) and math.isnan(value):
            # IEEE: only != holds, for every non-null row.
            if kind == "not_equal":
                return self._checked(IsNotNull(name), AlwaysFalse())
            return self._checked(AlwaysFalse(), IsNotNull(name))
        if self._approximate(name, lit):
            return self._widened(name, kind, value)
        leaf = _COMPARISONS[kind][0]
        neg: Expression = _COMPARISONS[_NEGATED[kind]][0](name, value)
        if kind in ("greater", "greater_equal") and self._may_be_nan(name, lit):
            neg = Or(neg, IsNaN(name))  # IEEE: NaN > v is FALSE, but NaN sorts above v in SQL
        return self._checked(leaf(name, value), neg)

    def _approximate(self, name: str, lit: pa.Scalar) -> bool:
        """Whether arrow may compare through doubles that are not the exact values.

        A float literal against a decimal (or integer) column makes arrow cast the column to
        double, and a decimal literal against a float column casts the literal: either way the
        comparison sees values a few ulps off. Without a schema either may be the case.
        """
        if pa.types.is_floating(lit.type):
            value = lit.as_py()
            return not math.isinf(value) and not self._is_type(name, pa.types.is_floating, default=False)
        if pa.types.is_decimal(lit.type):
            return self._is_type(name, pa.types.is_floating, default=True)
        return False

    def _widened(self, name: str, kind: str, value: Any) -> _Pair:
        """A comparison made in doubles that may be off: bounds widened by a relative slack.

        ``lo``/``hi`` bracket every value arrow may take as equal to the literal; the exact value
        lies between them whichever type the column has, so exact comparisons stay covered.
        """
        lo, hi = _bracket(float(value))
        c = hudi_expr.col(name)
        near = (c >= lo) & (c <= hi)
        pos, neg = {
            # Arrow may find a value unequal to the literal even when they are the same number.
            "equal": (near, IsNotNull(name)),
            "not_equal": (IsNotNull(name), near),
            "less": (c < hi, c >= lo),
            "less_equal": (c <= hi, c >= lo),
            "greater": (c > lo, c <= hi),
            "greater_equal": (c >= lo, c <= hi),
        }[kind]
        if kind in ("greater", "greater_equal"):
            neg = Or(neg, IsNaN(name))
        return self._checked(pos, neg)

    def _is_in(self, name: str, opts: pa.StructScalar) -> _Pair | None:
        values = _option_raw(opts, "value_set")
        behavior = _option(opts, "null_matching_behavior")
        if values is None or behavior not in (0, 1, 2, 3):  # MATCH, SKIP, EMIT_NULL, INCONCLUSIVE
            return None
        arr = values.values if isinstance(values, pa.ListScalar) else None
        if arr is None:
            return None
        has_null = arr.null_count > 0
        arr = arr.drop_null()
        items = [_py_literal(s) for s in arr]
        is_float = pa.types.is_floating(arr.type)
        # TRUE: a listed value (arrow matches NaN to NaN; -0.0 only to -0.0, a subset of SQL's).
        pos: Expression = In(name, items) if items else AlwaysFalse()
        half = self._rounding(name, arr.type)
        if half is not None and items:
            pos = Or(*[_near(name, v, half) for v in items])
        # FALSE: a value arrow finds unlisted. Arrow tells 0.0 from -0.0 where SQL does not, so a
        # zero listed with one sign only leaves the NOT IN list (a smaller list keeps more rows).
        signs = {math.copysign(1.0, v) for v in items if is_float and v == 0}
        kept = [v for v in items if not (is_float and v == 0 and len(signs) < 2)]
        if half is not None:
            kept = []  # values cast between float and decimal: which rows arrow lists is unsure
        neg: Expression = NotIn(name, kept) if kept else IsNotNull(name)
        if behavior == 0 and has_null:
            pos = Or(pos, IsNull(name))
        if (behavior == 0 and not has_null) or behavior == 1:
            neg = Or(neg, IsNull(name))  # a NULL row is FALSE (not NULL) for arrow here
        if behavior == 3 and has_null:
            neg = AlwaysFalse()  # an unlisted value is NULL, never FALSE
        return self._checked(pos, neg)

    # ----------------------------------------------------------------------------- helpers

    def _name(self, field: _Field) -> str | None:
        if any(not part or "." in part for part in field.path):
            return None  # a dotted name would read as a struct path
        return ".".join(field.path)

    def _rounding(self, name: str, value_type: pa.DataType) -> float | None:
        """How far arrow may move a listed value when it casts the value set to the column type.

        None when the values are taken exactly. Floats cast to a decimal column round to its scale
        (half a unit); to an integer column they must be exact. Without a schema, the column may
        be a decimal of any scale >= 0: half a unit of scale 0.
        """
        if pa.types.is_floating(value_type):
            t = self._column_type(name)
            if t is None:
                return 0.5
            if pa.types.is_floating(t):
                return None
            return 0.5 * 10.0**-t.scale if pa.types.is_decimal(t) else 0.0
        if pa.types.is_decimal(value_type) and self._is_type(name, pa.types.is_floating, default=True):
            return 0.0  # cast to the float column's type, a few ulps off
        return None

    def _text_cast(self, node: _Call) -> _Node:
        """``cast(field)`` under ``starts_with`` or ``match_substring``, as written by ``to_pyarrow``.

        Its target type is not serialized; but those need a string or binary input and
        a cast between those keeps the bytes, so with a schema showing a text column it is a no-op.
        """
        if len(node.args) == 1 and isinstance(node.args[0], _Field) and self.schema is not None:
            name = self._name(node.args[0])
            t = self._column_type(name) if name is not None else None
            if t is not None and (_is_text(t) or (pa.types.is_dictionary(t) and _is_text(t.value_type))):
                return node.args[0]
        return node

    def _column_type(self, name: str) -> pa.DataType | None:
        if self.schema is None:
            return None
        try:
            bound = IsNull(name).bind(self.schema)
        except BindError:
            return None
        for leaf in bound.leaves():
            if isinstance(leaf.term, BoundReference):
                return leaf.term.type
        return None

    def _is_type(self, name: str, check: Any, default: bool = True) -> bool:
        t = self._column_type(name)
        if t is None:
            return default
        return bool(check(t))

    def _may_be_nan(self, name: str, lit: pa.Scalar) -> bool:
        t = self._column_type(name)
        if t is not None:
            return bool(pa.types.is_floating(t))
        return bool(
            pa.types.is_floating(lit.type) or pa.types.is_integer(lit.type) or pa.types.is_decimal(lit.type)
        )

    def _checked(self, pos: Expression, neg: Expression) -> _Pair:
        """With a schema, both sides must bind (else ``BindError`` makes the leaf unused)."""
        if self.schema is not None:
            pos.bind(self.schema)
            neg.bind(self.schema)
        return pos, neg


_NEGATED = {
    "equal": "not_equal",
    "not_equal": "equal",
    "less": "greater_equal",
    "less_equal": "greater",
    "greater": "less_equal",
    "greater_equal": "less",
}


def _bracket(v: float, half: float = 0.0) -> tuple[float, float]:
    """Bounds around ``v`` +- ``half`` with a relative slack of 2**-40 for double rounding."""
    slack = abs(v) * 2.0**-40 + half * (1 + 2.0**-40) + 2.0**-1000
    return v - slack, v + slack


def _near(name: str, value: Any, half: float) -> Expression:
    """Rows whose value arrow may take for ``value`` (NaN and infinities are taken exactly)."""
    v = float(value)
    if math.isnan(v):
        return IsNaN(name)
    if math.isinf(v):
        return EqualTo(name, v)
    lo, hi = _bracket(v, half)
    c = hudi_expr.col(name)
    return (c >= lo) & (c <= hi)


def _is_text(t: pa.DataType) -> bool:
    return bool(is_string_like(t) or is_binary_like(t) or pa.types.is_binary_view(t))


def _option_raw(opts: pa.StructScalar, key: str) -> Any:
    try:
        return opts[key]
    except KeyError:
        return None


def _option(opts: pa.StructScalar, key: str) -> Any:
    raw = _option_raw(opts, key)
    return None if raw is None else raw.as_py()


def _py_literal(s: pa.Scalar) -> Any:
    """A Python value where the conversion is exact, else the arrow scalar itself."""
    if pa.types.is_dictionary(s.type):
        s = s.value
    t = s.type
    if pa.types.is_temporal(t) and not pa.types.is_date(t):
        return s  # timestamps (units, zones), times, durations: keep their arrow type
    value = s.as_py()
    return value if isinstance(value, _SIMPLE_TYPES) else s


def _render(node: _Node) -> str:
    """Readable text of an untranslated subtree (iterative, any depth)."""
    out: dict[int, str] = {}
    stack: list[tuple[_Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if isinstance(n, _Call) and not expanded:
            stack.append((n, True))
            stack.extend((a, False) for a in reversed(n.args))
            continue
        if isinstance(n, _Literal):
            out[id(n)] = repr(n.value.as_py()) if n.value.is_valid else "null"
        elif isinstance(n, _Field):
            out[id(n)] = ".".join(n.path)
        else:
            out[id(n)] = f"{n.name}({', '.join(out[id(a)] for a in n.args)})"
    return out[id(node)]
