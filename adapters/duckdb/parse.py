"""SQL predicate text -> ``hudi_expr`` expression, through DuckDB's own parser.

The predicate is parsed as ``SELECT * FROM t WHERE <sql>`` with ``json_serialize_sql`` and the
WHERE node of the JSON syntax tree is walked. Only the JSON format of DuckDB major version
``DUCKDB_MAJOR`` is understood; another major version refuses to import rather than guess.

Soundness: a subtree that cannot be translated (a function of a column, arithmetic, a subquery, a
non-prefix LIKE, a column compared with a column, ...) becomes TRUE ("may match") and its SQL text is
reported in ``Translation.not_used``. NOT is pushed down while translating, so an untranslatable
subtree under NOT is TRUE as well (never FALSE), and the negation of a translated comparison is its
exact three-valued negation (``NOT (a > 5)`` is ``a <= 5``). A comparison with a NULL constant is
never TRUE, negated or not, so it becomes FALSE in both polarities.

Literals are evaluated by DuckDB itself (one query for all of them), so ``DATE '...'``,
``TIMESTAMPTZ '...+02'``, ``'NaN'::DOUBLE`` and ``CAST(1.55 AS DECIMAL(3,1))`` mean exactly what
they mean to DuckDB. Only constants, casts of constants and unary +/- of those are evaluated (never
``random()`` or ``now()``). The evaluating connection runs with ``TimeZone = 'UTC'``: a TIMESTAMPTZ
literal without an offset is read as UTC.
"""

from __future__ import annotations

import datetime
import decimal
import json
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

import duckdb
import pyarrow as pa

from adapters.translation import Translation
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    HudiExprError,
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
)

__all__ = [
    "DUCKDB_MAJOR",
    "SqlParseError",
    "Translation",
    "parse_expression",
    "parse_predicate",
    "translate_expression",
    "translate_sql",
]

DUCKDB_MAJOR = 2
"""The DuckDB major version whose ``json_serialize_sql`` format this module reads."""

if int(duckdb.__version__.split(".")[0]) != DUCKDB_MAJOR:  # pragma: no cover - depends on install
    raise ImportError(
        f"adapters.duckdb reads the syntax tree of DuckDB {DUCKDB_MAJOR}.x, found DuckDB {duckdb.__version__}"
    )

_PREFIX = "SELECT * FROM t WHERE "
_PREFIX_BYTES = len(_PREFIX.encode())
_NO_LOCATION = 1 << 63  # DuckDB writes 2**64 - 1 for "no location"


class SqlParseError(HudiExprError, ValueError):
    """The SQL text is not a single valid boolean expression (bad input, not an unsupported one)."""


def parse_predicate(sql: str, table_aliases: Iterable[str] = ()) -> Expression:
    """The ``hudi_expr`` expression of a SQL WHERE condition; untranslatable parts become TRUE.

    ``table_aliases`` names the tables a column may be qualified with: ``t.a`` is column ``a`` when
    ``t`` is one of them, otherwise a two-part name is the struct field path ``t.a``.
    """
    return translate_sql(sql, table_aliases).expr


def translate_sql(sql: str, table_aliases: Iterable[str] = ()) -> Translation:
    """Like ``parse_predicate``, and also say which parts of ``sql`` were not used (for explain).

    Raises ``SqlParseError`` when ``sql`` does not parse as one boolean expression.
    """
    if not isinstance(sql, str):
        raise TypeError(f"expected SQL text, got {type(sql).__name__}")
    aliases = {table_aliases} if isinstance(table_aliases, str) else set(table_aliases)
    query = _PREFIX + sql
    where = _parse_where(sql, query)
    walker = Walker(query.encode(), _strip_aliases({a.lower() for a in aliases}), _PREFIX_BYTES)
    walker.evaluate_constants(where)
    expr = walker.translate(where, negated=False)
    return Translation(expr, tuple(dict.fromkeys(walker.not_used)))


def _strip_aliases(aliases: set[str]) -> Callable[[list[str]], str | None]:
    """The column path of a column reference: ``t.a`` is ``a`` when ``t`` is a table alias."""

    def resolve(parts: list[str]) -> str | None:
        if len(parts) > 1 and parts[0].lower() in aliases:
            parts = parts[1:]
        return ".".join(parts) if parts and all(parts) else None

    return resolve


def parse_expression(expr: duckdb.Expression, table_aliases: Iterable[str] = ()) -> Expression:
    """A DuckDB Python expression object (``duckdb.ColumnExpression("a") > 5``) as ``hudi_expr``."""
    return translate_expression(expr, table_aliases).expr


def translate_expression(expr: duckdb.Expression, table_aliases: Iterable[str] = ()) -> Translation:
    """Translate a DuckDB Python expression object through its SQL text (``str(expr)``)."""
    if not isinstance(expr, duckdb.Expression):
        raise TypeError(f"expected a duckdb.Expression, got {type(expr).__name__}")
    return translate_sql(str(expr), table_aliases)


# ------------------------------------------------------------------------------------ DuckDB access

_lock = threading.Lock()
_connections: dict[str, duckdb.DuckDBPyConnection] = {}


def _connection(timezone: str) -> duckdb.DuckDBPyConnection:
    """The module's private connection for session time zone ``timezone`` (call under ``_lock``)."""
    con = _connections.get(timezone)
    if con is None:
        con = _connections[timezone] = duckdb.connect(":memory:")
        con.execute("SET TimeZone = ?", [timezone]).fetchall()
    return con


def _run(query: str, params: list[Any], timezone: str = "UTC") -> pa.Table:
    """Run one query on a private connection, typed results as an arrow table."""
    with _lock:
        return _connection(timezone).sql(query, params=params).to_arrow_table()


def serialize(sql: str) -> dict[str, Any]:
    """DuckDB's JSON syntax tree of ``sql`` (``json_serialize_sql``); errors are in the tree."""
    with _lock:
        [(tree,)] = _connection("UTC").execute("SELECT json_serialize_sql(?)", [sql]).fetchall()
    return json.loads(tree)


def _parse_where(sql: str, query: str) -> dict[str, Any]:
    """The JSON WHERE node of ``query``; ``SqlParseError`` unless ``sql`` is one boolean expression."""
    if not sql.strip():
        raise SqlParseError("empty predicate: expected a boolean SQL expression")
    tree = serialize(query)
    if tree.get("error"):
        message = tree.get("error_message", "syntax error")
        position = tree.get("position")
        where = ""
        if position is not None and str(position).isdigit():
            offset = len(query.encode()[: int(position)].decode(errors="ignore")) - len(_PREFIX)
            where = f" at character {max(offset, 0)}"
        raise SqlParseError(f"cannot parse predicate {sql!r}{where}: {message}")
    statements = tree.get("statements", [])
    node = statements[0].get("node", {}) if len(statements) == 1 else {}
    if (
        node.get("type") != "SELECT_NODE"
        or node.get("modifiers")
        or node.get("group_expressions")
        or node.get("having") is not None
        or node.get("qualify") is not None
        or node.get("sample") is not None
        or node.get("from_table", {}).get("table_name") != "t"
        or node.get("where_clause") is None
    ):
        raise SqlParseError(f"not a single boolean expression: {sql!r}")
    return node["where_clause"]


# ------------------------------------------------------------------------------------------ walker

_COMPARISONS: dict[str, type[Expression]] = {
    "COMPARE_EQUAL": EqualTo,
    "COMPARE_NOTEQUAL": NotEqualTo,
    "COMPARE_LESSTHAN": LessThan,
    "COMPARE_LESSTHANOREQUALTO": LessThanOrEqual,
    "COMPARE_GREATERTHAN": GreaterThan,
    "COMPARE_GREATERTHANOREQUALTO": GreaterThanOrEqual,
}
# ``5 < a`` is ``a > 5``.
_FLIPPED = {
    "COMPARE_EQUAL": "COMPARE_EQUAL",
    "COMPARE_NOTEQUAL": "COMPARE_NOTEQUAL",
    "COMPARE_LESSTHAN": "COMPARE_GREATERTHAN",
    "COMPARE_LESSTHANOREQUALTO": "COMPARE_GREATERTHANOREQUALTO",
    "COMPARE_GREATERTHAN": "COMPARE_LESSTHAN",
    "COMPARE_GREATERTHANOREQUALTO": "COMPARE_LESSTHANOREQUALTO",
    "COMPARE_DISTINCT_FROM": "COMPARE_DISTINCT_FROM",
    "COMPARE_NOT_DISTINCT_FROM": "COMPARE_NOT_DISTINCT_FROM",
}


class _Untranslatable(Exception):
    """Raised inside the walker for a subtree that must become TRUE."""


class _Null:
    """The value of a NULL constant."""


_NULL = _Null()


class Walker:
    """Translates WHERE trees of one query; collects the text of the parts that were not used.

    ``resolve`` maps the name parts of a column reference to a column path (None: not a column of
    the table). Text before byte ``start`` of ``query`` is not the user's (a wrapping prefix).
    Constants are evaluated in session time zone ``timezone``, as the query itself would be.
    """

    def __init__(
        self,
        query: bytes,
        resolve: Callable[[list[str]], str | None],
        start: int = 0,
        timezone: str = "UTC",
    ) -> None:
        self.query = query
        self.resolve = resolve
        self.start = start
        self.timezone = timezone
        self.not_used: list[str] = []
        # id(node) -> literal value (``_NULL`` for NULL); absent: not a usable constant.
        self.constants: dict[int, Any] = {}

    # -- constants ------------------------------------------------------------------------------

    def evaluate_constants(
        self, root: dict[str, Any] | list[dict[str, Any]], parse: str | None = None
    ) -> dict[str, Any] | None:
        """Evaluate every maximal constant subtree with DuckDB, in one query when possible.

        ``parse``: SQL text whose syntax tree (``serialize``) is returned, from the same query.
        """
        found: list[dict[str, Any]] = []
        stack: list[Any] = [root]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if _is_constant(item):
                    value = _plain_constant(item)
                    if value is None:
                        found.append(item)
                    else:
                        self.constants[id(item)] = value
                    continue
                if item.get("class") in ("SUBQUERY", "TYPE"):
                    continue
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        if not found:
            return None if parse is None else serialize(parse)
        tree = None
        try:
            values, tree = _evaluate(found, self.timezone, parse)
        except duckdb.Error:
            values = []
            for node in found:
                try:
                    values.extend(_evaluate([node], self.timezone)[0])
                except duckdb.Error:
                    values.append(None)  # e.g. CAST('x' AS DATE): leave the comparison unused
        for node, value in zip(found, values, strict=True):
            if isinstance(value, decimal.Decimal) and node.get("literal", {}).get("kind") == "INTEGER":
                value = int(value)  # an integer literal beyond BIGINT: DuckDB types it DECIMAL(38, 0)
            if value is not None:
                self.constants[id(node)] = value
        if parse is not None and tree is None:
            tree = serialize(parse)
        return tree

    # -- translation ----------------------------------------------------------------------------

    def translate(self, node: dict[str, Any], negated: bool) -> Expression:
        """The expression of ``node`` (of ``NOT node`` when ``negated``), TRUE where unknown."""
        # An explicit stack keeps 10,000-term AND chains from hitting the recursion limit.
        results: list[Expression] = []
        stack: list[tuple[dict[str, Any], bool, bool]] = [(node, negated, False)]
        while stack:
            item, neg, expanded = stack.pop()
            kind = item.get("type")
            if kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
                children = item.get("children", [])
                if not expanded:
                    stack.append((item, neg, True))
                    stack.extend((child, neg, False) for child in reversed(children))
                    continue
                parts = results[len(results) - len(children) :]
                del results[len(results) - len(children) :]
                is_and = (kind == "CONJUNCTION_AND") != neg  # De Morgan under NOT
                results.append(And(*parts) if is_and else Or(*parts))
            elif kind == "OPERATOR_NOT" and len(item.get("children", [])) == 1:
                stack.append((item["children"][0], not neg, False))
            else:
                try:
                    results.append(self._leaf(item, neg))
                except _Untranslatable:
                    self.not_used.append(self.source_text(item))
                    results.append(AlwaysTrue())
        return results[0]

    def _leaf(self, node: dict[str, Any], neg: bool) -> Expression:
        kind = node.get("type")
        cls = node.get("class")
        if cls == "COMPARISON" and kind in _FLIPPED:
            return self._comparison(kind, node["left"], node["right"], neg)
        if kind == "COMPARE_IN":
            return self._in(node.get("children", []), neg)
        if kind == "COMPARE_NOT_IN":
            return self._in(node.get("children", []), not neg)
        if kind == "COMPARE_BETWEEN":
            low = self._comparison("COMPARE_GREATERTHANOREQUALTO", node["input"], node["lower"], neg)
            high = self._comparison("COMPARE_LESSTHANOREQUALTO", node["input"], node["upper"], neg)
            return Or(low, high) if neg else And(low, high)
        if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL") and len(node.get("children", [])) == 1:
            ref = self._column(node["children"][0])
            is_null = (kind == "OPERATOR_IS_NULL") != neg
            return IsNull(ref) if is_null else IsNotNull(ref)
        if cls == "FUNCTION":
            return self._function(node, neg)
        if cls == "COLUMN_REF":  # a boolean column: ``WHERE flag`` / ``WHERE NOT flag``
            return EqualTo(self._column(node), not neg)
        if id(node) in self.constants:
            value = self.constants[id(node)]
            if value is _NULL:
                return AlwaysFalse()  # WHERE NULL and WHERE NOT NULL keep no row
            if isinstance(value, bool):
                return AlwaysTrue() if value != neg else AlwaysFalse()
        raise _Untranslatable

    def _comparison(self, kind: str, left: dict[str, Any], right: dict[str, Any], neg: bool) -> Expression:
        if left.get("class") != "COLUMN_REF":
            left, right, kind = right, left, _FLIPPED[kind]
        ref = self._column(left)
        value = self._literal(right)
        if kind in ("COMPARE_DISTINCT_FROM", "COMPARE_NOT_DISTINCT_FROM"):
            # IS [NOT] DISTINCT FROM is never NULL: its negation is the other one.
            same = (kind == "COMPARE_NOT_DISTINCT_FROM") != neg
            if value is _NULL:
                return IsNull(ref) if same else IsNotNull(ref)
            return EqualTo(ref, value) if same else Or(NotEqualTo(ref, value), IsNull(ref))
        if value is _NULL:
            return AlwaysFalse()  # NULL, and NOT NULL is NULL too
        leaf = _COMPARISONS[kind](ref, value)  # type: ignore[call-arg]
        return ~leaf if neg else leaf

    def _in(self, children: list[dict[str, Any]], neg: bool) -> Expression:
        if len(children) < 2:
            raise _Untranslatable
        ref = self._column(children[0])
        values = [self._literal(child) for child in children[1:]]
        kept = [v for v in values if v is not _NULL]
        if neg and len(kept) < len(values):
            return AlwaysFalse()  # a NOT IN (.., NULL) is never TRUE
        expr = In(ref, kept)
        return ~expr if neg else expr

    def _function(self, node: dict[str, Any], neg: bool) -> Expression:
        name = str(node.get("function_name", "")).lower()
        if node.get("schema") or node.get("catalog") or node.get("filter") or node.get("distinct"):
            raise _Untranslatable
        args = [arg.get("expression", {}) for arg in node.get("arguments", [])]
        if any(arg.get("name") for arg in node.get("arguments", [])):
            raise _Untranslatable
        if name == "isnan" and len(args) == 1:
            leaf: Expression = IsNaN(self._column(args[0]))
        elif name in ("starts_with", "prefix") and len(args) == 2:
            ref = self._column(args[0])
            prefix = self._literal(args[1])
            if prefix is _NULL:
                return AlwaysFalse()
            if not isinstance(prefix, str):
                raise _Untranslatable
            leaf = StartsWith(ref, prefix)
        elif name in ("~~", "!~~") and len(args) == 2:
            ref = self._column(args[0])
            pattern = self._literal(args[1])
            if pattern is _NULL:
                return AlwaysFalse()
            if not isinstance(pattern, str):
                raise _Untranslatable
            leaf = _like(ref, pattern)
            if name == "!~~":
                neg = not neg
        else:
            raise _Untranslatable
        return ~leaf if neg else leaf

    # -- terms ----------------------------------------------------------------------------------

    def _column(self, node: dict[str, Any]) -> Reference:
        if node.get("class") != "COLUMN_REF":
            raise _Untranslatable
        path = self.resolve([str(p) for p in node.get("column_names", [])])
        if path is None:
            raise _Untranslatable
        return Reference(path)

    def _literal(self, node: dict[str, Any]) -> Any:
        if id(node) not in self.constants:
            raise _Untranslatable
        return self.constants[id(node)]

    def source_text(self, node: dict[str, Any]) -> str:
        """The SQL text a node came from (the span of every located node inside it)."""
        start, end = _NO_LOCATION, -1
        stack: list[Any] = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                loc = item.get("query_location")
                if isinstance(loc, int) and self.start <= loc < _NO_LOCATION:
                    start = min(start, loc)
                    end = max(end, loc + int(item.get("query_location_length", 0)))
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        if end < 0:
            return str(node.get("type", node.get("class", "?")))
        return self.query[start:end].decode(errors="replace")


def _like(ref: Reference, pattern: str) -> Expression:
    """``ref LIKE pattern`` when it is an equality or a prefix test (DuckDB's LIKE has no escape)."""
    if "%" not in pattern and "_" not in pattern:
        return EqualTo(ref, pattern)
    prefix = pattern.rstrip("%")
    if "%" in prefix or "_" in prefix:
        raise _Untranslatable
    return StartsWith(ref, prefix) if prefix else IsNotNull(ref)


# ------------------------------------------------------------------------------------- constants


def _is_constant(node: dict[str, Any]) -> bool:
    """A constant, a cast of one, or unary +/- of one: safe to evaluate once, ahead of the scan."""
    cls = node.get("class")
    if cls == "CONSTANT":
        return True
    if cls == "CAST":
        return not node.get("try_cast") and _is_constant(node.get("child") or {})
    if cls == "FUNCTION" and node.get("function_name") in ("-", "+") and node.get("is_operator"):
        args = node.get("arguments", [])
        return len(args) == 1 and _is_constant(args[0].get("expression") or {})
    return False


def _plain_constant(node: dict[str, Any]) -> Any:
    """The value of a plain integer, short decimal, string, boolean or NULL constant, or of
    ``DATE 'yyyy-mm-dd'``; ``None``: ask DuckDB (a round trip costs more than the rest of a plan)."""
    if node.get("class") == "CAST":
        return _iso_date(node)
    if node.get("class") != "CONSTANT":
        return None
    literal = node.get("literal") or {}
    kind, text = literal.get("kind"), literal.get("text")
    if not isinstance(text, str):
        return None
    if kind == "STRING":
        return text
    if kind == "NULL_LITERAL":
        return _NULL
    if kind == "BOOLEAN" and text in ("true", "false"):
        return text == "true"
    if kind == "INTEGER" and text.lstrip("-").isdigit():
        return int(text)
    if kind == "NUMERIC" and _SHORT_DECIMAL.fullmatch(text):
        value = decimal.Decimal(text)  # DuckDB types it DECIMAL(width, scale): the same value
        return value.copy_abs() if value == 0 else value  # a DECIMAL has no -0
    return None


# Up to 18 digits DuckDB reads ``1.25`` as a DECIMAL of that value (beyond 38 as a DOUBLE).
_SHORT_DECIMAL = re.compile(r"-?(?=[0-9.]{3,19}$)[0-9]+\.[0-9]+")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _iso_date(node: dict[str, Any]) -> Any:
    """``CAST('yyyy-mm-dd' AS DATE)`` as a date, when it is that and a valid date; else None."""
    child = node.get("child") or {}
    target = node.get("type_expr") or {}
    text = (child.get("literal") or {}).get("text")
    if (
        node.get("try_cast")
        or child.get("class") != "CONSTANT"
        or (child.get("literal") or {}).get("kind") != "STRING"
        or str(target.get("type_name", "")).upper() != "DATE"
        or target.get("children")
        or target.get("catalog")
        or target.get("schema")
        or not isinstance(text, str)
        or not _ISO_DATE.fullmatch(text)
    ):
        return None
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None  # e.g. 2023-02-30: DuckDB's own error decides


_UTC_ZONES = {"utc", "etc/utc", "gmt", "etc/gmt", "z", "zulu", "universal", "etc/universal", "uct"}


def is_utc(timezone: str) -> bool:
    """Whether a DuckDB ``TimeZone`` setting names UTC."""
    return timezone.lower() in _UTC_ZONES


def _evaluate(
    nodes: list[dict[str, Any]], timezone: str = "UTC", parse: str | None = None
) -> tuple[list[Any], dict[str, Any] | None]:
    """Evaluate constant nodes in one ``SELECT``; each value as a literal (``_NULL`` for NULL).

    With ``parse``, the syntax tree of that SQL text comes back from the same query (a round trip
    to DuckDB costs more than either).
    """
    statement = {
        "error": False,
        "statements": [
            {
                "node": {
                    "type": "SELECT_NODE",
                    "modifiers": [],
                    "cte_map": {"map": []},
                    "select_list": nodes,
                    "from_table": {"type": "EMPTY", "alias": "", "sample": None},
                    "where_clause": None,
                    "group_expressions": [],
                    "group_sets": [],
                    "aggregate_handling": "STANDARD_HANDLING",
                    "having": None,
                    "sample": None,
                    "qualify": None,
                },
                "named_param_map": [],
            }
        ],
    }
    tree = None
    if is_utc(timezone):
        if parse is None:
            table = _run("SELECT * FROM json_execute_serialized_sql(?)", [json.dumps(statement)])
        else:
            table = _run(
                "SELECT json_serialize_sql(?), * FROM json_execute_serialized_sql(?)",
                [parse, json.dumps(statement)],
            )
            tree = json.loads(table.column(0)[0].as_py())
            table = table.remove_column(0)
    else:
        # json_execute_serialized_sql casts text to TIMESTAMPTZ in UTC whatever the session zone
        # (DuckDB 2.0), so outside UTC the statement goes back to SQL text and runs as such.
        text = _run("SELECT json_deserialize_sql(?)", [json.dumps(statement)]).column(0)[0].as_py()
        table = _run(text, [], timezone)
    return [_to_literal(column[0]) for column in table.columns], tree


def _to_literal(scalar: pa.Scalar) -> Any:
    """A DuckDB-typed scalar as a ``hudi_expr`` literal; ``None`` when it has no literal form."""
    t = scalar.type
    if not scalar.is_valid:
        return _NULL
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            return scalar  # Python datetimes lack nanoseconds
        if t.tz is not None:
            scalar = scalar.cast(pa.timestamp(t.unit, tz="UTC"))
        return scalar.as_py()
    if pa.types.is_floating(t):
        return float(scalar.as_py())
    if (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
    ):
        return scalar.as_py()
    return None
