"""Catalyst expressions (through py4j) -> ``hudi_expr`` expressions.

A Column is resolved and optimized by Spark itself (against an empty DataFrame of the table's
schema), a DataFrame's filters are read from its optimized plan, so Spark has already folded
constants, parsed SQL text literals in the session time zone and unwrapped casts it could; the
result is translated by ``adapters.translation.walker`` through this module's node accessors (``_Nodes``).

Soundness is the walker's (see ``adapters.translation.walker``): a subtree that cannot be translated
(a function of a column, arithmetic, a UDF, a column compared with a column, a non-binary string
collation, ...) becomes TRUE and its SQL text is reported in ``Translation.not_used``; NOT is pushed
down exactly, so an untranslatable subtree under NOT is TRUE too; a comparison with a NULL literal
is FALSE in both polarities. A float column widened to double is marked ``float_as_double``, and the
walker places double literals between floats as Spark compares them.

Spark's float semantics are the ones ``hudi_expr`` assumes (NaN = NaN, NaN above +inf, -0.0 = 0.0),
so ``d > 5`` keeps files that may hold NaN without rewriting here. Timestamp literals are UTC
microseconds inside Catalyst whatever the session time zone (it only decided how SQL text was
read): TIMESTAMP becomes an aware UTC ``datetime``, TIMESTAMP_NTZ a naive one.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from adapters.translation import Translation, walker
from hudi_expr import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    Reference,
)
from hudi_expr.expressions import Applied, LiteralPredicate
from hudi_expr.transforms import Add, Cast, DateTrunc, Multiply, Prefix, Transform, Year

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
    names = {int(a.exprId().id()): str(a.name()) for a in _seq(path[-1].output())}
    conditions = [node.condition() for node in path if class_name(node) == "Filter"]
    return walker.translation(_Nodes(frozenset(names), names), conditions)


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
    names = {int(a.exprId().id()): str(a.name()) for a in _seq(scan.relation.output())}
    return walker.translation(_Nodes(scan.attribute_ids, names), (*scan.conditions, *scan.scan_filters))


def translate_expression(node: JavaObject, attribute_ids: frozenset[int] | None = None) -> Translation:
    """Translate one resolved Catalyst expression; ``attribute_ids`` limits the usable columns
    to those attributes (exprIds of the scanned relation), None allows every attribute."""
    return walker.translation(_Nodes(attribute_ids), [node])


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


# ------------------------------------------------------------------------------------ accessors

# Each comparison and its exact three-valued negation (Spark orders NaN too, so NOT a < v is a >= v).
_COMPARISONS: dict[str, tuple[type[LiteralPredicate], type[LiteralPredicate]]] = {
    "EqualTo": (EqualTo, NotEqualTo),
    "LessThan": (LessThan, GreaterThanOrEqual),
    "LessThanOrEqual": (LessThanOrEqual, GreaterThan),
    "GreaterThan": (GreaterThan, LessThanOrEqual),
    "GreaterThanOrEqual": (GreaterThanOrEqual, LessThan),
}


@dataclass(frozen=True)
class _SetValue:
    """One value of an ``InSet`` (a Catalyst internal value, not a node) and its type."""

    value: Any
    data_type: JavaObject


class _Nodes:
    """Catalyst's node accessors for ``adapters.translation.walker``; ``attribute_ids`` limits the usable
    columns to those attributes (exprIds of the scanned relation), None allows every attribute."""

    def __init__(
        self, attribute_ids: frozenset[int] | None = None, names: dict[int, str] | None = None
    ) -> None:
        self.attribute_ids = attribute_ids
        # exprId -> the relation's own column name: Spark resolved the attribute, perhaps ignoring
        # case (spark.sql.caseSensitive=false) while keeping the query's spelling in its name.
        self.names = names or {}

    def shape(self, node: JavaObject) -> walker.Shape[JavaObject] | None:
        """The form of a Catalyst expression, for ``adapters.translation.walker``."""
        kind = class_name(node)
        if kind == "And":
            return walker.Conjunction((node.left(), node.right()))
        if kind == "Or":
            return walker.Disjunction((node.left(), node.right()))
        if kind == "Not":
            return walker.Negation(node.child())
        if kind in _COMPARISONS:
            op, negation = _COMPARISONS[kind]
            return walker.Comparison(op, node.left(), node.right(), negation)
        if kind == "EqualNullSafe":  # <=>, and p IS TRUE (FALSE) as p <=> true (false)
            test = self._truth_test(node.left(), node.right())
            return test or walker.DistinctFrom(node.left(), node.right(), distinct=False)
        if kind == "In":
            return walker.InList(node.value(), _seq(node.list()))
        if kind == "InSet":
            data_type = node.child().dataType()
            return walker.InList(node.child(), [_SetValue(v, data_type) for v in _set(node)])
        if kind in ("IsNull", "IsNotNull"):
            child, is_null = node.child(), kind == "IsNull"
            if walker.is_predicate(self.shape(child)):  # (i > 5 AND s = 'a') IS NULL, not a column's
                return walker.TruthTest(child, "null" if is_null else "not null")
            return walker.NullTest(child, is_null=is_null)
        if kind == "IsNaN":  # isnan(NULL) is FALSE: NOT isnan keeps NULL
            return walker.NanTest(node.child())
        if kind == "StartsWith":
            return walker.PrefixTest(node.left(), node.right())
        if kind == "Contains":  # contains(s, 'x'), and LIKE '%x%' as the optimizer rewrites it
            return walker.SubstringTest(node.left(), node.right())
        if kind == "Like":
            return walker.LikeTest(node.left(), node.right(), escape=str(node.escapeChar()))
        if kind == "Literal":
            return walker.Constant(node)
        if _type_sql(node) == "BOOLEAN":  # a boolean column: ``WHERE flag`` / ``WHERE NOT flag``
            return walker.BooleanColumn(node)
        return None

    def _truth_test(self, left: JavaObject, right: JavaObject) -> walker.TruthTest[JavaObject] | None:
        """``p <=> true | false | NULL`` of a predicate ``p``: ``p IS TRUE | FALSE | NULL`` (Spark
        parses ``p IS NOT TRUE`` as ``NOT (p <=> true)``); None for anything else."""
        for operand, other in ((left, right), (right, left)):
            try:
                kind = walker.truth_kind(_literal(other), distinct=False)
            except walker.Untranslatable:
                continue
            if kind is not None and walker.is_predicate(self.shape(operand)):
                return walker.TruthTest(operand, kind)
        return None

    def column(self, node: JavaObject) -> walker.Column:
        """The column path of an attribute, a struct field of one, a widening cast of those, or a
        monotonic function of one (``year(d)``, ``q * 2`` under ANSI mode) as an ``Applied`` term."""
        kind = class_name(node)
        if not _plain_type(node):
            raise walker.Untranslatable  # collated strings do not compare as UTF-8 bytes
        if kind == "Cast":
            try:
                return _widened(self.column(node.child()), node.child().dataType(), node.dataType())
            except walker.Untranslatable:
                pass  # not exact: perhaps order-preserving all the same (decimal -> double)
        found = _applied(node)
        if found is not None:
            build, operand = found
            inner = self.column(operand)
            if inner.float_as_double:
                raise walker.Untranslatable
            try:
                return walker.Column(Applied(build(), inner.ref))
            except (TypeError, ValueError):
                raise walker.Untranslatable from None
        if kind == "AttributeReference":
            if self.attribute_ids is not None and int(node.exprId().id()) not in self.attribute_ids:
                raise walker.Untranslatable  # not a column of the scanned relation (an alias, say)
            name = self.names.get(int(node.exprId().id())) or str(node.name())
            return walker.Column(Reference(name))
        if kind == "GetStructField":
            parent = self.column(node.child())
            if parent.float_as_double:
                raise walker.Untranslatable
            return walker.Column(Reference(f"{parent.ref.name}.{node.extractFieldName()}"))
        raise walker.Untranslatable

    def compared(self, column: walker.Column, operands: Sequence[JavaObject]) -> walker.Column:
        """The column unchanged: Catalyst's analyzed plan spells out every widening as a ``Cast``."""
        return column

    def literal(self, node: JavaObject) -> Any:
        """The Python value of a Catalyst constant (``walker.NULL`` for NULL)."""
        if isinstance(node, _SetValue):
            return _value(node.value, node.data_type)
        return _literal(node)

    def source_text(self, node: JavaObject) -> str:
        """The SQL text of an expression (its string form when it has none)."""
        try:
            return str(node.sql())
        except Exception:  # some expressions (Python UDFs, subqueries) have no SQL form
            return str(node.toString())


# ---------------------------------------------------------------------------- functions of columns

_TRUNC_FORMATS = {
    **dict.fromkeys(("YEAR", "YYYY", "YY"), "year"),
    "QUARTER": "quarter",
    **dict.fromkeys(("MONTH", "MON", "MM"), "month"),
    "WEEK": "week",
    **dict.fromkeys(("DAY", "DD"), "day"),
    "HOUR": "hour",
    "MINUTE": "minute",
    "SECOND": "second",
}
_ARITHMETIC = {"Add": 1, "Subtract": -1, "Multiply": 0}


def _applied(node: JavaObject) -> tuple[Callable[[], Transform], JavaObject] | None:
    """A monotonic function of one operand (``hudi_expr.transforms``) and that operand, or None.

    Arithmetic counts only in ANSI mode (``spark.sql.ansi.enabled``): otherwise Spark wraps around
    on overflow, which keeps no order.
    """
    kind = class_name(node)
    if kind == "Year":
        return Year, node.child()
    if kind in ("TruncDate", "TruncTimestamp"):
        operand = node.date() if kind == "TruncDate" else node.timestamp()
        unit = _TRUNC_FORMATS.get(str(_constant(node.format())).upper())
        if unit is None or str(operand.dataType().sql()) == "TIMESTAMP":
            return None  # a TIMESTAMP (with local time zone) truncates in the session's zone
        return (lambda: DateTrunc(unit)), operand
    if kind in ("Substring", "Left"):
        pos = node.pos() if kind == "Substring" else None
        n = _constant(node.len())
        if (pos is not None and _constant(pos) != 1) or not isinstance(n, int):
            return None
        return (lambda: Prefix(n)), node.str()
    if kind == "Cast":
        target = _arrow_type(node.dataType())
        if target is None or str(node.child().dataType().sql()) == "TIMESTAMP":
            return None  # a TIMESTAMP (with local time zone) converts in the session's zone
        return (lambda: Cast(target)), node.child()
    if kind in _ARITHMETIC and str(node.evalMode()) == "ANSI":
        left, right = node.left(), node.right()
        constant = _constant(right)  # each call asks the JVM: once per operand
        operand = left
        if constant is None and kind != "Subtract":
            constant, operand = _constant(left), right
        if constant is None:
            return None
        sign = _ARITHMETIC[kind]
        if not isinstance(constant, (int, decimal.Decimal)) or isinstance(constant, bool):
            return None
        if sign == 0:
            return (lambda: Multiply(constant)), operand
        return (lambda: Add(constant * sign)), operand
    return None


def _constant(node: JavaObject) -> Any:
    """The value of a constant operand (a literal, or one Spark has not folded yet), else None."""
    if class_name(node) != "Literal" and not (node.foldable() and node.deterministic()):
        return None
    try:
        value = _literal(node)
    except walker.Untranslatable:
        return None
    return None if value is walker.NULL else value


def _arrow_type(data_type: JavaObject) -> pa.DataType | None:
    """The arrow type of a Spark SQL type a monotonic cast may target (None: not one)."""
    name = str(data_type.sql())
    if class_name(data_type) == "DecimalType":
        return pa.decimal128(int(data_type.precision()), int(data_type.scale()))
    return {
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "DATE": pa.date32(),
        "TIMESTAMP_NTZ": pa.timestamp("us"),
    }.get(name)


# ----------------------------------------------------------------------------------------- casts

_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_INTEGER_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_FLOAT_MANTISSA = {"FLOAT": 24, "DOUBLE": 53}


def _widened(column: walker.Column, source: JavaObject, target: JavaObject) -> walker.Column:
    """``column`` seen through a cast that is exact and order-preserving, else untranslatable.

    Integer -> wider integer, integer -> float/double/decimal that holds every value exactly, and
    float -> double. Only float -> double changes how literals must be read (``float_as_double``).
    """
    src, dst = source.sql(), target.sql()
    if column.float_as_double:
        raise walker.Untranslatable
    if src in _INTEGER_BITS:
        if dst in _INTEGER_BITS and _INTEGER_BITS[dst] >= _INTEGER_BITS[src]:
            return column
        if dst in _FLOAT_MANTISSA and _FLOAT_MANTISSA[dst] > _INTEGER_BITS[src]:
            return column  # every value fits the mantissa: the cast is exact
        if (
            class_name(target) == "DecimalType"
            and target.precision() - target.scale() >= _INTEGER_DIGITS[src]
        ):
            return column
    if src == "FLOAT" and dst == "DOUBLE":
        return walker.Column(column.ref, float_as_double=True)
    if src == dst:
        return column
    raise walker.Untranslatable


# -------------------------------------------------------------------------------------- literals

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _literal(node: JavaObject) -> Any:
    """The Python value of a Catalyst constant (``walker.NULL`` for NULL); others are untranslatable."""
    if class_name(node) == "Literal":
        return _value(node.value(), node.dataType())
    if node.foldable() and node.deterministic():  # a constant Spark has not folded yet (analyzed)
        try:
            value = node.eval(None)
        except Exception:  # e.g. an ANSI cast error: leave the comparison unused
            raise walker.Untranslatable from None
        return _value(value, node.dataType())
    raise walker.Untranslatable


def _value(value: Any, data_type: JavaObject) -> Any:
    """A Catalyst internal value of ``data_type`` as a ``hudi_expr`` literal."""
    if value is None:
        return walker.NULL
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
        raise walker.Untranslatable from None  # a year Python cannot hold
    raise walker.Untranslatable


def _decimal(value: JavaObject, scale: int) -> decimal.Decimal:
    """A Spark ``Decimal`` exactly, with the scale of its type (``1.50``, not ``1.5``)."""
    big = value.toJavaBigDecimal()  # py4j turns a java.math.BigDecimal into a decimal.Decimal
    exact = big if isinstance(big, decimal.Decimal) else decimal.Decimal(str(big.toPlainString()))
    return exact.quantize(decimal.Decimal(1).scaleb(-scale), context=decimal.Context(prec=100))


# ----------------------------------------------------------------------------------- py4j access


def class_name(node: JavaObject) -> str:
    """The simple class name of a JVM object (``Filter``, ``GreaterThan``, ...)."""
    return str(node.getClass().getSimpleName())


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
