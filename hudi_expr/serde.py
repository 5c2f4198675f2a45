"""The portable JSON form of an expression; ``from_json(to_json(e)) == e``.

Shape: ``true``, ``false``, ``{"and": [...]}``, ``{"or": [...]}``, ``{"not": e}`` and leaves
``{"op": "lt", "column": "a", "value": 5}`` / ``{"op": "in", "column": "a", "values": [...]}`` /
``{"op": "is_null", "column": "a"}``, where ``op`` is the tag the leaf's class declares; a leaf on
a function of its column lists them innermost first, ``"functions": [{"name": "year"}]``. AND/OR
chains are written flat (n-ary), so a 10,000-deep chain is a list, not 10,000 nested objects.
JSON-native literals (int, str, bool, finite float) are written as they are; others are tagged:
``{"decimal": "1.50"}``, ``{"date": "2024-01-02"}``, ``{"timestamp": "2024-01-02T03:04:05+00:00"}``,
``{"binary": "<base64>"}``, ``{"float": "NaN"}``, and arrow scalars ``{"arrow": "<type>", "value":
...}``. Bound expressions serialize as their unbound form.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
from typing import Any

import pyarrow as pa

from hudi_expr.errors import ExpressionFormatError
from hudi_expr.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Applied,
    Expression,
    LiteralPredicate,
    Not,
    Or,
    Predicate,
    SetPredicate,
    UnaryPredicate,
    leaf_class,
    leaf_classes,
)
from hudi_expr.transforms import to_dict as transform_to_dict
from hudi_expr.transforms import transform_from_dict
from hudi_expr.visitors import ExpressionVisitor, visit

__all__ = ["from_dict", "from_json", "to_dict", "to_json"]


def to_json(expr: Expression) -> str:
    """``expr`` as JSON text (see the module docstring for the shape)."""
    return json.dumps(to_dict(expr), allow_nan=False)


def from_json(text: str) -> Expression:
    """The expression of JSON text written by ``to_json``; ``ExpressionFormatError`` if malformed."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ExpressionFormatError(f"not a JSON expression: {exc}") from None
    return from_dict(data)


def to_dict(expr: Expression) -> Any:
    """The JSON-ready Python form (dicts, lists and scalars)."""
    return visit(expr, _ToDict())


class _ToDict(ExpressionVisitor[Any]):
    def visit_true(self) -> Any:
        return True

    def visit_false(self) -> Any:
        return False

    def visit_not(self, node: Not, child: Any) -> Any:
        return {"not": child}

    def _junction(self, key: str, left: Any, right: Any) -> Any:
        # Results are fresh objects of this visitor: extending in place keeps long chains linear.
        items = left[key] if isinstance(left, dict) and key in left else [left]
        items.extend(right[key] if isinstance(right, dict) and key in right else [right])
        return {key: items}

    def visit_and(self, node: And, left: Any, right: Any) -> Any:
        return self._junction("and", left, right)

    def visit_or(self, node: Or, left: Any, right: Any) -> Any:
        return self._junction("or", left, right)

    def visit_predicate(self, leaf: Predicate) -> Any:
        out: dict[str, Any] = {"op": leaf.op, "column": leaf.term.column.name}
        functions = _functions(leaf.term)
        if functions:
            out["functions"] = functions
        if isinstance(leaf, LiteralPredicate):
            out["value"] = _encode(leaf.literal)
        elif isinstance(leaf, SetPredicate):
            values = leaf.values
            items = [values[i] for i in range(len(values))] if isinstance(values, pa.Array) else values
            out["values"] = [_encode(v) for v in items]
        return out


def from_dict(data: Any) -> Expression:
    """Build an expression from its JSON-ready form, with no recursion over AND/OR lists."""
    if data is True:
        return AlwaysTrue()
    if data is False:
        return AlwaysFalse()
    if not isinstance(data, dict):
        raise ExpressionFormatError(f"expected an expression object, true or false; got {data!r}")
    if "and" in data or "or" in data:
        key = "and" if "and" in data else "or"
        items = data[key]
        if not isinstance(items, list):
            raise ExpressionFormatError(f"{key!r} needs a list of expressions, got {items!r}")
        return (And if key == "and" else Or)(*(from_dict(item) for item in items))
    if "not" in data:
        return Not(from_dict(data["not"]))
    op = data.get("op")
    # The leaf is found by the op its class declares (Predicate.__init_subclass__).
    cls = leaf_class(op) if isinstance(op, str) else None
    if cls is None:
        known = sorted(leaf.op for leaf in leaf_classes())
        raise ExpressionFormatError(f"unknown predicate op {op!r}; known: {known}")
    name = data.get("column")
    if not isinstance(name, str):
        raise ExpressionFormatError(f"predicate {op!r} needs a string 'column', got {name!r}")
    column: Any = name
    functions = data.get("functions", [])
    if not isinstance(functions, list):
        raise ExpressionFormatError(f"'functions' must be a list, innermost first; got {functions!r}")
    for item in functions:
        try:
            column = Applied(transform_from_dict(item), column)
        except (TypeError, ValueError) as exc:
            raise ExpressionFormatError(f"bad function {item!r} in predicate {op!r}: {exc}") from None
    try:
        if issubclass(cls, UnaryPredicate):
            return cls(column)
        if issubclass(cls, SetPredicate):
            return cls(column, [_decode(v) for v in data["values"]])
        assert issubclass(cls, LiteralPredicate)
        return cls(column, _decode(data["value"]))
    except KeyError as exc:
        raise ExpressionFormatError(f"predicate {op!r} is missing {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ExpressionFormatError(f"bad predicate {data!r}: {exc}") from None


def _functions(term: Any) -> list[dict[str, Any]]:
    """The functions applied to a leaf's column, innermost first (``[]`` for a plain column)."""
    out: list[dict[str, Any]] = []
    while isinstance(term, Applied):
        out.append(transform_to_dict(term.transform))
        term = term.term
    return out[::-1]


# ------------------------------------------------------------------------------------ literals


def _encode(value: Any) -> Any:
    if isinstance(value, pa.Scalar):
        return _encode_scalar(value)
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value).replace("inf", "Infinity")}
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value)}
    if isinstance(value, bytes):
        return {"binary": base64.b64encode(value).decode("ascii")}
    if isinstance(value, _dt.datetime):
        return {"timestamp": value.isoformat()}
    if isinstance(value, _dt.date):
        return {"date": value.isoformat()}
    if isinstance(value, _dt.time):
        return {"time": value.isoformat()}
    raise ExpressionFormatError(f"cannot serialize literal {value!r}")


def _encode_scalar(s: pa.Scalar) -> Any:
    t = s.type
    if pa.types.is_timestamp(t):
        return {"arrow": "timestamp", "unit": t.unit, "tz": t.tz, "value": s.value}
    if pa.types.is_decimal(t):
        # The width is part of the type: decimal256(10, 2) must not come back as decimal128.
        kind = "decimal256" if pa.types.is_decimal256(t) else "decimal"
        return {"arrow": kind, "precision": t.precision, "scale": t.scale, "value": str(s.as_py())}
    if pa.types.is_fixed_size_binary(t):
        return {"arrow": "fixed_size_binary", "byte_width": t.byte_width, "value": _encode(s.as_py())}
    name = str(t)
    try:
        if pa.type_for_alias(name) != t:
            raise ValueError
    except (ValueError, KeyError):
        raise ExpressionFormatError(f"cannot serialize a literal of arrow type {t}") from None
    return {"arrow": name, "value": _encode(s.as_py())}


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise ExpressionFormatError(f"a literal cannot be a list: {value!r}")
        return value
    try:
        if "arrow" in value:
            return _decode_scalar(value)
        ((tag, text),) = value.items()
        if tag == "float":
            return float(text)
        if tag == "decimal":
            return decimal.Decimal(text)
        if tag == "binary":
            return base64.b64decode(text, validate=True)
        if tag == "timestamp":
            return _dt.datetime.fromisoformat(text)
        if tag == "date":
            return _dt.date.fromisoformat(text)
        if tag == "time":
            return _dt.time.fromisoformat(text)
    except (ValueError, TypeError, decimal.InvalidOperation) as exc:
        raise ExpressionFormatError(f"bad literal {value!r}: {exc}") from None
    raise ExpressionFormatError(f"unknown literal tag in {value!r}")


def _decode_scalar(value: dict[str, Any]) -> pa.Scalar:
    kind = value["arrow"]
    try:
        if kind == "timestamp":
            return pa.scalar(value["value"], pa.timestamp(value["unit"], value.get("tz")))
        if kind in ("decimal", "decimal256"):
            wide = kind == "decimal256" or value["precision"] > 38
            t = (pa.decimal256 if wide else pa.decimal128)(value["precision"], value["scale"])
            return pa.scalar(decimal.Decimal(value["value"]), t)
        if kind == "fixed_size_binary":
            return pa.scalar(_decode(value["value"]), pa.binary(value["byte_width"]))
        return pa.scalar(_decode(value["value"]), pa.type_for_alias(kind))
    except (KeyError, ValueError, TypeError, pa.ArrowException) as exc:
        raise ExpressionFormatError(f"bad arrow literal {value!r}: {exc}") from None
