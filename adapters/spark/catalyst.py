"""Catalyst expressions (through py4j) -> ``hudi_expr`` expressions.

A Column is resolved and optimized by Spark itself (against an empty DataFrame of the table's
schema), a DataFrame's filters are read from its optimized plan, so Spark has already folded
constants, parsed SQL text literals in the session time zone and unwrapped casts it could; this
module only walks the result.

Soundness, as in ``adapters.duckdb.parse``: a subtree that cannot be translated (a function of a
column, arithmetic, a UDF, a column compared with a column, a non-binary string collation, ...)
becomes TRUE and its SQL text is reported in ``Translation.not_used``. NOT is pushed down while
walking, so an untranslatable subtree under NOT is TRUE too, and a translated comparison is negated
exactly under three-valued logic. A comparison with a NULL literal is FALSE in both polarities.

Spark's float semantics are the ones ``hudi_expr`` assumes (NaN = NaN, NaN above +inf, -0.0 = 0.0),
so ``d > 5`` keeps files that may hold NaN without rewriting here. Timestamp literals are UTC
microseconds inside Catalyst whatever the session time zone (it only decided how SQL text was
read): TIMESTAMP becomes an aware UTC ``datetime``, TIMESTAMP_NTZ a naive one.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from adapters.translation import Translation
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    And,
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
)

__all__ = [
    "FileScan",
    "Translation",
    "file_scan",
    "translate_column",
    "translate_expression",
    "translate_plan",
]

JavaObject = Any  # a py4j proxy of a JVM object


# ------------------------------------------------------------------------------------ public API


def translate_column(spark: SparkSession, column: Column, schema: StructType) -> Translation:
    """Translate a boolean ``Column`` resolved against ``schema`` (SQL text: pass ``F.expr(sql)``).

    The column filters an empty DataFrame of ``schema`` and every Filter of the optimized plan is
    read back (Spark may split off Python UDFs). A condition Spark folds to FALSE or NULL leaves an
    empty relation: FALSE.
    """
    base = _empty_frame(spark, schema)
    plan = base.filter(column)._jdf.queryExecution().optimizedPlan()
    path = _single_leaf_path(plan)
    if path is None:
        return Translation(AlwaysTrue(), (str(plan.toString()),))
    if class_name(path[-1]) == "LocalRelation":
        return Translation(AlwaysFalse(), ())  # the condition is never TRUE
    ids = frozenset(int(a.exprId().id()) for a in _seq(path[-1].output()))
    walker = _Walker(ids)
    parts = [walker.translate(node.condition()) for node in path if class_name(node) == "Filter"]
    return Translation(And(*parts), tuple(dict.fromkeys(walker.not_used)))


def _empty_frame(spark: SparkSession, schema: StructType) -> DataFrame:
    """An empty DataFrame of ``schema`` that the optimizer cannot see is empty (an RDD scan)."""
    key = (id(spark), schema.json())
    frame = _EMPTY_FRAMES.get(key)
    if frame is None or frame.sparkSession is not spark:
        frame = _EMPTY_FRAMES[key] = spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)
    return frame


_EMPTY_FRAMES: dict[tuple[int, str], DataFrame] = {}


def translate_plan(df: DataFrame) -> Translation:
    """Translate the row filters a DataFrame applies right above its one parquet file scan.

    Filters directly above the scan (through Projects) and the scan's partition and data
    filters count; a plan without exactly one file scan leaf translates to TRUE.
    """
    scan = file_scan(df)
    if scan is None:
        return Translation(AlwaysTrue(), ("the plan does not read exactly one file relation",))
    walker = _Walker(scan.attribute_ids)
    parts = [walker.translate(c) for c in (*scan.conditions, *scan.scan_filters)]
    return Translation(And(*parts), tuple(dict.fromkeys(walker.not_used)))


def translate_expression(node: JavaObject, attribute_ids: frozenset[int] | None = None) -> Translation:
    """Translate one resolved Catalyst expression; ``attribute_ids`` limits the usable columns
    to those attributes (exprIds of the scanned relation), None allows every attribute."""
    walker = _Walker(attribute_ids)
    expr = walker.translate(node)
    return Translation(expr, tuple(dict.fromkeys(walker.not_used)))


# ------------------------------------------------------------------------------------ plan shape


@dataclass(frozen=True)
class FileScan:
    """The file relation at the bottom of a plan and the filters right above it.

    ``chain`` is the Project/Filter nodes from the top of that chain down to ``relation``
    (``top_is_root``: the chain starts at the plan's root, so the plan is just this chain).
    """

    relation: JavaObject  # the LogicalRelation
    chain: tuple[JavaObject, ...]
    conditions: tuple[JavaObject, ...]
    scan_filters: tuple[JavaObject, ...]
    attribute_ids: frozenset[int]
    top_is_root: bool


def file_scan(df: DataFrame) -> FileScan | None:
    """The one ``HadoopFsRelation`` leaf of ``df``'s optimized plan and the filters above it."""
    plan = df._jdf.queryExecution().optimizedPlan()
    path = _single_leaf_path(plan)
    if path is None or class_name(path[-1]) != "LogicalRelation":
        return None
    relation = path[-1]
    if class_name(relation.relation()) != "HadoopFsRelation":
        return None
    chain: list[JavaObject] = []
    for node in reversed(path[:-1]):
        if class_name(node) not in _ROW_WISE:
            break
        chain.append(node)
    chain.reverse()
    conditions = tuple(node.condition() for node in chain if class_name(node) == "Filter")
    ids = frozenset(int(a.exprId().id()) for a in _seq(relation.output()))
    return FileScan(
        relation,
        tuple(chain),
        conditions,
        _scan_filters(df),
        ids,
        top_is_root=len(chain) == len(path) - 1,
    )


# Plan nodes that map each input row to at most one output row with the same column values.
_ROW_WISE = ("Filter", "Project", "BatchEvalPython", "ArrowEvalPython")


def _single_leaf_path(plan: JavaObject) -> list[JavaObject] | None:
    """Root-to-leaf nodes when every node has at most one child, else None."""
    path = [plan]
    while True:
        children = _seq(path[-1].children())
        if not children:
            return path
        if len(children) > 1:
            return None
        path.append(children[0])


def _scan_filters(df: DataFrame) -> tuple[JavaObject, ...]:
    """Partition and data filters of the physical file scan, when planning finds one."""
    try:
        plan = df._jdf.queryExecution().sparkPlan()
    except Exception:  # planning errors surface when the query runs, not while pruning
        return ()
    stack = [plan]
    while stack:
        node = stack.pop()
        if class_name(node) == "FileSourceScanExec":
            return (*_seq(node.partitionFilters()), *_seq(node.dataFilters()))
        stack.extend(_seq(node.children()))
    return ()


# ---------------------------------------------------------------------------------------- walker


class _Untranslatable(Exception):
    """Raised inside the walker for a subtree that must become TRUE."""


class _Null:
    """The value of a NULL literal."""


_NULL = _Null()

# ``5 < a`` is ``a > 5``.
_FLIPPED = {
    "EqualTo": "EqualTo",
    "EqualNullSafe": "EqualNullSafe",
    "LessThan": "GreaterThan",
    "LessThanOrEqual": "GreaterThanOrEqual",
    "GreaterThan": "LessThan",
    "GreaterThanOrEqual": "LessThanOrEqual",
}
# Each comparison and its exact three-valued negation (Spark orders NaN too, so NOT a < v is a >= v).
_COMPARISONS: dict[str, tuple[type[Expression], type[Expression]]] = {
    "EqualTo": (EqualTo, NotEqualTo),
    "LessThan": (LessThan, GreaterThanOrEqual),
    "LessThanOrEqual": (LessThanOrEqual, GreaterThan),
    "GreaterThan": (GreaterThan, LessThanOrEqual),
    "GreaterThanOrEqual": (GreaterThanOrEqual, LessThan),
}


@dataclass(frozen=True)
class _Term:
    """A column path and, when reached through a widening cast, whether it is float -> double."""

    ref: Reference
    float_to_double: bool = False


class _Walker:
    """Translates Catalyst trees; collects the SQL text of the parts that were not used."""

    def __init__(self, attribute_ids: frozenset[int] | None = None) -> None:
        self.attribute_ids = attribute_ids
        self.not_used: list[str] = []

    def translate(self, node: JavaObject, negated: bool = False) -> Expression:
        """The expression of ``node`` (of ``NOT node`` when ``negated``), TRUE where unknown."""
        # An explicit stack: a 10,000-term AND chain must not hit Python's recursion limit.
        results: list[Expression] = []
        stack: list[tuple[JavaObject, bool, bool]] = [(node, negated, False)]
        while stack:
            item, neg, expanded = stack.pop()
            kind = class_name(item)
            if kind in ("And", "Or"):
                if not expanded:
                    stack.append((item, neg, True))
                    stack.append((item.right(), neg, False))
                    stack.append((item.left(), neg, False))
                    continue
                right, left = results.pop(), results.pop()
                is_and = (kind == "And") != neg  # De Morgan under NOT
                results.append(And(left, right) if is_and else Or(left, right))
            elif kind == "Not":
                stack.append((item.child(), not neg, False))
            else:
                try:
                    results.append(self._leaf(kind, item, neg))
                except _Untranslatable:
                    self.not_used.append(_sql(item))
                    results.append(AlwaysTrue())
        return results[0]

    def _leaf(self, kind: str, node: JavaObject, neg: bool) -> Expression:
        if kind in _FLIPPED:
            return self._comparison(kind, node.left(), node.right(), neg)
        if kind == "In":
            items = _seq(node.list())
            return self._in(node.value(), [_literal(i) for i in items], neg)
        if kind == "InSet":
            return self._in(node.child(), [_value(v, node.child().dataType()) for v in _set(node)], neg)
        if kind in ("IsNull", "IsNotNull"):
            term = self._term(node.child())
            return IsNull(term.ref) if (kind == "IsNull") != neg else IsNotNull(term.ref)
        if kind == "IsNaN":
            leaf = IsNaN(self._term(node.child()).ref)  # isnan(NULL) is FALSE: NOT isnan keeps NULL
            return ~leaf if neg else leaf
        if kind == "StartsWith":
            term = self._term(node.left())
            prefix = _literal(node.right())
            if prefix is _NULL:
                return AlwaysFalse()
            if not isinstance(prefix, str) or term.float_to_double:
                raise _Untranslatable
            starts = StartsWith(term.ref, prefix)
            return ~starts if neg else starts
        if kind == "Like":
            like = _like(self._term(node.left()), _literal(node.right()), str(node.escapeChar()))
            return ~like if neg else like
        if kind == "Literal":
            value = _literal(node)
            if value is _NULL:
                return AlwaysFalse()  # WHERE NULL and WHERE NOT NULL keep no row
            if isinstance(value, bool):
                return AlwaysTrue() if value != neg else AlwaysFalse()
            raise _Untranslatable
        if _type_sql(node) == "BOOLEAN":  # a boolean column: ``WHERE flag`` / ``WHERE NOT flag``
            return EqualTo(self._term(node).ref, not neg)
        raise _Untranslatable

    def _comparison(self, kind: str, left: JavaObject, right: JavaObject, neg: bool) -> Expression:
        if class_name(left) == "Literal" or left.foldable():
            left, right, kind = right, left, _FLIPPED[kind]
        term = self._term(left)
        value = _literal(right)
        if kind == "EqualNullSafe":
            # <=> is never NULL: its negation is "distinct from", which NULL rows satisfy.
            if value is _NULL:
                return IsNotNull(term.ref) if neg else IsNull(term.ref)
            if neg:
                return Or(_compare(NotEqualTo, term, value), IsNull(term.ref))
            return _compare(EqualTo, term, value)
        if value is _NULL:
            return AlwaysFalse()  # NULL, and NOT NULL is NULL too
        positive, negative = _COMPARISONS[kind]
        return _compare(negative if neg else positive, term, value)

    def _in(self, child: JavaObject, values: list[Any], neg: bool) -> Expression:
        term = self._term(child)
        kept = [v for v in values if v is not _NULL]
        if neg and len(kept) < len(values):
            return AlwaysFalse()  # a NOT IN (.., NULL) is never TRUE
        if term.float_to_double:
            # A double no float equals is never matched (and NOT IN is TRUE for it): drop it.
            kept = [float(v) for v in kept if _float32_exact(v)]
        expr = In(term.ref, kept)
        return ~expr if neg else expr

    def _term(self, node: JavaObject) -> _Term:
        """The column path of an attribute, a struct field of one, or a widening cast of those."""
        kind = class_name(node)
        if not _plain_type(node):
            raise _Untranslatable  # collated strings do not compare as UTF-8 bytes
        if kind == "Cast":
            return _widened(self._term(node.child()), node.child().dataType(), node.dataType())
        if kind == "AttributeReference":
            if self.attribute_ids is not None and int(node.exprId().id()) not in self.attribute_ids:
                raise _Untranslatable  # not a column of the scanned relation (an alias, say)
            return _Term(Reference(str(node.name())))
        if kind == "GetStructField":
            parent = self._term(node.child())
            if parent.float_to_double:
                raise _Untranslatable
            return _Term(Reference(f"{parent.ref.name}.{node.extractFieldName()}"))
        raise _Untranslatable


def _like(term: _Term, pattern: Any, escape: str) -> Expression:
    """``LIKE pattern`` when it is an equality or a prefix test, else untranslatable."""
    if pattern is _NULL or not isinstance(pattern, str) or term.float_to_double:
        raise _Untranslatable  # NULL patterns are folded by Spark before they get here
    text, chars = [], iter(pattern)
    for ch in chars:
        if ch == escape:
            nxt = next(chars, None)
            if nxt is None:
                raise _Untranslatable  # Spark rejects a trailing escape at run time
            text.append(nxt)
        elif ch == "_" or (ch == "%" and any(c != "%" for c in chars)):
            raise _Untranslatable  # a wildcard before the end
        elif ch == "%":
            prefix = "".join(text)
            return StartsWith(term.ref, prefix) if prefix else IsNotNull(term.ref)
        else:
            text.append(ch)
    return EqualTo(term.ref, "".join(text))


# ----------------------------------------------------------------------------------------- casts

_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_INTEGER_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_FLOAT_MANTISSA = {"FLOAT": 24, "DOUBLE": 53}


def _widened(term: _Term, source: JavaObject, target: JavaObject) -> _Term:
    """``term`` seen through a cast that is exact and order-preserving, else untranslatable.

    Integer -> wider integer, integer -> float/double/decimal that holds every value exactly, and
    float -> double. Only float -> double changes how literals must be read (see ``_compare``).
    """
    src, dst = source.sql(), target.sql()
    if term.float_to_double:
        raise _Untranslatable
    if src in _INTEGER_BITS:
        if dst in _INTEGER_BITS and _INTEGER_BITS[dst] >= _INTEGER_BITS[src]:
            return term
        if dst in _FLOAT_MANTISSA and _FLOAT_MANTISSA[dst] > _INTEGER_BITS[src]:
            return term  # every value fits the mantissa: the cast is exact
        if (
            class_name(target) == "DecimalType"
            and target.precision() - target.scale() >= _INTEGER_DIGITS[src]
        ):
            return term
    if src == "FLOAT" and dst == "DOUBLE":
        return _Term(term.ref, float_to_double=True)
    if src == dst:
        return term
    raise _Untranslatable


def _float32_exact(value: Any) -> bool:
    """Whether a double equals some float32 (NaN does: Spark's NaN = NaN)."""
    if not isinstance(value, float):
        return False
    with np.errstate(over="ignore"):  # beyond the float range: inf, which differs from value
        return value != value or float(np.float32(value)) == value


def _compare(op: type[Expression], term: _Term, value: Any) -> Expression:
    """``op(column, value)``, reading a double literal against a float column cast to double.

    ``hudi_expr`` rounds a literal to the column's precision (DuckDB's way); Spark compares the
    widened float with the exact double, so a double between two floats must be placed here.
    """
    if not term.float_to_double or not isinstance(value, float) or _float32_exact(value):
        return op(term.ref, value)  # type: ignore[call-arg]
    with np.errstate(over="ignore"):
        near = np.float32(value)
        if float(near) < value:
            low, high = near, np.nextafter(near, np.float32(np.inf))
        else:
            low, high = np.nextafter(near, np.float32(-np.inf)), near
    if op is EqualTo:
        return AlwaysFalse()  # no float equals it
    if op is NotEqualTo:
        return IsNotNull(term.ref)  # every float differs from it
    if op in (LessThan, LessThanOrEqual):
        return LessThanOrEqual(term.ref, float(low))
    return GreaterThanOrEqual(term.ref, float(high))


# -------------------------------------------------------------------------------------- literals

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _literal(node: JavaObject) -> Any:
    """The Python value of a Catalyst constant (``_NULL`` for NULL); others are untranslatable."""
    if class_name(node) == "Literal":
        return _value(node.value(), node.dataType())
    if node.foldable() and node.deterministic():  # a constant Spark has not folded yet (analyzed)
        try:
            value = node.eval(None)
        except Exception:  # e.g. an ANSI cast error: leave the comparison unused
            raise _Untranslatable from None
        return _value(value, node.dataType())
    raise _Untranslatable


def _value(value: Any, data_type: JavaObject) -> Any:
    """A Catalyst internal value of ``data_type`` as a ``hudi_expr`` literal."""
    if value is None:
        return _NULL
    kind = data_type.sql()
    try:
        if kind == "STRING":
            return str(value.toString())  # UTF8String
        if kind == "BINARY":
            return bytes(value)
        if kind == "BOOLEAN":
            return bool(value)
        if kind in _INTEGER_BITS:
            return int(value)
        if kind in _FLOAT_MANTISSA:
            return float(value)
        if kind.startswith("DECIMAL"):
            return _decimal(value, int(data_type.scale()))
        if kind == "DATE":
            return _EPOCH_DATE + dt.timedelta(days=int(value))
        if kind == "TIMESTAMP":
            return _EPOCH + dt.timedelta(microseconds=int(value))  # UTC micros, any session zone
        if kind == "TIMESTAMP_NTZ":
            return _EPOCH_NTZ + dt.timedelta(microseconds=int(value))
    except OverflowError:
        raise _Untranslatable from None  # a year Python cannot hold
    raise _Untranslatable


def _decimal(value: JavaObject, scale: int) -> decimal.Decimal:
    """A Spark ``Decimal`` exactly, with the scale of its type (``1.50``, not ``1.5``)."""
    big = value.toJavaBigDecimal()  # py4j turns a java.math.BigDecimal into a decimal.Decimal
    exact = big if isinstance(big, decimal.Decimal) else decimal.Decimal(str(big.toPlainString()))
    return exact.quantize(decimal.Decimal(1).scaleb(-scale), context=decimal.Context(prec=100))


# ----------------------------------------------------------------------------------- py4j access


def class_name(node: JavaObject) -> str:
    """The simple class name of a JVM object (``Filter``, ``GreaterThan``, ...)."""
    return str(node.getClass().getSimpleName())


def _sql(node: JavaObject) -> str:
    try:
        return str(node.sql())
    except Exception:  # some expressions (Python UDFs, subqueries) have no SQL form
        return str(node.toString())


def _type_sql(node: JavaObject) -> str:
    try:
        return str(node.dataType().sql())
    except Exception:  # unresolved or typeless expressions
        return ""


def _plain_type(node: JavaObject) -> bool:
    """Strings with a collation other than UTF8_BINARY do not compare the way the index does."""
    kind = _type_sql(node)
    return bool(kind) and "COLLATE" not in kind


def _seq(seq: JavaObject) -> list[JavaObject]:
    """A Scala ``Seq`` as a Python list."""
    return [seq.apply(i) for i in range(seq.size())]


def _set(node: JavaObject) -> Iterator[Any]:
    """The values of an ``InSet`` (a Scala ``Set``)."""
    it = node.hset().iterator()
    while it.hasNext():
        yield it.next()
