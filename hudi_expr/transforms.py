"""Order-preserving functions of one column (``year(d)``, ``CAST(i AS BIGINT)``, ``q * 2``) as terms.

A predicate on ``f(col)`` prunes with the column's own statistics when ``f`` is monotonic: for a
non-decreasing ``f`` every value ``v`` of a file has ``f(min) <= f(v) <= f(max)``, so the file's
statistics for ``f(col)`` are ``[f(min), f(max)]`` (swapped for a non-increasing ``f``), with the
same NULL count. Every leaf rule then applies unchanged, in both ``might_match`` and ``all_match``.
The rules live here, once, so every adapter (DuckDB, Catalyst) shares them.

Each function here is total on its domain or raises in the engines (never wraps around), maps NULL
to NULL and nothing else to NULL, and never makes a NaN out of a number. Arithmetic is exact, in a
type wide enough for every image (see ``Add``). Where the image of a bound may be rounded
differently by an engine than by arrow (a cast to a floating type), the bound is widened by one
ulp outwards.
Bloom filters and other membership structures know the column's values, not ``f``'s: a
transformed column has none.
"""

from __future__ import annotations

import decimal
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_expr.errors import BindError

__all__ = [
    "TRUNC_UNITS",
    "Add",
    "Cast",
    "DateTrunc",
    "Multiply",
    "Prefix",
    "Transform",
    "Year",
    "transform_from_dict",
]


class Transform:
    """A monotonic function of one column. Immutable, compared and hashed by value."""

    __slots__ = ()
    name: ClassVar[str]  # its JSON tag

    # -- what every transform says about itself ----------------------------------------------------

    @abstractmethod
    def result_type(self, source: pa.DataType) -> pa.DataType:
        """The arrow type of ``f(col)`` for a column of type ``source``; ``BindError`` when ``f``
        is not defined, or not known to be monotonic, on that type."""

    @abstractmethod
    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        """``f`` of each value (bounds of files), in ``result_type``; null where unknown (the value
        is null, or its image overflows the engine's result type)."""

    @abstractmethod
    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        """``f`` of a column, as arrow evaluates rows (the engines' semantics)."""

    @abstractmethod
    def sql(self, column: str) -> str:
        """``f`` applied to the SQL text ``column``, as DuckDB writes it."""

    @abstractmethod
    def params(self) -> dict[str, Any]:
        """The JSON-ready parameters (without the name)."""

    def increasing(self) -> bool:
        """True when ``f`` is non-decreasing, False when non-increasing (bounds swap)."""
        return True

    def lossy(self, source: pa.DataType) -> bool:
        """Whether engines may round ``f(v)`` differently from arrow (bounds widen by one ulp)."""
        return False

    # -- value semantics -----------------------------------------------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return (self.name, tuple(sorted((k, str(v)) for k, v in self.params().items())))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transform) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params().items())})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    # -- statistics -----------------------------------------------------------------------------------

    def bounds(self, low: pa.Array, high: pa.Array, source: pa.DataType) -> tuple[pa.Array, pa.Array]:
        """Per file, the bounds of ``f(col)`` from the bounds ``[low, high]`` of ``col``."""
        lo, hi = self.image(low, source), self.image(high, source)
        if not self.increasing():
            lo, hi = hi, lo
        if self.lossy(source):
            lo, hi = _widen(lo, -np.inf), _widen(hi, np.inf)
        return lo, hi


def _widen(bound: pa.Array, direction: float) -> pa.Array:
    """Each float bound moved one ulp towards ``direction`` (nulls stay)."""
    values = bound.to_numpy(zero_copy_only=False)
    moved = np.nextafter(values, np.array(direction, dtype=values.dtype))
    return pa.array(moved, type=bound.type, mask=bound.is_null().to_numpy(zero_copy_only=False))


# ------------------------------------------------------------------------------------ integer ranges

_INT_RANGES: dict[pa.DataType, tuple[int, int]] = {
    t: (int(np.iinfo(t.to_pandas_dtype()).min), int(np.iinfo(t.to_pandas_dtype()).max))
    for t in (
        pa.int8(),
        pa.int16(),
        pa.int32(),
        pa.int64(),
        pa.uint8(),
        pa.uint16(),
        pa.uint32(),
        pa.uint64(),
    )
}
_MAX_DECIMAL_PRECISION = 38


def _digits(t: pa.DataType) -> int:
    """Decimal digits that hold every value of an integer type."""
    lo, hi = _INT_RANGES[t]
    return max(len(str(abs(lo))), len(str(hi)))


def _as_decimal_type(t: pa.DataType) -> pa.DataType:
    """An integer type as the decimal holding it exactly (decimals as themselves)."""
    if pa.types.is_decimal(t):
        return t
    return pa.decimal128(_digits(t), 0)


def _constant_decimal(c: int | decimal.Decimal) -> pa.Scalar:
    d = decimal.Decimal(c)
    _, digits, exponent = d.as_tuple()
    scale = max(0, -int(exponent))
    precision = max(len(digits) + max(0, int(exponent)), scale, 1)
    return pa.scalar(d, pa.decimal128(precision, scale))


def _check_number(value: Any, what: str) -> int | decimal.Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise TypeError(f"{what} needs an integer or decimal constant, got {value!r}")
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        raise ValueError(f"{what} needs a finite constant, got {value!r}")
    return value


class _Arithmetic(Transform):
    """``col + c`` / ``col * c`` on integer and decimal columns, computed exactly.

    The result type is wide enough for the image of every value of the column's type (BIGINT, or
    a DECIMAL(p, 0) beyond it), so nothing overflows here. That is how DuckDB's filters behave too:
    its optimizer moves constants across a comparison (``i + 1 > 0`` runs as ``i > -1``) instead of
    overflowing, and where it cannot it raises rather than wrap.
    """

    __slots__ = ("constant",)
    constant: int | decimal.Decimal
    _kernel: ClassVar[str]  # arrow's checked kernel: nothing overflows, so it never raises
    _symbol: ClassVar[str]

    def __init__(self, constant: int | decimal.Decimal) -> None:
        self._set(constant=_check_number(constant, f"{self.name}()"))

    def params(self) -> dict[str, Any]:
        c = self.constant
        return {"constant": c if isinstance(c, int) else {"decimal": str(c)}}

    def sql(self, column: str) -> str:
        c = self.constant
        if self._symbol == "+" and c < 0:
            return f"({column} - {-c})"
        return f"({column} {self._symbol} {c if c >= 0 else f'({c})'})"

    @abstractmethod
    def _exact(self, value: int) -> int: ...

    @abstractmethod
    def _decimal_result(self, left: pa.Decimal128Type, right: pa.Decimal128Type) -> pa.Decimal128Type: ...

    def result_type(self, source: pa.DataType) -> pa.DataType:
        if pa.types.is_integer(source) and isinstance(self.constant, int):
            ends = [self._exact(end) for end in _INT_RANGES[source]]
            low, high = _INT_RANGES[pa.int64()]
            if min(ends) >= low and max(ends) <= high:
                return pa.int64()
            digits = max(len(str(abs(end))) for end in ends)
            if digits > _MAX_DECIMAL_PRECISION:
                raise BindError(f"{self.sql('col')} on {source}: the result needs more than 38 digits")
            return pa.decimal128(digits, 0)
        if not (pa.types.is_integer(source) or pa.types.is_decimal(source)):
            raise BindError(
                f"{self.sql('col')}: arithmetic is used for pruning on integer and decimal columns only, "
                f"not {source} (floating-point rounding is the engine's)"
            )
        result = self._decimal_result(_as_decimal_type(source), _constant_decimal(self.constant).type)
        if result.precision > _MAX_DECIMAL_PRECISION:
            raise BindError(f"{self.sql('col')} on {source}: the result needs more than 38 digits")
        return result

    def _operands(self, source: pa.DataType) -> tuple[pa.DataType, pa.Scalar, pa.DataType]:
        """The type the column is cast to, the constant as a scalar, and the result type."""
        result = self.result_type(source)
        if pa.types.is_integer(result):  # BIGINT holds the column, the constant and every image
            return result, pa.scalar(self.constant, result), result
        operand = result if pa.types.is_integer(source) else _as_decimal_type(source)
        return operand, _constant_decimal(self.constant), result

    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        operand, constant, result = self._operands(source)
        out = pc.call_function(self._kernel, [values.cast(operand), constant])
        return out.cast(result) if out.type != result else out

    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        operand, constant, result = self._operands(source)
        out = pc.Expression._call(self._kernel, [field.cast(operand), pc.scalar(constant)])
        return out.cast(result)


class Add(_Arithmetic):
    """``col + c`` (and ``col - c`` as ``col + (-c)``): non-decreasing."""

    __slots__ = ()
    name = "add"
    _kernel = "add_checked"
    _symbol = "+"

    def _exact(self, value: int) -> int:
        return value + int(self.constant)

    def _decimal_result(self, left: pa.Decimal128Type, right: pa.Decimal128Type) -> pa.Decimal128Type:
        scale = max(left.scale, right.scale)
        whole = max(left.precision - left.scale, right.precision - right.scale)
        return pa.decimal128(whole + scale + 1, scale)


class Multiply(_Arithmetic):
    """``col * c``: non-decreasing for ``c >= 0``, non-increasing for ``c < 0``."""

    __slots__ = ()
    name = "multiply"
    _kernel = "multiply_checked"
    _symbol = "*"

    def _exact(self, value: int) -> int:
        return value * int(self.constant)

    def increasing(self) -> bool:
        return self.constant >= 0

    def _decimal_result(self, left: pa.Decimal128Type, right: pa.Decimal128Type) -> pa.Decimal128Type:
        return pa.decimal128(left.precision + right.precision + 1, left.scale + right.scale)


# -------------------------------------------------------------------------------------------- casts


def _cast_kind(source: pa.DataType, target: pa.DataType) -> str | None:
    """How a cast preserves order: "exact" (injective), "floor" (rounds down), "round" (rounds to
    nearest, non-decreasing); None when it is not known to preserve order or may fail."""
    if source == target:
        return "exact"
    if pa.types.is_integer(source):
        if pa.types.is_integer(target):
            (slo, shi), (tlo, thi) = _INT_RANGES[source], _INT_RANGES[target]
            return "exact" if tlo <= slo and shi <= thi else None
        if pa.types.is_floating(target) and not pa.types.is_float16(target):
            return "round"
        if pa.types.is_decimal(target):
            return "exact" if target.precision - target.scale >= _digits(source) else None
        return None
    if pa.types.is_decimal(source):
        if pa.types.is_floating(target) and not pa.types.is_float16(target):
            return "round"
        if pa.types.is_decimal(target):
            widens = target.scale >= source.scale and (
                target.precision - target.scale >= source.precision - source.scale
            )
            return "exact" if widens else None
        return None
    if pa.types.is_float32(source) and pa.types.is_float64(target):
        return "exact"
    if pa.types.is_date32(source) and pa.types.is_timestamp(target) and target.tz is None:
        return "exact"
    if pa.types.is_timestamp(source) and source.tz is None and pa.types.is_date32(target):
        return "floor"
    return None


class Cast(Transform):
    """``CAST(col AS type)`` for casts that keep order: integer widening, integers and decimals to
    floating point or wider decimals, float to double, date to timestamp, timestamp to date."""

    __slots__ = ("target",)
    target: pa.DataType
    name = "cast"

    def __init__(self, target: pa.DataType) -> None:
        if not isinstance(target, pa.DataType):
            raise TypeError(f"cast() needs an arrow type, got {target!r}")
        self._set(target=target)

    def params(self) -> dict[str, Any]:
        return {"type": _type_name(self.target)}

    def sql(self, column: str) -> str:
        return f"CAST({column} AS {_sql_type(self.target)})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        if _cast_kind(source, self.target) is None:
            raise BindError(
                f"CAST from {source} to {self.target} is not used for pruning: it is not known to keep "
                "the order of values (or it may fail on some)"
            )
        return self.target

    def lossy(self, source: pa.DataType) -> bool:
        return _cast_kind(source, self.target) == "round"

    def _via_text(self, source: pa.DataType) -> bool:
        # Arrow's decimal -> float cast is not correctly rounded (-0.3 becomes -0.30000000000000004);
        # DuckDB's is (for up to 18 digits): through the decimal text, arrow rounds correctly too.
        return pa.types.is_decimal(source) and pa.types.is_floating(self.target)

    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        if self._via_text(source):
            return values.cast(pa.string()).cast(self.target)
        return values.cast(self.target, safe=False)

    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        if self._via_text(source):
            return field.cast(pa.string()).cast(self.target)
        return field.cast(self.target, safe=False)


# ------------------------------------------------------------------------------------ dates, times

TRUNC_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second")
"""The units ``DateTrunc`` takes (arrow's ``floor_temporal`` units that DuckDB's date_trunc shares)."""


def _temporal(source: pa.DataType, what: str) -> None:
    if pa.types.is_date32(source) or (pa.types.is_timestamp(source) and source.tz is None):
        return
    if pa.types.is_timestamp(source):
        raise BindError(
            f"{what} of a TIMESTAMP WITH TIME ZONE depends on the session time zone: not used for pruning"
        )
    raise BindError(f"{what} needs a DATE or TIMESTAMP column, not {source}")


class Year(Transform):
    """``year(d)`` (``extract(year FROM d)``, ``date_part('year', d)``): non-decreasing."""

    __slots__ = ()
    name = "year"

    def params(self) -> dict[str, Any]:
        return {}

    def sql(self, column: str) -> str:
        return f"year({column})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        _temporal(source, "year()")
        return pa.int64()

    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        return pc.year(values)

    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        return pc.year(field)


class DateTrunc(Transform):
    """``date_trunc(unit, d)``: the start of ``d``'s unit (weeks start on Monday), a TIMESTAMP
    as DuckDB types it; non-decreasing."""

    __slots__ = ("unit",)
    unit: str
    name = "date_trunc"

    def __init__(self, unit: str) -> None:
        unit = str(unit).lower()
        if unit not in TRUNC_UNITS:
            raise ValueError(f"date_trunc unit {unit!r} is not one of {', '.join(TRUNC_UNITS)}")
        self._set(unit=unit)

    def params(self) -> dict[str, Any]:
        return {"unit": self.unit}

    def sql(self, column: str) -> str:
        return f"date_trunc('{self.unit}', {column})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        _temporal(source, "date_trunc()")
        return pa.timestamp("us") if pa.types.is_date32(source) else source

    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        floored = pc.floor_temporal(values, unit=self.unit, week_starts_monday=True)
        result = self.result_type(source)
        return floored.cast(result) if floored.type != result else floored

    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        floored = pc.floor_temporal(field, unit=self.unit, week_starts_monday=True)
        return floored.cast(self.result_type(source))


# ----------------------------------------------------------------------------------------- strings


class Prefix(Transform):
    """``left(s, n)`` / ``substr(s, 1, n)``: the first ``n`` characters. Non-decreasing in byte
    order: strings that agree up to their first difference keep it, or become equal."""

    __slots__ = ("length",)
    length: int
    name = "prefix"

    def __init__(self, length: int) -> None:
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise ValueError(f"left(s, n) needs n >= 1, got {length!r}")
        self._set(length=length)

    def params(self) -> dict[str, Any]:
        return {"length": self.length}

    def sql(self, column: str) -> str:
        return f"left({column}, {self.length})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        if pa.types.is_string(source) or pa.types.is_large_string(source):
            return source
        if pa.types.is_string_view(source):
            return pa.large_string()
        raise BindError(f"left(s, n) needs a string column, not {source}")

    def image(self, values: pa.Array, source: pa.DataType) -> pa.Array:
        return pc.utf8_slice_codeunits(values.cast(self.result_type(source)), 0, self.length)

    def row_expression(self, field: pc.Expression, source: pa.DataType) -> pc.Expression:
        result = self.result_type(source)
        text = field.cast(result) if result != source else field
        return pc.utf8_slice_codeunits(text, 0, self.length)


# ------------------------------------------------------------------------------------------ types


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"decimal({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}]" if t.tz is None else f"timestamp[{t.unit}, {t.tz}]"
    return str(t)


def _parse_type(name: str) -> pa.DataType:
    text = name.strip()
    if text.startswith("decimal(") and text.endswith(")"):
        precision, scale = (int(p) for p in text[len("decimal(") : -1].split(","))
        return pa.decimal128(precision, scale)
    if text.startswith("timestamp[") and text.endswith("]"):
        parts = [p.strip() for p in text[len("timestamp[") : -1].split(",", 1)]
        return pa.timestamp(parts[0], parts[1] if len(parts) > 1 else None)
    return pa.type_for_alias(text)


_SQL_TYPES: dict[pa.DataType, str] = {
    pa.int8(): "TINYINT",
    pa.int16(): "SMALLINT",
    pa.int32(): "INTEGER",
    pa.int64(): "BIGINT",
    pa.uint8(): "UTINYINT",
    pa.uint16(): "USMALLINT",
    pa.uint32(): "UINTEGER",
    pa.uint64(): "UBIGINT",
    pa.float32(): "FLOAT",
    pa.float64(): "DOUBLE",
    pa.date32(): "DATE",
}


def _sql_type(t: pa.DataType) -> str:
    if t in _SQL_TYPES:
        return _SQL_TYPES[t]
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP", "ns": "TIMESTAMP_NS"}[t.unit]
    return str(t).upper()


_BY_NAME: dict[str, type[Transform]] = {
    cls.name: cls for cls in (Add, Multiply, Cast, Year, DateTrunc, Prefix)
}


def transform_from_dict(data: Any) -> Transform:
    """A transform from its JSON form ``{"name": ..., <params>}``; ``ValueError`` when malformed."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ValueError(f"a transform is an object with a 'name', got {data!r}")
    cls = _BY_NAME.get(data["name"])
    if cls is None:
        raise ValueError(f"unknown transform {data['name']!r}; known: {sorted(_BY_NAME)}")
    params = {k: v for k, v in data.items() if k != "name"}
    if cls in (Add, Multiply):
        c = params.get("constant")
        if isinstance(c, dict) and set(c) == {"decimal"}:
            c = decimal.Decimal(str(c["decimal"]))
        return cls(_check_number(c, data["name"]))
    if cls is Cast:
        try:
            return Cast(_parse_type(str(params.get("type"))))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"bad cast type {params.get('type')!r}: {exc}") from None
    if cls is DateTrunc:
        return DateTrunc(params.get("unit"))  # type: ignore[arg-type]
    if cls is Prefix:
        return Prefix(params.get("length"))  # type: ignore[arg-type]
    return cls()


def to_dict(transform: Transform) -> dict[str, Any]:
    """The JSON form of a transform."""
    return {"name": transform.name, **transform.params()}
