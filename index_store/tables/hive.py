"""Hive-style partition folders (``k=v/...``): parsing, and typing the values as DuckDB does.

A plain parquet directory carries its partition values only in folder names, so their type is a
guess, and the guess has to be the engine's: if DuckDB reads ``year=2024`` as BIGINT and the index
called it a string, ``year > 900`` would compare strings and skip files wrongly. This module
reproduces DuckDB's ``read_parquet(..., hive_partitioning=true)`` inference (checked against
DuckDB 2.0 in ``tests/index_store/test_tables_plain.py``):

- each raw (still URL-encoded) value is tried, strictly, as DATE, then TIMESTAMP, then BIGINT, else
  VARCHAR; ``__HIVE_DEFAULT_PARTITION__`` and ``NULL`` (any case) are NULL and take no part;
- a column whose values disagree on the type becomes VARCHAR (``1`` and ``abc``, but also ``1`` and
  ``2024-01-02``, or a DATE and a TIMESTAMP);
- values are URL-decoded (``%20`` -> space, ``%2F`` -> ``/``); in a VARCHAR column only
  ``__HIVE_DEFAULT_PARTITION__`` is NULL (``''`` and ``'NULL'`` stay strings), in a typed column
  the NULL tokens above are NULL.

Typed values come back as Python objects (``int``, ``datetime.date``, naive ``datetime.datetime``,
``str``, ``None``); DuckDB's DATE/TIMESTAMP ``infinity`` and years outside 1..9999 have no Python
form and raise a ``TableFormatError`` that says to declare the column's type instead.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from hudi_expr.types import is_string_like
from index_store.errors import TableFormatError

__all__ = [
    "HIVE_NULL",
    "cast_declared",
    "decode_value",
    "hive_segments",
    "infer_column_type",
    "infer_value_type",
    "typed_value",
]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_SPACES = " \t\n\v\f\r"
_DIGITS = "0123456789"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_DATE_YEARS = (-5877641, 5881580)  # DuckDB's DATE range (exclusive here; its edge years are partial)
_TIMESTAMP_YEARS = (-290308, 294247)  # microseconds since 1970 in an int64 (likewise)
_SPECIAL_DATE = re.compile(r"[ \t\n\v\f\r]*(-?)(infinity|inf|epoch)[ \t\n\v\f\r]*", re.IGNORECASE)
_TZ_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/+-")


class _Infinite:
    """DuckDB's special DATE/TIMESTAMP value ``infinity`` (or ``-infinity``)."""

    def __init__(self, negative: bool) -> None:
        self.negative = negative


def hive_segments(rel_dir: str) -> list[tuple[str, str]]:
    """The ``(key, raw value)`` pairs of a relative folder path, in path order.

    Segments without ``=`` (plain sub-folders) are not partitions and are skipped; a value may
    itself contain ``=`` (split at the first one, as Hive and Spark do)."""
    pairs = []
    for segment in rel_dir.split("/") if rel_dir else ():
        key, sep, raw = segment.partition("=")
        if sep and key:
            pairs.append((key, raw))
    return pairs


def decode_value(raw: str) -> str:
    """URL-decode a folder value (``%2F`` -> ``/``); invalid UTF-8 raises ``TableFormatError``."""
    if "%" not in raw:
        return raw
    try:
        return unquote(raw, errors="strict")
    except UnicodeDecodeError as exc:
        raise TableFormatError(f"partition value {raw!r} does not URL-decode to UTF-8 text") from exc


def _is_null_token(raw: str) -> bool:
    return raw == HIVE_NULL or raw.upper() == "NULL"


# --- strict casts, as DuckDB's TryCastAs(..., strict=true) -------------------------------------


def _parse_bigint(s: str) -> int | None:
    """BIGINT: optional leading/trailing blanks, ``-``, decimal digits (no leading zero unless
    negative), or ``0x``/``0b`` prefixed; no ``+``, dot, exponent or underscore."""
    body = s.lstrip(_SPACES)
    if not body:
        return None
    if len(body) > 1 and body[0] == "0" and body[1] in "xXbB":
        digits = body[2:]
        allowed = "0123456789abcdefABCDEF" if body[1] in "xX" else "01"
        if not digits or any(c not in allowed for c in digits):
            return None
        value = int(digits, 16 if body[1] in "xX" else 2)
        return value if value <= _INT64_MAX else None
    negative = body[0] == "-"
    start = end = 1 if negative else 0
    while end < len(body) and body[end] in _DIGITS:
        end += 1
    digits = body[start:end]
    if not digits or body[end:].strip(_SPACES):
        return None
    if not negative and len(digits) > 1 and digits[0] == "0":
        return None
    value = -int(digits) if negative else int(digits)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _valid_date(year: int, month: int, day: int) -> bool:
    if not _DATE_YEARS[0] < year < _DATE_YEARS[1] or not 1 <= month <= 12 or day < 1:
        return False
    days = [31, 29 if _is_leap(year) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    return day <= days[month - 1]


def _two_digits(s: str, pos: int) -> tuple[int, int] | None:
    """One or two digits at ``pos``: (value, next position)."""
    if pos >= len(s) or s[pos] not in _DIGITS:
        return None
    value, pos = int(s[pos]), pos + 1
    if pos < len(s) and s[pos] in _DIGITS:
        value, pos = value * 10 + int(s[pos]), pos + 1
    return value, pos


def _scan_date(s: str, strict: bool) -> tuple[Any, int] | None:
    """DuckDB's Date::TryConvertDate: ``((year, month, day) | special, end position)``."""
    special = _SPECIAL_DATE.fullmatch(s)
    if special:
        word = special.group(2).lower()
        value = dt.date(1970, 1, 1) if word == "epoch" else _Infinite(special.group(1) == "-")
        return value, len(s)
    pos, n = 0, len(s)
    while pos < n and s[pos] in _SPACES:
        pos += 1
    negative = pos < n and s[pos] == "-"
    pos += negative
    start = pos
    while pos < n and s[pos] in _DIGITS:
        pos += 1
    if pos == start or pos - start > 9 or (strict and pos - start < 2) or pos >= n:
        return None
    year = int(s[start:pos]) * (-1 if negative else 1)
    sep = s[pos]
    if sep not in " -/\\":
        return None
    month = _two_digits(s, pos + 1)
    if month is None or month[1] >= n or s[month[1]] != sep:
        return None
    day = _two_digits(s, month[1] + 1)
    if day is None:
        return None
    pos = day[1]
    if n - pos >= 5 and s[pos] in _SPACES and s[pos + 1 : pos + 5].lower() == "(bc)":
        if negative or year == 0:
            return None
        year, pos = -year + 1, pos + 5
    if strict:
        if s[pos:].strip(_SPACES):
            return None
        pos = n
    elif pos < n and s[pos] in _DIGITS:
        return None
    if not _valid_date(year, month[0], day[0]):
        return None
    return (year, month[0], day[0]), pos


def _scan_time(s: str, pos: int) -> tuple[tuple[int, int, int, int], int] | None:
    """DuckDB's Time::TryConvertInternal (non-strict): ``((h, m, s, us), end position)``."""
    n = len(s)
    while pos < n and s[pos] in _SPACES:
        pos += 1
    start = pos
    while pos < n and s[pos] in _DIGITS:
        pos += 1
    if pos == start or pos - start > 9 or pos >= n or s[pos] != ":":
        return None
    hour = int(s[start:pos])
    minute = _two_digits(s, pos + 1)
    if minute is None or minute[0] >= 60:
        return None
    second, micros, pos = 0, 0, minute[1]
    if pos < n and s[pos] == ":":
        sec = _two_digits(s, pos + 1)
        if sec is None:
            # DuckDB takes "HH:MM:" with the seconds left out as :00 (and then no fraction).
            clock = _hour_ok(hour, minute[0], 0, 0)
            return (clock, pos + 1) if clock is not None else None
        if sec[0] >= 60:
            return None
        second, pos = sec
        if pos < n and s[pos] == ".":
            pos += 1
            start = pos
            while pos < n and s[pos] in _DIGITS:
                pos += 1
            micros = int(s[start:pos][:6].ljust(6, "0")) if pos > start else 0
    clock = _hour_ok(hour, minute[0], second, micros)
    return (clock, pos) if clock is not None else None


def _hour_ok(hour: int, minute: int, second: int, micros: int) -> tuple[int, int, int, int] | None:
    """The clock reading, or None past 24:00:00 (DuckDB accepts exactly 24:00:00)."""
    if hour > 24 or (hour == 24 and (minute or second or micros)):
        return None
    return hour, minute, second, micros


def _skip_utc_offset(s: str, pos: int) -> int | None:
    """DuckDB's Timestamp::TryParseUTCOffset: ``+HH`` or ``-HH``, then optional ``MM`` or ``:MM``."""
    n = len(s)
    if pos + 3 > n or s[pos] not in "+-" or s[pos + 1] not in _DIGITS or s[pos + 2] not in _DIGITS:
        return None
    pos += 3
    colon = pos < n and s[pos] == ":"
    if pos + colon + 2 <= n and s[pos + colon] in _DIGITS and s[pos + colon + 1] in _DIGITS:
        return pos + colon + 2
    return None if colon else pos


def _parse_timestamp(s: str) -> Any:
    """TIMESTAMP: a date, optional ``' '``/``'T'`` and time, then ``Z``, a UTC offset or a zone name
    (all accepted and, as DuckDB 2.0 does for TIMESTAMP, ignored). Returns a tuple or ``_Infinite``,
    or None when it does not parse."""
    date = _scan_date(s, strict=False)
    if date is None:
        return None
    value, pos = date
    if not isinstance(value, tuple):
        return value
    n = len(s)
    if pos == n:
        return (*value, 0, 0, 0, 0) if _TIMESTAMP_YEARS[0] < value[0] < _TIMESTAMP_YEARS[1] else None
    if s[pos] in " T":
        pos += 1
    time = _scan_time(s, pos)
    if time is None:
        return None
    clock, pos = time
    if pos < n:
        if s[pos] == "Z":
            pos += 1
        elif (after := _skip_utc_offset(s, pos)) is not None:
            pos = after
        else:
            if s[pos] != " ":
                return None
            pos += 1
            while pos < n and s[pos] in _TZ_CHARS:
                pos += 1
        if s[pos:].strip(_SPACES):
            return None
    if not _TIMESTAMP_YEARS[0] < value[0] < _TIMESTAMP_YEARS[1]:
        return None
    return (*value, *clock)


def _parse_date(s: str) -> Any:
    date = _scan_date(s, strict=True)
    return None if date is None else date[0]


_CANDIDATES: tuple[tuple[pa.DataType, Any], ...] = (
    (pa.date32(), _parse_date),
    (pa.timestamp("us"), _parse_timestamp),
    (pa.int64(), _parse_bigint),
)


def infer_value_type(raw: str) -> pa.DataType | None:
    """The type DuckDB gives one raw folder value; None for a NULL token (no say in the type)."""
    if _is_null_token(raw):
        return None
    for arrow_type, parse in _CANDIDATES:
        if parse(raw) is not None:
            return arrow_type
    return pa.string()


def infer_column_type(raw_values: Iterable[str]) -> pa.DataType:
    """The type of a partition column: the common type of its values, VARCHAR when they differ."""
    found: pa.DataType | None = None
    for raw in raw_values:
        value_type = infer_value_type(raw)
        if value_type is None:
            continue
        if found is None:
            found = value_type
        elif found != value_type:
            return pa.string()
    return found if found is not None else pa.string()


def _python_value(column: str, raw: str, parsed: Any, arrow_type: pa.DataType) -> Any:
    if pa.types.is_integer(arrow_type):
        return parsed
    if isinstance(parsed, _Infinite) or (isinstance(parsed, tuple) and not 1 <= parsed[0] <= 9999):
        raise TableFormatError(
            f"partition value {raw!r} of column {column!r} is a {arrow_type} that Python cannot "
            "represent (infinity, or a year outside 1..9999); declare the column's type with "
            "partition_schema (e.g. pa.string())"
        )
    if isinstance(parsed, dt.date):
        return parsed if pa.types.is_date(arrow_type) else dt.datetime(1970, 1, 1)
    if pa.types.is_date(arrow_type):
        return dt.date(*parsed)
    year, month, day, hour, minute, second, micros = parsed
    if hour == 24:  # 24:00:00 is midnight of the next day
        return dt.datetime(year, month, day) + dt.timedelta(days=1)
    return dt.datetime(year, month, day, hour, minute, second, micros)


def typed_value(column: str, raw: str, arrow_type: pa.DataType) -> Any:
    """The value of one raw folder value in its (inferred) column type, as DuckDB reads it."""
    if pa.types.is_string(arrow_type):
        return None if raw == HIVE_NULL else decode_value(raw)
    if _is_null_token(raw):
        return None
    for candidate, parse in _CANDIDATES:
        if candidate == arrow_type:
            parsed = parse(raw)
            if parsed is None:
                raise TableFormatError(f"partition value {raw!r} of column {column!r} is not a {arrow_type}")
            return _python_value(column, raw, parsed, arrow_type)
    raise TableFormatError(f"partition column {column!r} has unexpected inferred type {arrow_type}")


def cast_declared(column: str, raw: str, arrow_type: pa.DataType) -> Any:
    """The value of a raw folder value in a user-declared type (pyarrow's cast of the decoded
    text). NULL tokens are NULL; for a string column only ``__HIVE_DEFAULT_PARTITION__`` is."""
    if raw == HIVE_NULL:
        return None
    text = decode_value(raw)
    if is_string_like(arrow_type):
        return text
    if text == "" or text.upper() == "NULL":
        return None
    try:
        return pa.array([text], pa.string()).cast(arrow_type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TableFormatError(
            f"partition value {text!r} of column {column!r} cannot be read as the declared type "
            f"{arrow_type}: {exc}"
        ) from exc
