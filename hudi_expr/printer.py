"""SQL text of an expression (what ``str(expr)`` prints), readable by DuckDB and Spark SQL.

A leaf prints as the SQL template its class declares (``"{column} < {value}"``); this module renders
the placeholders (quoted column, typed literal, ...) and the connectives with minimal parentheses.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.expressions import (
    And,
    Applied,
    BoundReference,
    Expression,
    Not,
    Or,
    Predicate,
    Reference,
    leaf_classes,
)
from hudi_expr.types import decimal_text
from hudi_expr.visitors import ExpressionVisitor, visit

__all__ = ["format_literal", "quote_column", "to_sql"]

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# DuckDB's reserved and type-function keywords (duckdb_keywords(), 2.0; a bare ``at`` or ``by``
# is a syntax error) and a few more that Spark reserves: a column named like one is quoted.
# Quoting more than needed is harmless; quoting less is a syntax error.
_RESERVED = frozenset(
    """all analyse analyze and any array as asc asymmetric both case cast check collate column
    constraint create default deferrable desc describe distinct do else end except false fetch for
    foreign from group having in initially intersect into lambda lateral leading limit not null
    offset on only or order pivot pivot_longer pivot_wider placing primary qualify references
    returning select show some summarize symmetric table then to trailing true union unique unpivot
    using variadic when where window with between cross current_date current_time current_timestamp
    current_user escape exists full ilike inner interval is join left like natural outer right
    session_user user anti asof at authorization binary by collation columns concurrently freeze
    generated glob isnull map notnull overlaps positional semi similar struct tablesample try_cast
    tuple unpack verbose""".split()  # noqa: SIM905 - a word list reads better as text
)
# Precedence: a child binding more loosely than its parent gets parentheses.
_OR, _AND, _NOT, _ATOM = 1, 2, 3, 4


def to_sql(expr: Expression) -> str:
    """``expr`` as a SQL boolean expression; ``a > 5 AND (b < 3 OR c IS NULL)``."""
    return _join(visit(expr, _SqlPrinter())[0])


# The printer builds a tree of text fragments (O(1) per node) and joins it once at the end, so a
# 10,000-deep chain costs linear time instead of re-copying ever longer strings.
Fragment = str | tuple[Any, ...]


def _join(fragment: Fragment) -> str:
    out: list[str] = []
    stack: list[Fragment] = [fragment]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        else:
            stack.extend(reversed(item))
    return "".join(out)


def quote_column(term: Reference | BoundReference | Applied) -> str:
    """Dotted path with each part quoted when it is not a plain identifier; a function of a column
    as DuckDB writes it (``year(d)``)."""
    if isinstance(term, Applied):
        return term.transform.sql(quote_column(term.term))
    parts = term.path if isinstance(term, BoundReference) else tuple(term.name.split("."))
    return ".".join(_quote(p) for p in parts)


def _quote(part: str) -> str:
    if _PLAIN_NAME.match(part) and part.lower() not in _RESERVED:
        return part
    return '"' + part.replace('"', '""') + '"'


def format_literal(value: Any) -> str:
    """A literal as SQL text: strings quoted, dates and timestamps typed, NaN and infinities cast."""
    if isinstance(value, pa.Scalar):
        return _format_scalar(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            special = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{special}' AS DOUBLE)"
        # DuckDB reads '1e-05' as a DOUBLE (comparing integers and FLOATs through doubles) but
        # '0.00001' as a DECIMAL cast to the column's type, which is what binding does.
        text = decimal_text(value)
        return text if text is not None else repr(value)
    if isinstance(value, decimal.Decimal):
        text = decimal_text(value)  # exponent notation would be a DOUBLE: inexact
        return text if text is not None else str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bytes):
        return "'" + "".join(f"\\x{b:02X}" for b in value) + "'::BLOB"
    if isinstance(value, _dt.datetime):
        kind = "TIMESTAMPTZ" if value.tzinfo is not None else "TIMESTAMP"
        return f"{kind} '{value.isoformat(sep=' ')}'"
    if isinstance(value, _dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, _dt.time):
        return f"TIME '{value.isoformat()}'"
    return repr(value)


def _format_scalar(s: pa.Scalar) -> str:
    t = s.type
    if pa.types.is_timestamp(t):
        text = pc.cast(s, pa.string()).as_py()
        kind = "TIMESTAMPTZ" if t.tz is not None else "TIMESTAMP"
        if kind == "TIMESTAMP" and t.unit == "ns" and s.value % 1000:
            kind = "TIMESTAMP_NS"  # a TIMESTAMP literal holds microseconds: it would truncate
        return f"{kind} '{text}'"
    if pa.types.is_date(t):
        # Arrow's text, not a Python date: a bound date past year 9999 (DATE '10000-01-01') is valid.
        return f"DATE '{pc.cast(s, pa.string()).as_py()}'"
    if pa.types.is_floating(t):
        return format_literal(float(s.as_py()))
    return format_literal(s.as_py())


Printed = tuple[Fragment, int]


class _SqlPrinter(ExpressionVisitor[Printed]):
    def visit_true(self) -> Printed:
        return "TRUE", _ATOM

    def visit_false(self) -> Printed:
        return "FALSE", _ATOM

    def visit_not(self, node: Not, child: Printed) -> Printed:
        return ("NOT ", _wrap(child, _NOT)), _NOT

    def visit_and(self, node: And, left: Printed, right: Printed) -> Printed:
        return (_wrap(left, _AND), " AND ", _wrap(right, _AND)), _AND

    def visit_or(self, node: Or, left: Printed, right: Printed) -> Printed:
        return (_wrap(left, _OR), " OR ", _wrap(right, _OR)), _OR

    def visit_predicate(self, leaf: Predicate) -> Printed:
        return _leaf_sql(leaf), _ATOM


def _leaf_sql(leaf: Predicate) -> str:
    """A leaf as SQL: its class's declared template with the placeholders it uses filled in."""
    return leaf.sql_template.format_map({name: _PLACEHOLDERS[name](leaf) for name in leaf.sql_fields})


def _prefix(leaf: Any) -> bytes | None:
    """A binary prefix as bytes (DuckDB's starts_with takes no BLOB: it is compared as hex), else None."""
    p = leaf.literal
    if isinstance(p, pa.Scalar):
        t = p.type
        binary = pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
        # Only a binary scalar is converted: as_py of a nanosecond timestamp would raise.
        p = p.as_py() if binary or pa.types.is_fixed_size_binary(t) else None
    return p if isinstance(p, bytes) else None


def _prefix_column(leaf: Any) -> str:
    return f"hex({quote_column(leaf.term)})" if _prefix(leaf) is not None else quote_column(leaf.term)


def _prefix_text(leaf: Any) -> str:
    p = _prefix(leaf)
    # The upper-case hex digits of the prefix start the column's hex text exactly when it starts so.
    return f"'{p.hex().upper()}'" if isinstance(p, bytes) else format_literal(leaf.literal)


# How each placeholder a leaf's SQL template may use is rendered (see the kinds in ``expressions``).
_PLACEHOLDERS: dict[str, Callable[[Any], str]] = {
    "column": lambda leaf: quote_column(leaf.term),
    "value": lambda leaf: format_literal(leaf.literal),
    "values": lambda leaf: _format_values(leaf.values),
    "prefix_column": _prefix_column,
    "prefix": _prefix_text,
}
_unrendered = {name for leaf in leaf_classes() for name in leaf.placeholders} - set(_PLACEHOLDERS)
if _unrendered:
    raise TypeError(f"the printer has no rendering for the SQL placeholders {sorted(_unrendered)}")


def _format_values(values: Any) -> str:
    items = (values[i] for i in range(len(values))) if isinstance(values, pa.Array) else values
    return ", ".join(format_literal(v) for v in items)


def _wrap(part: Printed, parent: int) -> Fragment:
    text, prec = part
    # Same-precedence AND/OR chains need no parentheses; anything looser does.
    return ("(", text, ")") if prec < parent else text
