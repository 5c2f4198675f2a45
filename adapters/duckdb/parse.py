"""SQL predicate text -> ``hudi_expr`` expression, through DuckDB's own parser.

The predicate is parsed as ``SELECT * FROM t WHERE <sql>`` with ``json_serialize_sql``, and the
WHERE node of the JSON syntax tree is translated by ``adapters.translation.walker`` through this module's node
accessors (``Walker``). Only the JSON format of DuckDB major version ``DUCKDB_MAJOR`` is understood;
another major version refuses to import rather than guess.

Soundness is the walker's (see ``adapters.translation.walker``): a subtree that cannot be translated
(a function of a column, arithmetic, a subquery, a suffix LIKE, a column compared with a column,
...) becomes TRUE ("may match") and its SQL text is reported in ``Translation.not_used``; NOT is
pushed down exactly, so an untranslatable subtree under NOT is TRUE as well (never FALSE); a
comparison with a NULL constant is FALSE in both polarities. DuckDB's LIKE has no escape character
unless ESCAPE is given (that form is not translated).

Literals are evaluated by DuckDB itself (one query for all of them), so ``DATE '...'``,
``TIMESTAMPTZ '...+02'``, ``'NaN'::DOUBLE`` and ``CAST(1.55 AS DECIMAL(3,1))`` mean exactly what
they mean to DuckDB. Only constants, casts of constants and unary +/- of those are evaluated (never
``random()`` or ``now()``). The evaluating connection runs with ``TimeZone = 'UTC'``: a TIMESTAMPTZ
literal without an offset is read as UTC.

"Not used" is for valid predicates the index cannot use. One DuckDB refuses is an error,
``InvalidPredicateError`` (a ``SqlParseError`` and ``BindError``, and the DuckDB error itself): a
constant that is no value of its type where the index reads it (``d = DATE '2024-13-45'``, even
where DuckDB, filtering by another conjunct first, might not reach it), and with ``schema``, when a
part was not used, a predicate DuckDB cannot bind or evaluate on a row of NULLs (``abs(d) = 3``,
``int_col IN (1, 'abc')``).
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import functools
import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from adapters.duckdb.serialized import Class, Key, LiteralKind, Type, no_table, parse_result, select_node
from adapters.translation import Translation, walker
from hudi_expr import (
    AmbiguousColumnError,
    BindError,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    HudiExprError,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Reference,
)
from hudi_expr.binding import resolve as bind_resolve
from hudi_expr.expressions import Applied, LiteralPredicate
from hudi_expr.transforms import TRUNC_UNITS, Add, Cast, DateTrunc, Multiply, Prefix, Transform, Year
from hudi_expr.types import is_binary_like, is_string_like

__all__ = [
    "DUCKDB_MAJOR",
    "InvalidPredicateError",
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


class InvalidPredicateError(SqlParseError, BindError):
    """DuckDB refuses the predicate, as it would refuse the query: it cannot bind it against the
    table's columns (``abs(date_col) = 3``, ``date_col > 5``) or cannot evaluate a constant of it
    (``DATE '2024-13-45'``, ``int_col = 'abc'``). Each instance is also the DuckDB error DuckDB
    raised (``duckdb.BinderException``, ``duckdb.ConversionException``...), so code that catches
    DuckDB's errors catches it as it would from DuckDB alone."""


class _BinderRefusal(InvalidPredicateError, duckdb.BinderException):
    pass


class _ConversionRefusal(InvalidPredicateError, duckdb.ConversionException):
    pass


class _RangeRefusal(InvalidPredicateError, duckdb.OutOfRangeException):
    pass


REFUSALS: tuple[type[duckdb.Error], ...] = (
    duckdb.BinderException,
    duckdb.ConversionException,
    duckdb.OutOfRangeException,
)
"""DuckDB's errors that mean the predicate itself is invalid, whatever the data (a constant that is
no value of its type, a function or comparison that does not bind): other errors (an unknown
function or type, which may exist on another connection) leave the part "not used"."""


def refusal(exc: duckdb.Error, sql: str, noun: str = "predicate") -> InvalidPredicateError:
    """The error to raise for ``exc``, one of ``REFUSALS`` that DuckDB raised for ``sql`` (a
    ``noun``): DuckDB's message (its first line: the rest quotes a query the user did not write)."""
    cls: type[InvalidPredicateError]
    if isinstance(exc, duckdb.BinderException):
        cls = _BinderRefusal
    elif isinstance(exc, duckdb.OutOfRangeException):
        cls = _RangeRefusal
    else:
        cls = _ConversionRefusal
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    shown = sql if len(sql) <= 200 else sql[:100] + " ... " + sql[-60:]
    return cls(f"invalid {noun} {shown}: {first}")


def parse_predicate(
    sql: str, table_aliases: Iterable[str] = (), schema: pa.Schema | None = None
) -> Expression:
    """The ``hudi_expr`` expression of a SQL WHERE condition; untranslatable parts become TRUE.

    ``table_aliases`` names the tables a column may be qualified with: ``t.a`` is column ``a`` when
    ``t`` is one of them, otherwise a two-part name is the struct field path ``t.a``. With
    ``schema``, names resolve as DuckDB resolves them, ignoring case (``L_SHIPDATE`` is
    ``l_shipdate``); a name two columns match but for case is a ``BindError`` naming both.

    A comparison with a FLOAT or DOUBLE constant (``1e-1``, ``x::DOUBLE``, ``a / b``) is translated
    only with ``schema`` (or when the constant is NaN or infinite): DuckDB compares in that type,
    which widens a float column exactly but rounds a BIGINT or DECIMAL column, so the column's
    type decides the translation. A DECIMAL constant (``0.1``) is cast to the column's type.
    """
    return translate_sql(sql, table_aliases, schema).expr


def translate_sql(
    sql: str, table_aliases: Iterable[str] = (), schema: pa.Schema | None = None
) -> Translation:
    """Like ``parse_predicate``, and also say which parts of ``sql`` were not used (for explain).

    Raises ``SqlParseError`` when ``sql`` does not parse as one boolean expression.
    """
    if not isinstance(sql, str):
        raise TypeError(f"expected SQL text, got {type(sql).__name__}")
    aliases = {table_aliases} if isinstance(table_aliases, str) else set(table_aliases)
    query = _PREFIX + sql
    where = _parse_where(sql, query)
    nodes = Walker(query.encode(), _strip_aliases({a.lower() for a in aliases}, schema), _PREFIX_BYTES)
    if schema is not None:
        nodes.column_type = column_types(schema)
    nodes.evaluate_constants(where)
    translation = walker.translation(nodes, [where])
    if schema is not None and translation.not_used and len(aliases) <= 1:
        check_predicate(sql, schema, next(iter(aliases), None))
    return translation


_PROBE = "__hudi_predicate_probe"


def check_predicate(sql: str, schema: pa.Schema, alias: str | None = None) -> None:
    """Raise ``InvalidPredicateError`` when DuckDB refuses ``sql`` as the WHERE condition of a table
    of ``schema`` (named ``alias``): DuckDB binds it, and evaluates it on one row of NULLs, where a
    constant that is no value of its type fails as it fails on any data (``x = 'abc'`` on an
    INTEGER column). Only parts the index cannot use need this (``translate_sql`` checks when some
    part was not used): the parts it uses were bound and evaluated already."""
    try:
        row = pa.Table.from_arrays(
            [pa.nulls(1, f.type) for f in schema], schema=pa.schema([f.with_nullable(True) for f in schema])
        )
    except (pa.ArrowException, ValueError, TypeError):  # pragma: no cover - a type arrow cannot null
        return
    name = _PROBE if alias is None else alias
    query = f"SELECT count(*) FROM {_PROBE} AS {_quote_name(name)} WHERE {sql}"
    with _lock:
        con = _connection("UTC")
        try:
            con.register(_PROBE, row)
        except (duckdb.Error, pa.ArrowException, ValueError, TypeError, NotImplementedError):
            return  # a column type DuckDB does not read: its own query would say so
        try:
            con.execute(query).fetchall()
        except REFUSALS as exc:
            raise refusal(exc, sql) from None
        except duckdb.Error:
            pass  # e.g. a function of another connection (a macro): not known to be invalid
        finally:
            con.unregister(_PROBE)


def _quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _strip_aliases(aliases: set[str], schema: pa.Schema | None = None) -> Callable[[list[str]], str | None]:
    """The column path of a column reference: ``t.a`` is ``a`` when ``t`` is a table alias; with a
    schema, the path as the schema spells it (DuckDB's names ignore case)."""

    def resolve(parts: list[str]) -> str | None:
        if len(parts) > 1 and parts[0].lower() in aliases:
            parts = parts[1:]
        if not parts or not all(parts):
            return None
        path = ".".join(parts)
        if schema is None:
            return path
        try:
            return bind_resolve(schema, path, case_sensitive=False).name
        except AmbiguousColumnError:
            raise  # two columns match but for case: the user must say which
        except BindError:
            return path  # not a column of the table: binding says so, as without a schema

    return resolve


def _special(value: Any) -> bool:
    """NaN, +inf or -inf: placed the same against a column of any numeric type."""
    return isinstance(value, float) and not math.isfinite(value)


def column_types(schema: pa.Schema) -> Callable[[str], pa.DataType | None]:
    """The arrow type of a column path of ``schema`` (as ``resolve`` spells it); None if none."""

    def column_type(path: str) -> pa.DataType | None:
        try:
            return bind_resolve(schema, path).type
        except BindError:
            return None

    return column_type


def parse_expression(
    expr: duckdb.Expression, table_aliases: Iterable[str] = (), schema: pa.Schema | None = None
) -> Expression:
    """A DuckDB Python expression object (``duckdb.ColumnExpression("a") > 5``) as ``hudi_expr``."""
    return translate_expression(expr, table_aliases, schema).expr


def translate_expression(
    expr: duckdb.Expression, table_aliases: Iterable[str] = (), schema: pa.Schema | None = None
) -> Translation:
    """Translate a DuckDB Python expression object through its SQL text (``str(expr)``)."""
    if not isinstance(expr, duckdb.Expression):
        raise TypeError(f"expected a duckdb.Expression, got {type(expr).__name__}")
    return translate_sql(str(expr), table_aliases, schema)


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
    if tree.get(Key.ERROR):
        message = tree.get(Key.ERROR_MESSAGE, "syntax error")
        position = tree.get(Key.POSITION)
        where = ""
        if position is not None and str(position).isdigit():
            offset = len(query.encode()[: int(position)].decode(errors="ignore")) - len(_PREFIX)
            where = f" at character {max(offset, 0)}"
        raise SqlParseError(f"cannot parse predicate {sql!r}{where}: {message}")
    statements = tree.get(Key.STATEMENTS, [])
    node = statements[0].get(Key.NODE, {}) if len(statements) == 1 else {}
    if (
        node.get(Key.TYPE) != Type.SELECT_NODE
        or node.get(Key.MODIFIERS)
        or node.get(Key.GROUP_EXPRESSIONS)
        or node.get(Key.HAVING) is not None
        or node.get(Key.QUALIFY) is not None
        or node.get(Key.SAMPLE) is not None
        or node.get(Key.FROM_TABLE, {}).get(Key.TABLE_NAME) != "t"
        or node.get(Key.WHERE_CLAUSE) is None
    ):
        raise SqlParseError(f"not a single boolean expression: {sql!r}")
    return node[Key.WHERE_CLAUSE]


# ------------------------------------------------------------------------------------ accessors

_COMPARISONS: dict[str, type[LiteralPredicate]] = {
    "COMPARE_EQUAL": EqualTo,
    "COMPARE_NOTEQUAL": NotEqualTo,
    "COMPARE_LESSTHAN": LessThan,
    "COMPARE_LESSTHANOREQUALTO": LessThanOrEqual,
    "COMPARE_GREATERTHAN": GreaterThan,
    "COMPARE_GREATERTHANOREQUALTO": GreaterThanOrEqual,
}
_DISTINCT = {"COMPARE_DISTINCT_FROM": True, "COMPARE_NOT_DISTINCT_FROM": False}
_NULL_TESTS = {"OPERATOR_IS_NULL": True, "OPERATOR_IS_NOT_NULL": False}
COMPARISON_TYPES = frozenset(_COMPARISONS) | frozenset(_DISTINCT)  # a COMPARISON node's types

Node = dict[str, Any]


class Walker:
    """Translates WHERE trees of one query; collects the text of the parts that were not used.

    DuckDB's node accessors for ``adapters.translation.walker`` (which does the translating), and the
    evaluation of the constants in those trees. ``resolve`` maps the name parts of a column
    reference to a column path (None: not a column of the table). Text before byte ``start`` of
    ``query`` is not the user's (a wrapping prefix). Constants are evaluated in session time zone
    ``timezone``, as the query itself would be.
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
        # id(node) -> literal value (``NULL`` for NULL); absent: not a usable constant.
        self.constants: dict[int, Any] = {}
        # id(node) -> float32 or float64: the constants DuckDB types FLOAT or DOUBLE.
        self.floating: dict[int, pa.DataType] = {}
        # id(node) -> DuckDB's error for a constant that is no value of its type (DATE '2024-13-45'):
        # the query fails in DuckDB too, so ``literal`` raises it where the constant is read.
        self.invalid: dict[int, duckdb.Error] = {}
        # A column path's arrow type; None: unknown (no schema), so no constant of a floating type
        # is compared with it (how DuckDB compares one depends on that type).
        self.column_type: Callable[[str], pa.DataType | None] = lambda path: None

    # -- constants ------------------------------------------------------------------------------

    def evaluate_constants(self, root: Node | list[Node], parse: str | None = None) -> Node | None:
        """Evaluate every maximal constant subtree with DuckDB, in one query when possible.

        ``parse``: SQL text whose syntax tree (``serialize``) is returned, from the same query.
        """
        found: list[Node] = []
        constant = _constant_nodes(root)
        stack: list[Any] = [root]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if id(item) in constant:
                    value = _plain_constant(item)
                    if value is None:
                        found.append(item)
                    else:
                        self.constants[id(item)] = value
                    continue
                if item.get(Key.CLASS) in (Class.SUBQUERY, Class.TYPE):
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
                    values.append((None, None))  # not used; an error where it is read if invalid
                    invalid = _invalid_constant(node, self.timezone)  # e.g. CAST('x' AS DATE)
                    if invalid is not None:
                        self.invalid[id(node)] = invalid
        for node, (value, value_type) in zip(found, values, strict=True):
            if (
                isinstance(value, decimal.Decimal)
                and node.get(Key.LITERAL, {}).get(Key.KIND) == LiteralKind.INTEGER
            ):
                value = int(value)  # an integer literal beyond BIGINT: DuckDB types it DECIMAL(38, 0)
            if value is not None:
                self.constants[id(node)] = value
            if value_type is not None and pa.types.is_floating(value_type):
                self.floating[id(node)] = value_type
        if parse is not None and tree is None:
            tree = serialize(parse)
        return tree

    # -- translation ----------------------------------------------------------------------------

    def translate(self, node: Node, negated: bool) -> Expression:
        """The expression of ``node`` (of ``NOT node`` when ``negated``), TRUE where unknown."""
        return walker.translate(self, node, negated, self.not_used)

    def shape(self, node: Node) -> walker.Shape[Node] | None:
        """The form of a JSON syntax tree node, for ``adapters.translation.walker``."""
        if id(node) in self.constants:  # ``NOT TRUE``, ``1 = 1``: evaluated whole
            return walker.Constant(node)
        kind = node.get(Key.TYPE)
        cls = node.get(Key.CLASS)
        children = node.get(Key.CHILDREN, [])
        if kind == "CONJUNCTION_AND":
            return walker.Conjunction(children)
        if kind == "CONJUNCTION_OR":
            return walker.Disjunction(children)
        if kind == "OPERATOR_NOT" and len(children) == 1:
            return walker.Negation(children[0])
        if cls == Class.COMPARISON and kind in _COMPARISONS:
            return walker.Comparison(_COMPARISONS[kind], node[Key.LEFT], node[Key.RIGHT])
        if cls == Class.COMPARISON and kind in _DISTINCT:
            distinct = _DISTINCT[kind]
            test = self._truth_test(node[Key.LEFT], node[Key.RIGHT], distinct)
            return test or walker.DistinctFrom(node[Key.LEFT], node[Key.RIGHT], distinct=distinct)
        if kind in ("COMPARE_IN", "COMPARE_NOT_IN"):
            if len(children) < 2:
                return None
            return walker.InList(children[0], children[1:], negated=kind == "COMPARE_NOT_IN")
        if kind == "COMPARE_BETWEEN":
            return walker.Between(node[Key.INPUT], node[Key.LOWER], node[Key.UPPER])
        if kind in _NULL_TESTS and len(children) == 1:
            is_null = _NULL_TESTS[kind]
            if walker.is_predicate(self.shape(children[0])):  # (a > 5) IS NULL, not a column's
                return walker.TruthTest(children[0], "null" if is_null else "not null")
            return walker.NullTest(children[0], is_null=is_null)
        if cls == Class.FUNCTION:
            return _function(node)
        if cls == Class.COLUMN_REF:  # a boolean column: ``WHERE flag`` / ``WHERE NOT flag``
            return walker.BooleanColumn(node)
        if id(node) in self.constants:
            return walker.Constant(node)
        return None

    def _truth_test(self, left: Node, right: Node, distinct: bool) -> walker.TruthTest[Node] | None:
        """``p IS [NOT] TRUE`` (``FALSE``), which DuckDB parses as ``CAST(p AS BOOLEAN) IS [NOT]
        DISTINCT FROM TRUE`` (``FALSE``), and ``p IS [NOT] DISTINCT FROM TRUE | FALSE | NULL``, for a
        predicate ``p`` or, under that cast, a column (``flag IS TRUE``); None for anything else."""
        for operand, other in ((left, right), (right, left)):
            kind = (
                walker.truth_kind(self.constants[id(other)], distinct)
                if id(other) in self.constants
                else None
            )
            if kind is None:
                continue
            inner = _boolean_cast_child(operand)
            shape = self.shape(operand if inner is None else inner)
            if walker.is_predicate(shape) or (inner is not None and isinstance(shape, walker.BooleanColumn)):
                return walker.TruthTest(operand if inner is None else inner, kind)
        return None

    def column(self, node: Node) -> walker.Column:
        """A column reference as a column path (``resolve`` drops a table alias), or a monotonic
        function of one (``year(d)``, ``q * 2``, ``CAST(i AS BIGINT)``) as an ``Applied`` term."""
        if node.get(Key.CLASS) == Class.COLUMN_REF:
            path = self.resolve([str(p) for p in node.get(Key.COLUMN_NAMES, [])])
            if path is None:
                raise walker.Untranslatable
            return walker.Column(Reference(path))
        found = _applied(node)
        if found is None:
            raise walker.Untranslatable
        transform, operand = found
        inner = self.column(operand).ref
        try:
            return walker.Column(Applied(transform(self), inner))
        except (TypeError, ValueError):
            raise walker.Untranslatable from None  # e.g. a constant that is no number

    def compared(self, column: walker.Column, operands: Sequence[Node]) -> walker.Column:
        """The column as DuckDB compares it: with a FLOAT or DOUBLE constant among the operands, in
        that type (the widest), which widens a float column exactly and casts an integer or decimal
        column (rounding: ``bigint_col = 9007199254740992e0`` holds for 2**53 + 1). Other columns,
        functions of one and columns of unknown type are not translated."""
        kinds = [self.floating[id(node)] for node in operands if id(node) in self.floating]
        if not kinds:
            return column
        target = pa.float64() if any(pa.types.is_float64(k) for k in kinds) else pa.float32()
        ref = column.ref
        source = self.column_type(ref.name) if isinstance(ref, Reference) else None
        if source is None and all(
            _special(self.constants.get(id(node))) for node in operands if id(node) in self.floating
        ):
            return column  # NaN and the infinities compare alike in every numeric type
        if source is None or column.float_as_double:
            raise walker.Untranslatable
        if pa.types.is_float64(source) or (pa.types.is_float32(source) and target == source):
            return column
        if pa.types.is_float32(source):
            return walker.Column(ref, float_as_double=True)
        if pa.types.is_integer(source) or pa.types.is_decimal(source):
            return walker.Column(Applied(Cast(target), ref))
        raise walker.Untranslatable

    def literal(self, node: Node) -> Any:
        """The value of a constant node, as evaluated by ``evaluate_constants``; raises
        ``InvalidPredicateError`` for a constant DuckDB cannot evaluate (``DATE '2024-13-45'``)."""
        if id(node) not in self.constants:
            invalid = self.invalid.get(id(node))
            if invalid is not None:
                raise refusal(invalid, self.source_text(node), "constant")
            raise walker.Untranslatable
        return self.constants[id(node)]

    def source_text(self, node: Node) -> str:
        """The SQL text a node came from (the span of every located node inside it)."""
        start, end = _NO_LOCATION, -1
        stack: list[Any] = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                loc = item.get(Key.QUERY_LOCATION)
                if isinstance(loc, int) and self.start <= loc < _NO_LOCATION:
                    start = min(start, loc)
                    end = max(end, loc + int(item.get(Key.QUERY_LOCATION_LENGTH, 0)))
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        if end < 0:
            return str(node.get(Key.TYPE, node.get(Key.CLASS, "?")))
        # A span starts at its first located token, after the "(" of a parenthesized first operand
        # (``(a > 5) IS NULL``): take in the ones the span closes.
        for _ in range(_unopened(self.query[start:end])):
            before = len(self.query[self.start : start].rstrip())
            if before == 0 or self.query[self.start + before - 1 : self.start + before] != b"(":
                break
            start = self.start + before - 1
        return self.query[start:end].decode(errors="replace")


def _unopened(text: bytes) -> int:
    """How many ")" of ``text`` close a "(" before it (quoted strings and names skipped)."""
    depth = unopened = 0
    quote = None
    for byte in text:
        if quote is not None:
            quote = None if byte == quote else quote  # '' and "" re-enter at once: same count
        elif byte in b"'\"":
            quote = byte
        elif byte == ord("("):
            depth += 1
        elif byte == ord(")"):
            if depth:
                depth -= 1
            else:
                unopened += 1
    return unopened


def _function(node: Node) -> walker.Shape[Node] | None:
    """isnan, starts_with (prefix), contains, contains_term (``register_macros`` defines it) and LIKE
    (``~~``, NOT LIKE ``!~~``: no escape in DuckDB)."""
    if node.get(Key.SCHEMA) or node.get(Key.CATALOG) or node.get(Key.FILTER) or node.get(Key.DISTINCT):
        return None
    if any(arg.get(Key.NAME) for arg in node.get(Key.ARGUMENTS, [])):
        return None
    name = str(node.get(Key.FUNCTION_NAME, "")).lower()
    args = [arg.get(Key.EXPRESSION, {}) for arg in node.get(Key.ARGUMENTS, [])]
    if name == "isnan" and len(args) == 1:
        return walker.NanTest(args[0])
    if name in ("starts_with", "prefix") and len(args) == 2:
        return walker.PrefixTest(args[0], args[1])
    if name == "contains" and len(args) == 2:
        return walker.SubstringTest(args[0], args[1])
    if name == "contains_term" and len(args) == 2:
        return walker.TermTest(args[0], args[1])
    if name in ("~~", "!~~") and len(args) == 2:
        return walker.LikeTest(args[0], args[1], escape=None, negated=name == "!~~")
    return None


def _boolean_cast_child(node: Node) -> Node | None:
    """What ``CAST(x AS BOOLEAN)`` casts, or None when ``node`` is not such a cast."""
    target = node.get(Key.TYPE_EXPR) or {}
    if (
        node.get(Key.CLASS) != Class.CAST
        or node.get(Key.TRY_CAST)
        or str(target.get(Key.TYPE_NAME, "")).upper() != "BOOLEAN"
        or target.get(Key.CHILDREN)
        or target.get(Key.CATALOG)
        or target.get(Key.SCHEMA)
    ):
        return None
    child = node.get(Key.CHILD)
    return child if isinstance(child, dict) else None


# ---------------------------------------------------------------------------- functions of columns
# A function of one column that keeps the order of values (``hudi_expr.transforms``): the node, the
# operand that holds the column, and how to build the transform from the node's constant operands.

_YEAR_PARTS = frozenset(("year", "years", "y", "yr", "yrs"))
_TRUNC_UNITS = {**{u: u for u in TRUNC_UNITS}, **{u + "s": u for u in TRUNC_UNITS}}  # DuckDB takes plurals


def _applied(node: Node) -> tuple[Callable[[Walker], Transform], Node] | None:
    """The transform of a function-of-a-column node and the operand it applies to, or None."""
    cls = node.get(Key.CLASS)
    if cls == Class.CAST:
        target = _arrow_type(node.get(Key.TYPE_EXPR) or {})
        if node.get(Key.TRY_CAST) or target is None:
            return None
        return (lambda _w: Cast(target)), node.get(Key.CHILD) or {}
    if cls != Class.FUNCTION or node.get(Key.SCHEMA) or node.get(Key.CATALOG) or node.get(Key.FILTER):
        return None
    if node.get(Key.DISTINCT) or any(arg.get(Key.NAME) for arg in node.get(Key.ARGUMENTS, [])):
        return None
    name = str(node.get(Key.FUNCTION_NAME, "")).lower()
    args = [arg.get(Key.EXPRESSION, {}) for arg in node.get(Key.ARGUMENTS, [])]
    if name == "year" and len(args) == 1:
        return (lambda _w: Year()), args[0]
    if name in ("date_part", "datepart") and len(args) == 2:
        part = args[0]
        return (lambda w: _year_part(w.literal(part))), args[1]
    if name in ("date_trunc", "datetrunc") and len(args) == 2:
        unit = args[0]
        return (lambda w: DateTrunc(_trunc_unit(w.literal(unit)))), args[1]
    if name == "left" and len(args) == 2:
        length = args[1]
        return (lambda w: Prefix(w.literal(length))), args[0]
    if name in ("substr", "substring") and len(args) == 3:
        start, length = args[1], args[2]
        return (lambda w: _prefix_slice(w.literal(start), w.literal(length))), args[0]
    if node.get(Key.IS_OPERATOR) and name in ("+", "-", "*"):
        return _arithmetic(name, args)
    return None


def _arithmetic(name: str, args: list[Node]) -> tuple[Callable[[Walker], Transform], Node] | None:
    """``col + c``, ``c + col``, ``col - c``, ``-col``, ``col * c``, ``c * col``."""
    if name == "-" and len(args) == 1:
        return (lambda _w: Multiply(-1)), args[0]
    if len(args) != 2:
        return None
    column_first = args[1].get(Key.CLASS) == Class.CONSTANT or args[0].get(Key.CLASS) != Class.CONSTANT
    operand, constant = (args[0], args[1]) if column_first else (args[1], args[0])
    if name == "-" and not column_first:
        return None  # c - col: not written as one transform

    def build(w: Walker) -> Transform:
        c = _number(w.literal(constant))
        if name == "*":
            return Multiply(c)
        return Add(-c if name == "-" else c)

    return build, operand


def _number(value: Any) -> int | decimal.Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise ValueError(f"not an exact number: {value!r}")
    return value


def _year_part(part: Any) -> Transform:
    if not isinstance(part, str) or part.lower() not in _YEAR_PARTS:
        raise ValueError(f"date part {part!r} is not the year")  # month() wraps around: not monotonic
    return Year()


def _trunc_unit(unit: Any) -> str:
    if not isinstance(unit, str) or unit.lower() not in _TRUNC_UNITS:
        raise ValueError(f"date_trunc unit {unit!r} is not used")
    return _TRUNC_UNITS[unit.lower()]


def _prefix_slice(start: Any, length: Any) -> Transform:
    if start != 1 or isinstance(start, bool):
        raise ValueError("substr(s, start, n) is a prefix only from 1")
    return Prefix(length)


_ARROW_TYPES: dict[str, pa.DataType] = {
    **dict.fromkeys(("BIGINT", "INT8", "LONG"), pa.int64()),
    **dict.fromkeys(("INTEGER", "INT", "INT4", "SIGNED", "INT32"), pa.int32()),
    **dict.fromkeys(("SMALLINT", "INT2", "SHORT", "INT16"), pa.int16()),
    **dict.fromkeys(("TINYINT", "INT1"), pa.int8()),
    "UBIGINT": pa.uint64(),
    "UINTEGER": pa.uint32(),
    "USMALLINT": pa.uint16(),
    "UTINYINT": pa.uint8(),
    **dict.fromkeys(("DOUBLE", "FLOAT8"), pa.float64()),
    **dict.fromkeys(("FLOAT", "FLOAT4", "REAL"), pa.float32()),
    "DATE": pa.date32(),
    **dict.fromkeys(("TIMESTAMP", "DATETIME"), pa.timestamp("us")),
    "TIMESTAMP_NS": pa.timestamp("ns"),
    "TIMESTAMP_MS": pa.timestamp("ms"),
    "TIMESTAMP_S": pa.timestamp("s"),
}


def _arrow_type(type_expr: Node) -> pa.DataType | None:
    """The arrow type of a cast's target as DuckDB names it; None when it is not a plain one."""
    if type_expr.get(Key.CATALOG) or type_expr.get(Key.SCHEMA):
        return None
    name = str(type_expr.get(Key.TYPE_NAME, "")).upper()
    children = type_expr.get(Key.CHILDREN) or []
    if name in ("DECIMAL", "NUMERIC"):
        texts = [(c.get(Key.LITERAL) or {}).get(Key.TEXT) for c in children]
        if not texts:
            return pa.decimal128(18, 3)  # DuckDB's DECIMAL without a width
        params = [int(t) for t in texts if isinstance(t, str) and t.isdigit()]
        if len(params) != len(texts) or len(params) > 2:
            return None
        precision, scale = params[0], params[1] if len(params) == 2 else 0
        return pa.decimal128(precision, scale) if 0 < precision <= 38 and scale <= precision else None
    return None if children else _ARROW_TYPES.get(name)


# ------------------------------------------------------------------------------------- constants


# Node classes that are constant when everything under them is (a TYPE is a cast's target type).
_COMPOSITE = frozenset(
    (
        Class.CAST,
        Class.FUNCTION,
        Class.CASE,
        Class.COMPARISON,
        Class.CONJUNCTION,
        Class.OPERATOR,
        Class.BETWEEN,
        Class.TYPE,
    )
)


def _constant_nodes(root: Any) -> set[int]:
    """The ids of the nodes under ``root`` with no column, subquery or parameter below them and no
    function whose value can change: DuckDB evaluates such a node to one value, so it may be
    evaluated once, ahead of the scan (``x > 2 * 3``, ``DATE '1995-03-01' + INTERVAL 1 MONTH``).

    A function must be one of DuckDB's own scalar functions that are consistent (``random()``,
    ``now()`` and ``current_setting()`` are not: ``adapters.duckdb.clock`` pins the time first).
    One post-order pass, without recursion: 10,000-deep trees cost linear time.
    """
    functions = consistent_functions()
    constant: set[int] = set()
    # (node, its child expressions once expanded)
    stack: list[tuple[Node, list[Node] | None]] = [(root, None)] if isinstance(root, dict) else []
    if isinstance(root, list):
        stack = [(item, None) for item in root if isinstance(item, dict)]
    while stack:
        node, children = stack.pop()
        if children is None:
            children = _child_expressions(node)
            stack.append((node, children))
            stack.extend((child, None) for child in children)
            continue
        cls = node.get(Key.CLASS)
        if cls == Class.CONSTANT or (
            cls in _COMPOSITE
            and all(id(child) in constant for child in children)
            and (cls != Class.FUNCTION or _consistent_call(node, functions))
        ):
            constant.add(id(node))
    return constant


def _child_expressions(node: Node) -> list[Node]:
    """The expression nodes directly under ``node`` (through argument and CASE wrappers)."""
    out: list[Node] = []
    stack: list[Any] = [v for k, v in node.items() if k != Key.QUALIFIED_NAME]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if Key.CLASS in item:
                out.append(item)
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return out


def _consistent_call(node: Node, functions: frozenset[str]) -> bool:
    if node.get(Key.SCHEMA) or node.get(Key.CATALOG) or node.get(Key.FILTER) or node.get(Key.DISTINCT):
        return False
    if node.get(Key.EXPORT_STATE) or (node.get(Key.ORDER_BYS) or {}).get(Key.ORDERS):
        return False
    return str(node.get(Key.FUNCTION_NAME, "")).lower() in functions


@functools.cache
def consistent_functions() -> frozenset[str]:
    """Names of DuckDB's scalar functions whose value depends on their arguments alone (its
    ``stability`` says CONSISTENT) and that are nothing else too (not also an aggregate or macro)."""
    rows = _run(
        "SELECT function_name FROM duckdb_functions() GROUP BY function_name "
        "HAVING bool_and(function_type = 'scalar' AND stability = 'CONSISTENT')",
        [],
    )
    return frozenset(str(name).lower() for name in rows.column(0).to_pylist())


def _plain_constant(node: dict[str, Any]) -> Any:
    """The value of a plain integer, short decimal, string, boolean or NULL constant, or of
    ``DATE 'yyyy-mm-dd'``; ``None``: ask DuckDB (a round trip costs more than the rest of a plan)."""
    if node.get(Key.CLASS) == Class.CAST:
        return _iso_date(node)
    if node.get(Key.CLASS) != Class.CONSTANT:
        return None
    literal = node.get(Key.LITERAL) or {}
    kind, text = literal.get(Key.KIND), literal.get(Key.TEXT)
    if not isinstance(text, str):
        return None
    if kind == LiteralKind.STRING:
        return text
    if kind == LiteralKind.NULL:
        return walker.NULL
    if kind == LiteralKind.BOOLEAN and text in ("true", "false"):
        return text == "true"
    if kind == LiteralKind.INTEGER and text.lstrip("-").isdigit():
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
    child = node.get(Key.CHILD) or {}
    target = node.get(Key.TYPE_EXPR) or {}
    text = (child.get(Key.LITERAL) or {}).get(Key.TEXT)
    if (
        node.get(Key.TRY_CAST)
        or child.get(Key.CLASS) != Class.CONSTANT
        or (child.get(Key.LITERAL) or {}).get(Key.KIND) != LiteralKind.STRING
        or str(target.get(Key.TYPE_NAME, "")).upper() != "DATE"
        or target.get(Key.CHILDREN)
        or target.get(Key.CATALOG)
        or target.get(Key.SCHEMA)
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
    nodes: list[dict[str, Any]], timezone: str = "UTC", parse: str | None = None, as_text: bool = False
) -> tuple[list[tuple[Any, pa.DataType]], dict[str, Any] | None]:
    """Evaluate constant nodes in one ``SELECT``; each value as a literal (``walker.NULL`` for NULL)
    with its DuckDB type in arrow's terms.

    With ``parse``, the syntax tree of that SQL text comes back from the same query (a round trip
    to DuckDB costs more than either). ``as_text``: run the statement as SQL text, which raises
    DuckDB's own error class (``json_execute_serialized_sql`` reports any as InvalidInputException).
    """
    statement = _select_statement(nodes)
    tree = None
    if is_utc(timezone) and not as_text:
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
    return [(_to_literal(column[0]), column.type) for column in table.columns], tree


def _select_statement(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON syntax tree of ``SELECT <nodes>``, without FROM."""
    return parse_result(select_node(nodes, no_table(), None))


# Texts DuckDB wrote from serialized statements (a function of the JSON alone), by that JSON.
_WRITTEN: dict[str, str | None] = {}
_WRITTEN_KEPT = 256
_WRITTEN_KEPT_CHARS = 1 << 16  # larger statements are written again each time


def select_text(nodes: list[dict[str, Any]]) -> str | None:
    """``SELECT <nodes>`` as SQL text, written by DuckDB from the syntax tree nodes (a ``FROM``
    clause may be appended); None when DuckDB cannot write it. The text of a statement written
    before is reused (a repeated query's conjuncts cost no round trip)."""
    statement = json.dumps(_select_statement(nodes))
    with contextlib.suppress(KeyError):  # another thread may drop it meanwhile: written again
        return _WRITTEN[statement]
    try:
        text = _run("SELECT json_deserialize_sql(?)", [statement])
    except duckdb.Error:
        value = None
    else:
        value = text.column(0)[0].as_py()
    written = value if isinstance(value, str) else None
    if len(statement) > _WRITTEN_KEPT_CHARS:
        return written
    with _lock:
        if len(_WRITTEN) >= _WRITTEN_KEPT:
            _WRITTEN.pop(next(iter(_WRITTEN)), None)
        _WRITTEN[statement] = written
    return written


def _invalid_constant(node: dict[str, Any], timezone: str) -> duckdb.Error | None:
    """DuckDB's error for a constant that does not evaluate, when it is one of ``REFUSALS`` (no value
    of its type: ``DATE '2024-13-45'``); None for others (an unknown function or type)."""
    try:
        _evaluate([node], timezone, as_text=True)
    except REFUSALS as exc:
        return exc
    except duckdb.Error:
        return None
    return None  # pragma: no cover - it failed a moment ago


def _to_literal(scalar: pa.Scalar) -> Any:
    """A DuckDB-typed scalar as a ``hudi_expr`` literal; ``None`` when it has no literal form."""
    t = scalar.type
    if not scalar.is_valid:
        return walker.NULL
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
        or is_string_like(t)
        or is_binary_like(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
    ):
        return scalar.as_py()
    return None
