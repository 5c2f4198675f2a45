"""Pruning edge cases: signed zeros, infinities, NaN-only files, byte order of non-ASCII strings,
prefixes across multi-byte characters, and truncated string bounds."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

from hudi_expr import Expression, FileStats, all_match, col, might_match

INF = math.inf
NAN = math.nan


def stats_of(t: pa.DataType, files: list[dict[str, Any]]) -> FileStats:
    """One file per entry: ``{"min", "max", "null_count", "nan_count", "row_count"}`` of column x."""
    records = []
    for i, f in enumerate(files):
        column = {k: f.get(k) for k in ("min", "max", "null_count", "nan_count")}
        records.append({"file": f"f{i}", "row_count": f.get("row_count", 10), "stats": {"x": column}})
    return FileStats.from_pylist(records, pa.schema([("x", t)]))


def keep(expr: Expression, stats: FileStats) -> list[bool]:
    return might_match(expr, stats).to_pylist()


# ------------------------------------------------------------------------------ signed zeros


def zero_files(t: pa.DataType) -> FileStats:
    return stats_of(
        t,
        [
            {"min": -0.0, "max": -0.0, "null_count": 0, "nan_count": 0},  # only negative zeros
            {"min": 0.0, "max": 0.0, "null_count": 0, "nan_count": 0},  # only positive zeros
            {"min": -0.0, "max": 0.0, "null_count": 0, "nan_count": 0},
        ],
    )


@pytest.mark.parametrize("t", [pa.float32(), pa.float64()], ids=str)
@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # -0.0 = 0.0 in SQL: a file of zeros of either sign holds 0.0 and -0.0 alike.
        (col("x") == 0.0, [True, True, True]),
        (col("x") == -0.0, [True, True, True]),
        (col("x") > 0.0, [False, False, False]),
        (col("x") > -0.0, [False, False, False]),
        (col("x") >= 0.0, [True, True, True]),
        (col("x") < 0.0, [False, False, False]),
        (col("x") < -0.0, [False, False, False]),
        (col("x") <= -0.0, [True, True, True]),
        (col("x") != 0.0, [False, False, False]),
        (col("x") != -0.0, [False, False, False]),
        (col("x").isin([0.0, 5.0]), [True, True, True]),
        (col("x").isin([-0.0, 5.0]), [True, True, True]),
        (col("x").notin([0.0, 5.0]), [False, False, False]),
        (col("x").notin([-0.0, 5.0]), [False, False, False]),
        (col("x").isin([1.0, 5.0]), [False, False, False]),
    ],
)
def test_signed_zeros(t: pa.DataType, expr: Expression, expected: list[bool]) -> None:
    assert keep(expr, zero_files(t)) == expected


def test_signed_zeros_strict() -> None:
    stats = zero_files(pa.float64())
    assert all_match(col("x") == 0.0, stats).to_pylist() == [True, True, True]
    assert all_match(col("x") == -0.0, stats).to_pylist() == [True, True, True]
    assert all_match(col("x").isin([0.0, 1.0]), stats).to_pylist() == [True, True, True]
    assert all_match(col("x") >= 0.0, stats).to_pylist() == [True, True, True]
    assert all_match(col("x") > -0.0, stats).to_pylist() == [False, False, False]


# ---------------------------------------------------------------------------------- infinities


def inf_files(t: pa.DataType, nan_count: int = 0) -> FileStats:
    return stats_of(
        t,
        [
            {"min": -INF, "max": INF, "null_count": 0, "nan_count": nan_count},
            {"min": INF, "max": INF, "null_count": 0, "nan_count": nan_count},
            {"min": -INF, "max": -INF, "null_count": 0, "nan_count": nan_count},
            {"min": 1.0, "max": 2.0, "null_count": 0, "nan_count": nan_count},
        ],
    )


@pytest.mark.parametrize("t", [pa.float32(), pa.float64()], ids=str)
@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("x") == INF, [True, True, False, False]),
        (col("x") == -INF, [True, False, True, False]),
        (col("x") > 1e30, [True, True, False, False]),
        (col("x") >= INF, [True, True, False, False]),
        (col("x") > INF, [False, False, False, False]),  # only NaN is above +inf
        (col("x") < INF, [True, False, True, True]),
        (col("x") <= -INF, [True, False, True, False]),
        (col("x") < -INF, [False, False, False, False]),
        (col("x") != INF, [True, False, True, True]),
        (col("x").notin([INF, -INF]), [True, False, False, True]),
        (col("x").isin([INF, 7.0]), [True, True, False, False]),
        # Literals beyond the largest finite value: +inf (and NaN) rows are still above them.
        (col("x") > 1e39, [True, True, False, False]),
        (col("x") > 10**400, [True, True, False, False]),
        (col("x") < 10**400, [True, False, True, True]),
        (col("x") < -(10**400), [True, False, True, False]),
        (col("x") == 10**400, [False, False, False, False]),
    ],
)
def test_infinite_bounds(t: pa.DataType, expr: Expression, expected: list[bool]) -> None:
    assert keep(expr, inf_files(t)) == expected


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # With NaN rows, anything "above" holds somewhere: NaN > +inf.
        (col("x") > INF, [True, True, True, True]),
        (col("x") > 10**400, [True, True, True, True]),
        (col("x") != INF, [True, True, True, True]),
        (col("x") < -INF, [False, False, False, False]),
        (col("x") == NAN, [True, True, True, True]),
    ],
)
def test_infinite_bounds_with_nan(expr: Expression, expected: list[bool]) -> None:
    assert keep(expr, inf_files(pa.float32(), nan_count=1)) == expected


def test_float32_out_of_range_literal_strict() -> None:
    stats = inf_files(pa.float32())
    # Every row of the +inf file is above 1e39 (a float32 cannot hold 1e39, +inf is above it).
    assert all_match(col("x") > 1e39, stats).to_pylist() == [False, True, False, False]
    assert all_match(col("x") < 1e39, stats).to_pylist() == [False, False, True, True]


# ------------------------------------------------------------------------------------ NaN only


def nan_files() -> FileStats:
    return stats_of(
        pa.float64(),
        [
            {"min": None, "max": None, "null_count": 0, "nan_count": 10},  # only NaN
            {"min": NAN, "max": NAN, "null_count": 0, "nan_count": 10},  # NaN bounds: unusable
            {"min": None, "max": None, "null_count": 4, "nan_count": 6},  # NaN and NULL only
            {"min": 1.0, "max": NAN, "null_count": 0, "nan_count": None},  # max unusable
            {"min": 1.0, "max": 2.0, "null_count": 0, "nan_count": 0},
        ],
    )


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("x").is_nan(), [True, True, True, True, False]),
        (col("x") == NAN, [True, True, True, True, False]),
        (col("x") >= NAN, [True, True, True, True, False]),
        (col("x").isin([NAN, 99.0]), [True, True, True, True, False]),
        (col("x").is_not_nan(), [False, False, True, True, True]),
        (col("x") != NAN, [False, False, True, True, True]),
        (col("x").notin([NAN, 1.5]), [False, False, True, True, True]),
        (col("x") > NAN, [False, False, False, False, False]),
        (col("x") > 5.0, [True, True, True, True, False]),
        # Files 0-2 hold only NaN and NULL rows (counts say so, bounds unknown): NaN < 0.5 is
        # FALSE. The unusable max of file 3 is unknown, the known min still prunes.
        (col("x") < 0.5, [False, False, False, False, False]),
        (col("x") == 0.5, [False, False, False, False, False]),
        (col("x").is_null(), [False, False, True, False, False]),
    ],
)
def test_nan_only_files(expr: Expression, expected: list[bool]) -> None:
    assert keep(expr, nan_files()) == expected


# ----------------------------------------------------------------------------- string order


def string_files(t: pa.DataType) -> FileStats:
    return stats_of(
        t,
        [
            {"min": "y", "max": "z", "null_count": 0},
            {"min": "a", "max": "é", "null_count": 0},
            {"min": "é", "max": "中", "null_count": 0},  # U+00E9 < U+4E2D
            {"min": "Z", "max": "a", "null_count": 0},  # uppercase sorts before lowercase
        ],
    )


TEXT_TYPES = [pa.string(), pa.large_string(), pa.dictionary(pa.int32(), pa.string())]


@pytest.mark.parametrize("t", TEXT_TYPES, ids=str)
@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("x") == "é", [False, True, True, False]),  # 'é' (C3 A9) is above 'z' (7A)
        (col("x") > "z", [False, True, True, False]),
        (col("x") < "é", [True, True, False, True]),
        (col("x") == "ü", [False, False, True, False]),
        (col("x") >= "中文", [False, False, False, False]),
        (col("x") == "b", [False, True, False, False]),
        (col("x") == "A", [False, False, False, False]),
        (col("x").isin(["ü", "zz"]), [False, True, True, False]),
        (col("x") != "é", [True, True, True, True]),
    ],
)
def test_non_ascii_string_order(t: pa.DataType, expr: Expression, expected: list[bool]) -> None:
    assert keep(expr, string_files(t)) == expected


def test_large_in_list_uses_byte_order_for_strings() -> None:
    stats = string_files(pa.string())
    many = [f"q{i:05d}" for i in range(100)]  # all between 'a' and 'y'
    assert keep(col("x").isin(many), stats) == [False, True, False, False]
    assert keep(col("x").isin([*many, "ü"]), stats) == [False, True, True, False]


# ----------------------------------------------------------------------------------- prefixes


def prefix_files(t: pa.DataType) -> FileStats:
    as_value = (
        (lambda s: s.encode()) if pa.types.is_binary(t) or pa.types.is_large_binary(t) else (lambda s: s)
    )
    bounds = [
        ("abc", "abz"),  # 0: every value starts with 'ab'
        ("ab", "ac"),  # 1: 'ab..' and 'ac'
        ("aé", "b"),  # 2: 'aé' = 61 C3 A9 is above every 'ab...' value
        ("a", "aa"),  # 3: below 'ab'
        ("à", "è"),  # 4: C3 A0 .. C3 A8, below 'é' (C3 A9)
        ("é", "ê"),  # 5: starts with 'é' (C3 A9) .. C3 AA
        ("ê", "ë"),  # 6: C3 AA .. C3 AB, above every 'é...'
        ("中", "中文"),  # 7: E4 B8 AD ...; its first two bytes (E4 B8) are above C3 A9
        ("", "\U0001f600"),  # 8: everything
    ]
    return stats_of(t, [{"min": as_value(lo), "max": as_value(hi), "null_count": 0} for lo, hi in bounds])


PREFIX_TYPES = [
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.dictionary(pa.int8(), pa.string()),
]


@pytest.mark.parametrize("t", PREFIX_TYPES, ids=str)
@pytest.mark.parametrize(
    ("prefix", "starts", "not_starts"),
    [
        (
            "ab",
            [True, True, False, False, False, False, False, False, True],
            [False, True, True, True, True, True, True, True, True],
        ),
        (
            "é",
            [False, False, False, False, False, True, False, False, True],
            [True, True, True, True, True, True, True, True, True],
        ),
        (
            "aé",
            [False, False, True, False, False, False, False, False, True],
            [True, True, True, True, True, True, True, True, True],
        ),
        (
            "中",
            [False, False, False, False, False, False, False, True, True],
            [True, True, True, True, True, True, True, False, True],
        ),
        (
            "a",
            [True, True, True, True, False, False, False, False, True],
            [False, False, True, False, True, True, True, True, True],
        ),
    ],
)
def test_starts_with(t: pa.DataType, prefix: str, starts: list[bool], not_starts: list[bool]) -> None:
    stats = prefix_files(t)
    p: Any = prefix.encode() if pa.types.is_binary(t) or pa.types.is_large_binary(t) else prefix
    assert keep(col("x").starts_with(p), stats) == starts
    assert keep(col("x").not_starts_with(p), stats) == not_starts
    assert keep(~col("x").starts_with(p), stats) == not_starts


def test_starts_with_strict() -> None:
    stats = prefix_files(pa.string())
    # Only file 0 ('abc'..'abz') surely has the prefix everywhere; files 3..8 surely lack it.
    assert all_match(col("x").starts_with("ab"), stats).to_pylist() == [True] + [False] * 8
    assert all_match(col("x").not_starts_with("ab"), stats).to_pylist() == [
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
    ]


def test_prefix_bytes_straddling_a_character() -> None:
    # Prefix b'\xc3' is half of 'é': only binary columns can ask for it.
    stats = prefix_files(pa.binary())
    assert keep(col("x").starts_with(b"\xc3"), stats) == [
        False,
        False,
        False,
        False,
        True,
        True,
        True,
        False,
        True,
    ]
    assert keep(col("x").starts_with(b"a\xc3"), stats) == [
        False,
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        True,
    ]


def test_starts_with_with_nulls_and_missing_bounds() -> None:
    stats = stats_of(
        pa.string(),
        [
            {"min": None, "max": None, "null_count": 10},
            {"min": None, "max": None, "null_count": 0},
            {"min": "ab", "max": "ab", "null_count": 9},
            {"min": "ab", "max": "ab", "null_count": 0, "row_count": 0},
        ],
    )
    assert keep(col("x").starts_with("a"), stats) == [False, True, True, False]
    assert keep(col("x").not_starts_with("a"), stats) == [False, True, False, False]
    assert all_match(col("x").starts_with("a"), stats).to_pylist() == [False, False, False, True]


# ------------------------------------------------------------------------ truncated bounds


def test_truncated_string_bounds_are_bounds() -> None:
    # Values 'abc..', 'abd..' stored with a truncated min 'ab' and a rounded-up max 'abe'.
    stats = stats_of(pa.string(), [{"min": "ab", "max": "abe", "null_count": 0}])
    assert keep(col("x") == "abcdef", stats) == [True]
    assert keep(col("x") == "ab", stats) == [True]  # the bound itself may or may not be a value
    assert keep(col("x") == "abf", stats) == [False]
    assert keep(col("x") == "aa", stats) == [False]
    assert keep(col("x").starts_with("abc"), stats) == [True]
    assert keep(col("x").starts_with("abf"), stats) == [False]
    assert keep(col("x") < "ab", stats) == [False]
    assert keep(col("x") != "ab", stats) == [True]
    # Strict evaluation never takes a truncated bound for a value.
    assert all_match(col("x") == "ab", stats).to_pylist() == [False]
    assert all_match(col("x") > "aa", stats).to_pylist() == [True]
    assert all_match(col("x") < "abf", stats).to_pylist() == [True]
    assert all_match(col("x") < "abe", stats).to_pylist() == [False]
