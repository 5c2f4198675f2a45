"""Hudi's string form of a column value, as its secondary index stores it (the secondary key).

Hudi 1.x reads each record with its engine's reader and stores ``value.toString()`` of the
engine's value: a string as itself, an integer in decimal digits (Java's ``Integer.toString`` /
``Long.toString``: no sign for positives, no leading zeros), a date as its day count since
1970-01-01 (Spark's ``DateType`` holds days; the real tables here store ``19737`` for
2024-01-15). Only these forms are used: a timestamp's (micro- or milliseconds, by engine and
version), a double's (Java's ``Double.toString``) or anything else's could not be proven bit-exact,
so an index on such a column answers nothing (its files are kept, with a note).

Before an index is used its stored keys are checked to have the expected form (all decimal
integers for an integer or date column): a table written by a Hudi version that spells them
otherwise (``2024-01-15``) is caught there, not answered wrongly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SecondaryForm", "secondary_form"]

# Java's Integer/Long.toString of any value, and nothing else.
_DECIMAL = r"^(0|-?[1-9][0-9]*)$"


@dataclass(frozen=True)
class SecondaryForm:
    """How values of one column type become secondary keys, and how stored keys are checked."""

    name: str  # "string", "integer", "date (days since 1970-01-01)"
    convert: Callable[[pa.Array], pa.Array]
    pattern: str | None  # every stored non-null key matches it (None: any string)

    def keys(self, values: pa.Array) -> pa.StringArray:
        """``values`` (the column's type) as secondary keys; nulls dropped (never equal)."""
        return pc.drop_null(self.convert(values))

    def conforms(self, stored: pa.Array) -> bool:
        """Whether every stored secondary key has this form."""
        if self.pattern is None:
            return True
        keys = pc.drop_null(stored)
        return not len(keys) or bool(pc.all(pc.match_substring_regex(keys, self.pattern)).as_py())


def _integers(values: pa.Array) -> pa.Array:
    return values.cast(pa.int64()).cast(pa.string())


def _days(values: pa.Array) -> pa.Array:
    return values.cast(pa.date32()).cast(pa.int32()).cast(pa.string())


def _strings(values: pa.Array) -> pa.Array:
    return values.cast(pa.string())


def secondary_form(column_type: pa.DataType) -> SecondaryForm | None:
    """The secondary-key form of ``column_type``'s values, or None where it is not proven."""
    if pa.types.is_string(column_type) or pa.types.is_large_string(column_type):
        return SecondaryForm("string", _strings, None)
    if pa.types.is_integer(column_type) and not pa.types.is_uint64(column_type):
        return SecondaryForm("integer", _integers, _DECIMAL)
    if pa.types.is_date32(column_type) or pa.types.is_date64(column_type):
        return SecondaryForm("date (days since 1970-01-01)", _days, _DECIMAL)
    return None
