"""Literal coercion to a column's arrow type: the one place where SQL casting rules live.

A literal either becomes an exact value of the column type, or lies strictly between two adjacent
values of it (``int_col < 1.5`` is ``int_col <= 1``), or beyond every value of it (out of range, or
NaN against a non-float column: NaN sorts above everything). Floats follow DuckDB and Spark: the
literal is rounded to the column's precision (``float_col = 0.1`` compares with ``float32(0.1)``).
Integers, decimals, dates and timestamps compare exactly, never through a float.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from hudi_expr.errors import BindError

__all__ = [
    "Coerced",
    "coerce_literal",
    "describe_type",
    "is_binary_like",
    "is_comparable_type",
    "is_float_type",
    "is_string_like",
]

Kind = Literal["exact", "between", "below", "above", "nan"]

_UTC = _dt.UTC
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_DATE_EPOCH = _dt.date(1970, 1, 1)
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_DTYPES: dict[int, type[np.floating]] = {16: np.float16, 32: np.float32, 64: np.float64}
# Each integer type's smallest and largest value (pyarrow has no iinfo; numpy's costs a dtype).
_INTEGER_RANGES = {
    t: ((-(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1) if signed else (0, (1 << t.bit_width) - 1))
    for signed, types in ((True, (pa.int8(), pa.int16(), pa.int32(), pa.int64())),
                          (False, (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())))
    for t in types
}  # fmt: skip
_ISO_FRACTION = re.compile(r"^(?P<head>.*?\d\d:\d\d:\d\d)\.(?P<frac>\d+)(?P<tail>.*)$")


@dataclass(frozen=True)
class Coerced:
    """A literal seen through a column type.

    ``exact``: ``value`` is the literal as a scalar of the type. ``between``: the literal lies
    strictly between the adjacent values ``floor`` and ``ceil``. ``below``/``above``: it is less or
    greater than every value of the type. ``nan``: a NaN literal against a float column.
    """

    kind: Kind
    value: pa.Scalar | None = None
    floor: pa.Scalar | None = None
    ceil: pa.Scalar | None = None


def is_float_type(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def is_string_like(t: pa.DataType) -> bool:
    """UTF-8 text: ``string``, ``large_string`` and ``string_view``, which compare as their bytes.

    The one answer for the whole library. A dictionary type is not string-like itself: a caller that
    accepts dictionary-encoded columns asks about ``t.value_type``.
    """
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def is_binary_like(t: pa.DataType) -> bool:
    """Bytes compared bytewise (unsigned, shorter first on a common prefix): ``binary``,
    ``large_binary``, ``binary_view`` and ``fixed_size_binary``.

    The one answer for the whole library. Parquet's fixed-length byte arrays that are numbers
    (decimals, float16) reach arrow as those types, so a ``fixed_size_binary`` column here holds
    plain bytes. Extension types stored as fixed-size binary (``uuid``) are not binary-like, and a
    dictionary type is not either: a caller that accepts one asks about ``t.value_type``.
    """
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


def is_comparable_type(t: pa.DataType) -> bool:
    """Types whose values have a total order the pruning rules understand."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or is_string_like(t)
        or is_binary_like(t)
    )


def describe_type(t: pa.DataType) -> str:
    return str(t)


def _fail(column: str, t: pa.DataType, literal: Any, why: str) -> BindError:
    return BindError(
        f"cannot compare column {column!r} of type {describe_type(t)} with literal {literal!r} "
        f"({type(literal).__name__}): {why}"
    )


def coerce_literal(literal: Any, t: pa.DataType, column: str) -> Coerced:
    """Coerce one literal to column type ``t`` as SQL would; raises ``BindError`` when it cannot."""
    if isinstance(literal, pa.Scalar):
        # Float scalars go the long way: NaN must fold to isnan forms and -0.0 to 0.0.
        if literal.type == t and not is_float_type(t):
            return Coerced("exact", literal)
        literal = _scalar_to_python(literal)
    if isinstance(literal, np.generic):
        literal = literal.item()
    if pa.types.is_dictionary(t):
        t = t.value_type
    try:
        if pa.types.is_integer(t):
            return _to_integer(literal, t, column)
        if pa.types.is_floating(t):
            return _to_float(literal, t, column)
        if pa.types.is_decimal(t):
            return _to_decimal(literal, t, column)
        if pa.types.is_boolean(t):
            return _to_bool(literal, t, column)
        if pa.types.is_date(t):
            return _to_date(literal, t, column)
        if pa.types.is_timestamp(t):
            return _to_timestamp(literal, t, column)
        if is_string_like(t):
            return _to_string(literal, t, column)
        if is_binary_like(t):
            return _to_binary(literal, t, column)
    except (ValueError, OverflowError, ArithmeticError, pa.ArrowException) as exc:
        if isinstance(exc, BindError):
            raise
        raise _fail(column, t, literal, str(exc)) from exc
    raise _fail(column, t, literal, "predicates on this column type are not supported")


def _scalar_to_python(s: pa.Scalar) -> Any:
    if pa.types.is_timestamp(s.type):
        return s  # kept as a scalar: nanoseconds do not fit a datetime
    return s.as_py()


# ------------------------------------------------------------------------------- exact numbers


def _exact_number(literal: Any, column: str, t: pa.DataType) -> Fraction | float:
    """A literal as an exact rational, or a float for NaN and +-inf."""
    if isinstance(literal, bool):
        raise _fail(column, t, literal, "a boolean is not a number")
    if isinstance(literal, int):
        return Fraction(literal)
    if isinstance(literal, float):
        return literal if not math.isfinite(literal) else Fraction(literal)
    if isinstance(literal, decimal.Decimal):
        if literal.is_nan():
            return math.nan
        if literal.is_infinite():
            return math.inf if literal > 0 else -math.inf
        return Fraction(literal)
    if isinstance(literal, str):
        text = literal.strip()
        try:
            return _exact_number(decimal.Decimal(text), column, t)
        except decimal.InvalidOperation:
            try:
                return _exact_number(float(text), column, t)
            except ValueError:
                raise _fail(column, t, literal, "the string is not a number") from None
    raise _fail(column, t, literal, "not a number")


def _place(
    value: Fraction | float, lo: Fraction, hi: Fraction, make: Any, grid: Fraction = Fraction(1)
) -> Coerced:
    """Place an exact value on the grid ``lo, lo+grid, ..., hi`` of a discrete type."""
    if isinstance(value, float):  # NaN or +-inf
        return Coerced("below" if value == -math.inf else "above")
    if value < lo:
        return Coerced("below")
    if value > hi:
        return Coerced("above")
    steps = value / grid
    if steps.denominator == 1:
        return Coerced("exact", make(int(steps)))
    return Coerced("between", floor=make(math.floor(steps)), ceil=make(math.ceil(steps)))


def _to_integer(literal: Any, t: pa.DataType, column: str) -> Coerced:
    lo, hi = _INTEGER_RANGES[t]
    if type(literal) is int and lo <= literal <= hi:
        return Coerced("exact", pa.scalar(literal, t))  # most literals: no exact arithmetic needed
    if isinstance(literal, float) and math.isfinite(literal):
        # As against decimals: the number the repr shows, as in SQL text (and as it prints), so
        # 2.0**60 is 1152921504606847000 here too, not 1152921504606846976.
        literal = decimal.Decimal(repr(literal))
    value = _exact_number(literal, column, t)
    return _place(value, Fraction(lo), Fraction(hi), lambda v: pa.scalar(v, t))


def _to_decimal(literal: Any, t: pa.DataType, column: str) -> Coerced:
    if isinstance(literal, float) and math.isfinite(literal):
        literal = decimal.Decimal(repr(literal))  # 0.1 means the decimal 0.1, as in SQL text
    value = _exact_number(literal, column, t)
    if isinstance(value, float) and math.isnan(value):
        raise _fail(column, t, literal, "NaN is not a decimal")
    grid = Fraction(1, 10**t.scale)
    limit = Fraction(10**t.precision - 1, 10**t.scale)

    def make(units: int) -> pa.Scalar:
        # An exact context: the default one keeps 28 digits and would round a 38-digit value.
        exact = decimal.Context(prec=max(t.precision, 1) + 2)
        return pa.scalar(decimal.Decimal(units).scaleb(-t.scale, exact), t)

    return _place(value, -limit, limit, make, grid)


def _to_float(literal: Any, t: pa.DataType, column: str) -> Coerced:
    value = _exact_number(literal, column, t)
    if isinstance(value, float) and math.isnan(value):
        return Coerced("nan")
    dtype = _FLOAT_DTYPES[t.bit_width]
    finfo = np.finfo(dtype)
    if isinstance(value, Fraction):
        # Beyond the largest finite value the cast would overflow: compare exactly instead. The
        # literal lies strictly between the largest finite value and infinity (not above every
        # value: +inf and NaN rows are greater), so it folds like int_col = 1.5.
        top, inf = dtype(finfo.max), dtype(math.inf)
        if value > Fraction(float(finfo.max)):
            return Coerced("between", floor=_float_scalar(top, t), ceil=_float_scalar(inf, t))
        if value < Fraction(float(finfo.min)):
            return Coerced("between", floor=_float_scalar(-inf, t), ceil=_float_scalar(-top, t))
        rounded = _nearest(value, dtype)
        if rounded != value and isinstance(literal, float) and decimal_text(literal) is None:
            # Its SQL text is a DOUBLE (no DECIMAL holds it), which DuckDB compares with the column
            # widened, not rounded to the column's precision: 5e-324 lies between 0 and the least
            # positive float32, and a float32 0 is less than it.
            low, high = (v if v != 0 else dtype(0.0) for v in sorted((rounded, _step(rounded, value))))
            return Coerced("between", floor=_float_scalar(low, t), ceil=_float_scalar(high, t))
    else:
        rounded = dtype(value)
    # -0.0 and 0.0 are equal in SQL; one canonical zero keeps equality checks simple.
    if rounded == 0:
        rounded = dtype(0.0)
    return Coerced("exact", _float_scalar(rounded, t))


def _nearest(value: Fraction, dtype: Any) -> np.floating:
    """The ``dtype`` value nearest ``value``, ties to even: one rounding, as SQL casts a literal.

    ``float()`` rounds to a double first, and rounding that again to float32 can fall on the
    wrong side of a tie (2**54 + 2**30 + 1 would give 2**54): the neighbours are checked exactly.
    """
    guess = dtype(float(value))
    if dtype is np.float64:
        return guess
    with np.errstate(over="ignore"):
        near = [np.nextafter(guess, dtype(-math.inf)), guess, np.nextafter(guess, dtype(math.inf))]
    odd = f"u{np.dtype(dtype).itemsize}"
    return min(
        (c for c in near if np.isfinite(c)),
        key=lambda c: (abs(Fraction(float(c)) - value), int(c.view(odd)) & 1),
    )


def _step(near: np.floating, value: Fraction) -> np.floating:
    """The neighbour of ``near`` on the side of ``value`` (which ``near`` does not equal)."""
    toward = type(near)(math.inf if Fraction(float(near)) < value else -math.inf)
    return np.nextafter(near, toward)


def decimal_text(value: float | decimal.Decimal) -> str | None:
    """The number as DuckDB DECIMAL literal text (digits, no exponent); None beyond 38 digits.

    A float is written as its shortest repr. Exponent text would be a DOUBLE: the printer writes
    that instead, and binding then compares such a float as a DOUBLE (exactly, never rounded).
    """
    number = decimal.Decimal(repr(value)) if isinstance(value, float) else value
    digits, exponent = number.as_tuple()[1:]
    if not isinstance(exponent, int) or max(len(digits) + exponent, 0) + max(-exponent, 0) > 40:
        return None
    text = format(number, "f")
    sign, (whole, _, fraction) = text[: text.startswith("-")], text.lstrip("-").partition(".")
    if len(whole) + len(fraction) <= 38:
        return text
    # DuckDB counts the 0 of 0.xxx as a digit: .xxx (38 digits) is a DECIMAL(38, 38) still.
    return f"{sign}.{fraction}" if whole == "0" and len(fraction) <= 38 else None


def _float_scalar(value: np.floating, t: pa.DataType) -> pa.Scalar:
    return pa.scalar(value.item() if not isinstance(value, np.float16) else value, t)


def _to_bool(literal: Any, t: pa.DataType, column: str) -> Coerced:
    if isinstance(literal, bool):
        return Coerced("exact", pa.scalar(literal, t))
    if isinstance(literal, str) and literal.strip().lower() in ("true", "false", "t", "f"):
        return Coerced("exact", pa.scalar(literal.strip().lower() in ("true", "t"), t))
    raise _fail(column, t, literal, "expected a boolean")


# ------------------------------------------------------------------------------ text and bytes


def _to_string(literal: Any, t: pa.DataType, column: str) -> Coerced:
    if isinstance(literal, bytes):
        try:
            literal = literal.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail(column, t, literal, "the bytes are not valid UTF-8") from None
    if not isinstance(literal, str):
        raise _fail(column, t, literal, "expected a string")
    return Coerced("exact", pa.scalar(literal, t))


def _to_binary(literal: Any, t: pa.DataType, column: str) -> Coerced:
    if isinstance(literal, str):
        literal = literal.encode("utf-8")
    if not isinstance(literal, bytes):
        raise _fail(column, t, literal, "expected bytes")
    if pa.types.is_fixed_size_binary(t) and len(literal) != t.byte_width:
        raise _fail(column, t, literal, f"expected exactly {t.byte_width} bytes")
    return Coerced("exact", pa.scalar(literal, t))


# ---------------------------------------------------------------------------------- date, time


def _parse_temporal(text: str) -> _dt.date | _dt.datetime | tuple[_dt.datetime, int]:
    """ISO date or timestamp text; returns (datetime, extra nanoseconds) for sub-microsecond text."""
    text = text.strip()
    if len(text) == 10:
        return _dt.date.fromisoformat(text)
    extra_ns = 0
    m = _ISO_FRACTION.match(text)
    if m and len(m["frac"]) > 6:
        frac = m["frac"][:9].ljust(9, "0")
        extra_ns = int(frac[6:])
        text = f"{m['head']}.{frac[:6]}{m['tail']}"
    parsed = _dt.datetime.fromisoformat(text)
    return (parsed, extra_ns) if extra_ns else parsed


def _instant(literal: Any, column_has_tz: bool, nanos: bool = True) -> Fraction:
    """A date/datetime/timestamp literal as exact nanoseconds since the epoch.

    Against a column with a time zone, a naive literal is read as UTC; against a column without
    one (wall clock), an aware literal is converted to UTC wall-clock time (session zone UTC).
    Text is cast to the column's type as SQL does (DuckDB, Spark): against a wall-clock column
    its zone is ignored, and digits past microseconds count only when ``nanos`` (a ns column).
    """
    extra_ns = 0
    if isinstance(literal, str):
        literal = _parse_temporal(literal)
        if isinstance(literal, tuple):
            literal, extra_ns = literal
            extra_ns = extra_ns if nanos else 0
        if isinstance(literal, _dt.datetime) and literal.tzinfo is not None and not column_has_tz:
            literal = literal.replace(tzinfo=None)
    if isinstance(literal, pa.TimestampScalar):
        return Fraction(literal.value * 1_000_000_000, _UNITS_PER_SECOND[literal.type.unit])
    if isinstance(literal, _dt.datetime):
        aware = literal if literal.tzinfo is not None else literal.replace(tzinfo=_UTC)
        delta = aware - _EPOCH
        micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        return Fraction(micros * 1_000 + extra_ns)
    if isinstance(literal, _dt.date):
        return Fraction((literal - _DATE_EPOCH).days * 86_400 * 1_000_000_000)
    raise TypeError("expected a date, datetime, timestamp or ISO string")


def _to_date(literal: Any, t: pa.DataType, column: str) -> Coerced:
    if isinstance(literal, str):
        # Text is cast to DATE as SQL does: a time of day (and zone) in it is dropped, not compared.
        parsed = _parse_temporal(literal)
        parsed = parsed[0] if isinstance(parsed, tuple) else parsed
        literal = parsed.date() if isinstance(parsed, _dt.datetime) else parsed
    try:
        ns = _instant(literal, column_has_tz=False)
    except TypeError as exc:
        raise _fail(column, t, literal, str(exc)) from None
    day_ns = Fraction(86_400 * 1_000_000_000)
    lo, hi = Fraction(-(2**31)) * day_ns, Fraction(2**31 - 1) * day_ns
    if pa.types.is_date64(t):

        def make(days: int) -> pa.Scalar:
            return pa.scalar(days * 86_400_000, t)
    else:

        def make(days: int) -> pa.Scalar:
            return pa.scalar(days, t)

    return _place(ns, lo, hi, make, day_ns)


def _to_timestamp(literal: Any, t: pa.DataType, column: str) -> Coerced:
    try:
        ns = _instant(literal, column_has_tz=t.tz is not None, nanos=t.unit == "ns")
    except TypeError as exc:
        raise _fail(column, t, literal, str(exc)) from None
    grid = Fraction(1_000_000_000, _UNITS_PER_SECOND[t.unit])
    return _place(ns, _INT64_MIN * grid, _INT64_MAX * grid, lambda v: pa.scalar(v, t), grid)
