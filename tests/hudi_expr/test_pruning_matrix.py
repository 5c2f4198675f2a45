"""The pruning matrix: every leaf kind x every supported type x every statistics situation.

Each type gets a ladder of five increasing values ``v0 < v1 < v2 < v3 < v4``. One ``FileStats`` per
type holds a file for each situation (bounds ``[v1, v3]``, pinned to ``v1``, with nulls, all null,
unknown bounds or counts, empty, unknown row count, absent, and for floats NaN present / unknown /
only NaN). The expected mask of each predicate is derived below from a small table of facts.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pyarrow as pa
import pytest

from hudi_expr import BindError, Expression, FileStats, all_match, col, might_match

D = decimal.Decimal
UTC = dt.UTC


@dataclass(frozen=True)
class Case:
    """A column type, the name to address it by, and five increasing values of it."""

    label: str
    field: pa.Field
    column: str
    ladder: tuple[Any, ...]

    @property
    def is_float(self) -> bool:
        return self.column == "x" and pa.types.is_floating(self.field.type)


def _ts(tz: Any = None) -> tuple[dt.datetime, ...]:
    return (
        dt.datetime(1900, 1, 1, tzinfo=tz),
        dt.datetime(1970, 1, 1, tzinfo=tz),
        dt.datetime(2000, 2, 29, 12, tzinfo=tz),
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=tz),
        dt.datetime(2200, 1, 1, tzinfo=tz),
    )


INTS = (-100, -5, 0, 5, 100)
FLOATS = (-(2.0**100), -1.5, 0.0, 2.5, 2.0**100)
STRINGS = ("", "a", "m", "z", "é")  # 'é' is 0xC3 0xA9: above 'z' in byte order

CASES = [
    Case("int8", pa.field("x", pa.int8()), "x", INTS),
    Case("int16", pa.field("x", pa.int16()), "x", (-30000, -5, 0, 5, 30000)),
    Case("int32", pa.field("x", pa.int32()), "x", (-(2**31), -5, 0, 5, 2**31 - 1)),
    Case("int64", pa.field("x", pa.int64()), "x", (-(2**63), -(2**40), 0, 2**40, 2**63 - 1)),
    Case("uint8", pa.field("x", pa.uint8()), "x", (0, 1, 7, 200, 255)),
    Case("uint16", pa.field("x", pa.uint16()), "x", (0, 1, 7, 40000, 65535)),
    Case("uint32", pa.field("x", pa.uint32()), "x", (0, 1, 7, 2**31, 2**32 - 1)),
    Case("uint64", pa.field("x", pa.uint64()), "x", (0, 1, 2**40, 2**63, 2**64 - 1)),
    Case("float32", pa.field("x", pa.float32()), "x", FLOATS),
    Case("float64", pa.field("x", pa.float64()), "x", FLOATS),
    Case(
        "decimal128",
        pa.field("x", pa.decimal128(10, 2)),
        "x",
        (D("-99999999.99"), D("-1.50"), D("0.00"), D("2.25"), D("99999999.99")),
    ),
    Case(
        "decimal256",
        pa.field("x", pa.decimal256(40, 3)),
        "x",
        (D("-1E30"), D("-1.5"), D("0"), D("2.25"), D("1E30")),
    ),
    Case("string", pa.field("x", pa.string()), "x", STRINGS),
    Case("large_string", pa.field("x", pa.large_string()), "x", STRINGS),
    Case("binary", pa.field("x", pa.binary()), "x", (b"", b"\x00", b"a", b"\x7f", b"\xff")),
    Case("large_binary", pa.field("x", pa.large_binary()), "x", (b"", b"\x00", b"a", b"\x7f\xff", b"\xff")),
    Case("date32", pa.field("x", pa.date32()), "x", tuple(d.date() for d in _ts())),
    *(Case(f"timestamp_{u}", pa.field("x", pa.timestamp(u)), "x", _ts()) for u in ("s", "ms", "us", "ns")),
    *(
        Case(f"timestamp_{u}_utc", pa.field("x", pa.timestamp(u, "UTC")), "x", _ts(UTC))
        for u in ("s", "ms", "us", "ns")
    ),
    Case("timestamp_us_tokyo", pa.field("x", pa.timestamp("us", "Asia/Tokyo")), "x", _ts(UTC)),
    Case("struct_field", pa.field("s", pa.struct([("x", pa.int32())])), "s.x", INTS),
    Case("dictionary", pa.field("x", pa.dictionary(pa.int32(), pa.string())), "x", STRINGS),
]

# ------------------------------------------------------------------------------- situations

BASE = [
    "mid",
    "pinned",
    "some_nulls",
    "all_null",
    "no_minmax",
    "no_null_count",
    "empty",
    "rows_unknown",
    "absent",
]
FLOAT_ONLY = ["nan", "nan_unknown", "only_nan", "nan_bounds", "nan_unknown_pinned"]


def situations(case: Case) -> list[str]:
    return BASE + FLOAT_ONLY if case.is_float else BASE


def records(case: Case) -> list[dict[str, Any]]:
    v = case.ladder
    nan0 = 0 if case.is_float else None
    mid = {"min": v[1], "max": v[3], "null_count": 0, "nan_count": nan0}
    stats: dict[str, dict[str, Any] | None] = {
        "mid": mid,
        "pinned": {**mid, "max": v[1]},
        "some_nulls": {**mid, "null_count": 3},
        "all_null": {"min": None, "max": None, "null_count": 10, "nan_count": nan0},
        "no_minmax": {"min": None, "max": None, "null_count": 0, "nan_count": nan0},
        "no_null_count": {**mid, "null_count": None},
        "empty": {"min": None, "max": None, "null_count": 0, "nan_count": nan0},
        "rows_unknown": mid,
        "absent": None,
        "nan": {**mid, "nan_count": 2},
        "nan_unknown": {**mid, "nan_count": None},
        "only_nan": {"min": None, "max": None, "null_count": 0, "nan_count": 10},
        "nan_bounds": {"min": float("nan"), "max": float("nan"), "null_count": 0, "nan_count": 10},
        "nan_unknown_pinned": {**mid, "max": v[1], "nan_count": None},
    }
    rows = {"empty": 0, "rows_unknown": None}
    out = []
    for name in situations(case):
        column_stats: dict[str, Any] = {"other": {"min": 0, "max": 1, "null_count": 0}}
        if stats[name] is not None:
            column_stats[case.column] = stats[name]
        out.append({"file": name, "row_count": rows.get(name, 10), "stats": column_stats})
    return out


@cache
def file_stats(case: Case) -> FileStats:
    schema = pa.schema([case.field, pa.field("other", pa.int64())])
    return FileStats.from_pylist(records(case), schema)


# -------------------------------------------------------------------------------- predicates


@dataclass(frozen=True)
class Comparison:
    """A comparison and the facts that decide it.

    ``mid``/``pinned``: may a file with bounds [v1, v3] / [v1, v1] hold a TRUE row? ``nan``: is a
    NaN row TRUE (NaN sorts above every number and differs from every number)?
    """

    name: str
    build: Callable[[str, tuple[Any, ...]], Expression]
    mid: bool
    pinned: bool
    nan: bool


COMPARISONS = [
    Comparison("eq_inside", lambda c, v: col(c) == v[2], True, False, False),
    Comparison("eq_above", lambda c, v: col(c) == v[4], False, False, False),
    Comparison("eq_below", lambda c, v: col(c) == v[0], False, False, False),
    Comparison("eq_at_min", lambda c, v: col(c) == v[1], True, True, False),
    Comparison("eq_at_max", lambda c, v: col(c) == v[3], True, False, False),
    Comparison("lt_min", lambda c, v: col(c) < v[1], False, False, False),
    Comparison("lt_inside", lambda c, v: col(c) < v[2], True, True, False),
    Comparison("le_min", lambda c, v: col(c) <= v[1], True, True, False),
    Comparison("le_below", lambda c, v: col(c) <= v[0], False, False, False),
    Comparison("gt_max", lambda c, v: col(c) > v[3], False, False, True),
    Comparison("gt_inside", lambda c, v: col(c) > v[2], True, False, True),
    Comparison("gt_reflected", lambda c, v: v[2] < col(c), True, False, True),
    Comparison("ge_max", lambda c, v: col(c) >= v[3], True, False, True),
    Comparison("ge_above", lambda c, v: col(c) >= v[4], False, False, True),
    Comparison("ne_min", lambda c, v: col(c) != v[1], True, False, True),
    Comparison("ne_inside", lambda c, v: col(c) != v[2], True, True, True),
    Comparison("in_outside", lambda c, v: col(c).isin([v[0], v[4]]), False, False, False),
    Comparison("in_inside", lambda c, v: col(c).isin([v[0], v[2]]), True, False, False),
    Comparison("in_at_min", lambda c, v: col(c).isin([v[4], v[1]]), True, True, False),
    Comparison("notin_min", lambda c, v: col(c).notin([v[1], v[4]]), True, False, True),
    Comparison("notin_inside", lambda c, v: col(c).notin([v[2], v[3]]), True, True, True),
    Comparison("not_lt_min", lambda c, v: ~(col(c) < v[1]), True, True, True),  # x >= v1
    Comparison("not_ge_inside", lambda c, v: ~(col(c) >= v[2]), True, True, False),  # x < v2
    Comparison("not_in_inside", lambda c, v: ~col(c).isin([v[2], v[3]]), True, True, True),
]


def expected_comparison(cmp: Comparison, situation: str) -> bool:
    facts = {
        "mid": cmp.mid,
        "pinned": cmp.pinned,
        "some_nulls": cmp.mid,  # NULL rows never make a comparison TRUE, nor stop one
        "all_null": False,  # nothing but NULLs: no comparison is TRUE
        "no_minmax": True,  # unknown bounds: may match
        "no_null_count": cmp.mid,  # bounds describe the non-null values, whatever the nulls
        "empty": False,  # no rows
        "rows_unknown": cmp.mid,
        "absent": True,  # a file the column's stats do not know: may match
        "nan": cmp.mid or cmp.nan,
        "nan_unknown": cmp.mid or cmp.nan,
        # Every row NaN (the counts say so; bounds unknown or unusable): as a NaN row does.
        "only_nan": cmp.nan,
        "nan_bounds": cmp.nan,
        "nan_unknown_pinned": cmp.pinned or cmp.nan,
    }
    return facts[situation]


UNARY: dict[str, dict[str, bool]] = {
    # situation -> may the file hold a TRUE row?
    "is_null": {
        "mid": False, "pinned": False, "some_nulls": True, "all_null": True, "no_minmax": False,
        "no_null_count": True, "empty": False, "rows_unknown": False, "absent": True, "nan": False,
        "nan_unknown": False, "only_nan": False, "nan_bounds": False, "nan_unknown_pinned": False,
    },
    "is_not_null": {
        "mid": True, "pinned": True, "some_nulls": True, "all_null": False, "no_minmax": True,
        "no_null_count": True, "empty": False, "rows_unknown": True, "absent": True, "nan": True,
        "nan_unknown": True, "only_nan": True, "nan_bounds": True, "nan_unknown_pinned": True,
    },
    "is_nan": {
        "mid": False, "pinned": False, "some_nulls": False, "all_null": False, "no_minmax": False,
        "no_null_count": False, "empty": False, "rows_unknown": False, "absent": True, "nan": True,
        "nan_unknown": True, "only_nan": True, "nan_bounds": True, "nan_unknown_pinned": True,
    },
    # NULL rows count: Spark's NOT isnan(NULL) is TRUE, so an all-null file may match.
    "is_not_nan": {
        "mid": True, "pinned": True, "some_nulls": True, "all_null": True, "no_minmax": True,
        "no_null_count": True, "empty": False, "rows_unknown": True, "absent": True, "nan": True,
        "nan_unknown": True, "only_nan": False, "nan_bounds": False, "nan_unknown_pinned": True,
    },
}  # fmt: skip


def unary_expression(kind: str, column: str) -> Expression:
    c = col(column)
    return {
        "is_null": c.is_null(),
        "is_not_null": c.is_not_null(),
        "is_nan": c.is_nan(),
        "is_not_nan": c.is_not_nan(),
    }[kind]


def expected_unary(kind: str, case: Case, situation: str) -> bool:
    if not case.is_float and kind == "is_nan":
        return False  # only floats hold NaN: isnan binds to FALSE
    if not case.is_float and kind == "is_not_nan":
        kind = "is_not_null"  # NOT isnan(x) is x IS NOT NULL elsewhere
    return UNARY[kind][situation]


def mask(expr: Expression, case: Case) -> dict[str, bool]:
    result = might_match(expr, file_stats(case))
    assert isinstance(result, pa.BooleanArray) and result.null_count == 0
    return dict(zip(situations(case), result.to_pylist(), strict=True))


@pytest.mark.parametrize("cmp", COMPARISONS, ids=lambda c: c.name)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_comparisons(case: Case, cmp: Comparison) -> None:
    got = mask(cmp.build(case.column, case.ladder), case)
    want = {s: expected_comparison(cmp, s) for s in situations(case)}
    assert got == want


@pytest.mark.parametrize("kind", list(UNARY))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_unary(case: Case, kind: str) -> None:
    got = mask(unary_expression(kind, case.column), case)
    want = {s: expected_unary(kind, case, s) for s in situations(case)}
    assert got == want


# Substring and word tests: bounds cannot tell whether a string holds a substring or a word, so
# only a file with no non-null value is ruled out, in either polarity (situation -> may match).
TEXT_SEARCH: dict[str, Callable[[str], Expression]] = {
    "contains": lambda c: col(c).contains("m"),
    "not_contains": lambda c: col(c).not_contains("m"),
    "contains_term": lambda c: col(c).contains_term("Z"),
    "not_contains_term": lambda c: col(c).not_contains_term("z"),
    "not_contains_via_not": lambda c: ~col(c).contains("zz"),
}
HAS_VALUES = {
    "mid": True, "pinned": True, "some_nulls": True, "all_null": False, "no_minmax": True,
    "no_null_count": True, "empty": False, "rows_unknown": True, "absent": True,
}  # fmt: skip
TEXT_CASES = [
    c for c in CASES if pa.types.is_string(c.field.type) or c.label in ("large_string", "dictionary")
]


@pytest.mark.parametrize("kind", list(TEXT_SEARCH))
@pytest.mark.parametrize("case", TEXT_CASES, ids=lambda c: c.label)
def test_text_search(case: Case, kind: str) -> None:
    expr = TEXT_SEARCH[kind](case.column)
    assert mask(expr, case) == HAS_VALUES
    # Nothing is surely TRUE for every row (but the empty file, vacuously).
    every = all_match(expr, file_stats(case)).to_pylist()
    assert every == [s == "empty" for s in situations(case)]


@pytest.mark.parametrize("case", [c for c in CASES if c not in TEXT_CASES], ids=lambda c: c.label)
def test_text_search_needs_a_string_column(case: Case) -> None:
    for build in TEXT_SEARCH.values():
        with pytest.raises(BindError, match="needs a string column"):
            might_match(build(case.column), file_stats(case))


def test_empty_substring_is_not_null() -> None:
    (case,) = [c for c in CASES if c.label == "string"]
    stats = file_stats(case)
    assert mask(col("x").contains(""), case) == mask(col("x").is_not_null(), case)
    assert all_match(col("x").contains(""), stats) == all_match(col("x").is_not_null(), stats)
    assert mask(col("x").not_contains(""), case) == dict.fromkeys(situations(case), False)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_column_without_any_stats_keeps_every_nonempty_file(case: Case) -> None:
    schema = pa.schema([case.field, pa.field("other", pa.int64())])
    stats = FileStats.from_pylist(
        [
            {"file": "a", "row_count": 10, "stats": {"other": {"min": 0, "max": 1}}},
            {"file": "b", "row_count": None},
            {"file": "empty", "row_count": 0},
        ],
        schema,
    )
    assert case.column not in stats.columns
    for cmp in COMPARISONS:
        assert might_match(cmp.build(case.column, case.ladder), stats).to_pylist() == [True, True, False]
        assert all_match(cmp.build(case.column, case.ladder), stats).to_pylist() == [False, False, True]
    for kind in UNARY:
        keep = not (kind == "is_nan" and not case.is_float)
        assert might_match(unary_expression(kind, case.column), stats).to_pylist() == [keep, keep, False]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_and_or_combine_leaf_masks(case: Case) -> None:
    v = case.ladder
    keep, prune = col(case.column) == v[2], col(case.column) == v[4]
    stats = file_stats(case)
    mid = situations(case).index("mid")
    assert might_match(keep & prune, stats)[mid].as_py() is False
    assert might_match(keep | prune, stats)[mid].as_py() is True
    assert might_match(prune | col("other").is_null(), stats)[mid].as_py() is False
    assert might_match(keep & (col("other") > 0), stats)[mid].as_py() is True
    assert might_match(keep & (col("other") > 1), stats)[mid].as_py() is False
    assert might_match(col(case.column).between(v[2], v[4]), stats)[mid].as_py() is True
    assert might_match(col(case.column).between(v[0], v[0]), stats)[mid].as_py() is False
    assert might_match(col(case.column).between(v[4], v[4]), stats)[mid].as_py() is False


# -------------------------------------------------------------------------------------- bool

BOOL_SCHEMA = pa.schema([("b", pa.bool_())])
BOOL_STATS = FileStats.from_pylist(
    [
        {"file": "all_false", "row_count": 4, "stats": {"b": {"min": False, "max": False, "null_count": 0}}},
        {"file": "mixed", "row_count": 4, "stats": {"b": {"min": False, "max": True, "null_count": 1}}},
        {"file": "all_true", "row_count": 4, "stats": {"b": {"min": True, "max": True, "null_count": 0}}},
        {"file": "all_null", "row_count": 4, "stats": {"b": {"null_count": 4}}},
    ],
    BOOL_SCHEMA,
)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (col("b") == True, [False, True, True, False]),  # noqa: E712
        (col("b") == False, [True, True, False, False]),  # noqa: E712
        (col("b") != True, [True, True, False, False]),  # noqa: E712
        (col("b") < True, [True, True, False, False]),
        (col("b") > False, [False, True, True, False]),
        (col("b") >= False, [True, True, True, False]),
        (col("b").isin([True]), [False, True, True, False]),
        (col("b").notin([True]), [True, True, False, False]),
        (col("b").is_null(), [False, True, False, True]),
        (~(col("b") == True), [True, True, False, False]),  # noqa: E712
    ],
)
def test_bool_column(expr: Expression, expected: list[bool]) -> None:
    assert might_match(expr, BOOL_STATS).to_pylist() == expected
