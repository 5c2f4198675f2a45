"""Bloom filters on = and IN leaves, and large IN lists (binary search) against small ones."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_expr import BloomFilter, FileStats, In, Or, all_match, col, might_match

# ------------------------------------------------------------------------------------- bloom


def bloom_of(values: list[Any], t: pa.DataType) -> BloomFilter:
    bf = BloomFilter.for_entries(1000, 0.0001)  # roomy, so false positives do not show up here
    bf.add_all(pa.array(values, type=t))
    return bf


BLOOM_CASES: list[tuple[pa.DataType, list[Any], Any, Any]] = [
    # (type, [lo, hi] bounds and stored values, a stored value, an absent value within bounds)
    (pa.int64(), [10, 20, 30, 40], 30, 25),
    (pa.int32(), [10, 20, 30, 40], 20, 35),
    (pa.uint64(), [1, 2**63, 2**64 - 1], 2**63, 2**62),
    (pa.float64(), [-5.0, 0.0, 5.0], 0.0, 1.0),
    (pa.float32(), [-5.0, 0.5, 5.0], 0.5, 0.25),
    (pa.string(), ["apple", "kiwi", "pear"], "kiwi", "fig"),
    (pa.large_string(), ["apple", "kiwi", "pear"], "kiwi", "fig"),
    (pa.binary(), [b"\x00", b"\x10", b"\xff"], b"\x10", b"\x11"),
    (pa.date32(), [dt.date(2024, 1, d) for d in (1, 5, 9)], dt.date(2024, 1, 5), dt.date(2024, 1, 6)),
    (
        pa.timestamp("ns", "UTC"),
        [dt.datetime(2024, 1, 1, h, tzinfo=dt.UTC) for h in (0, 6, 12)],
        dt.datetime(2024, 1, 1, 6, tzinfo=dt.UTC),
        dt.datetime(2024, 1, 1, 7, tzinfo=dt.UTC),
    ),
    (
        pa.decimal128(9, 2),
        [decimal.Decimal(x) for x in ("1.00", "2.50", "9.99")],
        decimal.Decimal("2.50"),
        decimal.Decimal("2.51"),
    ),
]


def bloom_stats(t: pa.DataType, stored: list[Any]) -> FileStats:
    """Four files with the same bounds: with the filter, with an empty filter, without one, empty."""
    schema = pa.schema([("x", t)])
    column = {
        "min": min(stored),
        "max": max(stored),
        "null_count": 0,
        "nan_count": 0 if pa.types.is_floating(t) else None,
    }
    stats = FileStats.from_pylist(
        [
            {"file": f, "row_count": 0 if f == "empty" else 10, "stats": {"x": column}}
            for f in ("with", "other", "none", "empty")
        ],
        schema,
    )
    return stats.with_bloom("x", [bloom_of(stored, t), bloom_of(stored[:1], t), None, bloom_of(stored, t)])


@pytest.mark.parametrize(
    ("t", "stored", "present", "absent"),
    BLOOM_CASES,
    ids=lambda x: str(x) if isinstance(x, pa.DataType) else "",
)
def test_bloom_prunes_equality_within_bounds(
    t: pa.DataType, stored: list[Any], present: Any, absent: Any
) -> None:
    stats = bloom_stats(t, stored)
    full = bloom_of(stored, t)
    one = bloom_of(stored[:1], t)
    # Preconditions (hashing is deterministic): the filters answer as the test assumes.
    assert full.might_contain(pa.array([present, absent], t)).tolist() == [True, False]
    assert one.might_contain(pa.array([present, absent], t)).tolist() == [False, False]
    # Min/max alone keep every non-empty file for both values.
    assert might_match(col("x") == absent, stats.filter(np.array([0, 0, 1, 0], bool))).to_pylist() == [True]
    # A filter that lacks the value prunes its file; a file without a filter is kept.
    assert might_match(col("x") == present, stats).to_pylist() == [True, False, True, False]
    assert might_match(col("x") == absent, stats).to_pylist() == [False, False, True, False]
    assert might_match(col("x").isin([present, absent]), stats).to_pylist() == [True, False, True, False]
    assert might_match(col("x").isin([absent, stored[0]]), stats).to_pylist() == [True, True, True, False]
    # Filters say nothing about other comparisons.
    assert might_match(col("x") != absent, stats).to_pylist() == [True, True, True, False]
    assert might_match(col("x") >= absent, stats).to_pylist() == [True, True, True, False]
    assert might_match(col("x").notin([absent, present]), stats).to_pylist() == [True, True, True, False]


def test_bloom_with_negative_zero_and_nan() -> None:
    t = pa.float64()
    stats = FileStats.from_pylist(
        [
            {
                "file": "f",
                "row_count": 3,
                "stats": {"x": {"min": -1.0, "max": 1.0, "null_count": 0, "nan_count": 1}},
            }
        ],
        pa.schema([("x", t)]),
    ).with_bloom("x", [bloom_of([-1.0, 0.0, 1.0], t)])
    assert might_match(col("x") == -0.0, stats).to_pylist() == [True]
    assert might_match(col("x").isin([-0.0, 0.5]), stats).to_pylist() == [True]
    assert might_match(col("x") == 0.5, stats).to_pylist() == [False]
    # NaN rows are found through the NaN count, never through the filter.
    assert might_match(col("x") == float("nan"), stats).to_pylist() == [True]
    assert might_match(col("x").isin([0.5, float("nan")]), stats).to_pylist() == [True]


def test_bloom_with_large_in_list() -> None:
    t = pa.int64()
    stored = list(range(0, 1000, 10))
    stats = bloom_stats(t, stored)
    absent = [v for v in range(1, 1000, 10)]  # 100 values, none stored, all within the bounds
    assert not bloom_of(stored, t).might_contain(pa.array(absent)).any()
    assert not bloom_of(stored[:1], t).might_contain(pa.array([*absent, 500])).any()
    assert might_match(col("x").isin(absent), stats).to_pylist() == [False, False, True, False]
    assert might_match(col("x").isin([*absent, 500]), stats).to_pylist() == [True, False, True, False]


def test_bloom_from_pylist_and_take() -> None:
    t = pa.string()
    schema = pa.schema([("x", t)])
    stats = FileStats.from_pylist(
        [
            {
                "file": "a",
                "row_count": 2,
                "stats": {"x": {"min": "a", "max": "z", "null_count": 0, "bloom": bloom_of(["a", "z"], t)}},
            },
            {"file": "b", "row_count": 2, "stats": {"x": {"min": "a", "max": "z", "null_count": 0}}},
        ],
        schema,
    )
    assert might_match(col("x") == "m", stats).to_pylist() == [False, True]
    swapped = stats.take([1, 0])
    assert swapped.files.to_pylist() == ["b", "a"]
    assert might_match(col("x") == "m", swapped).to_pylist() == [True, False]
    assert might_match(col("x") == "z", swapped).to_pylist() == [True, True]


# ---------------------------------------------------------------------------- large IN lists


def random_files(
    rng: np.random.Generator, n: int, low: int, high: int, width: int
) -> tuple[np.ndarray, np.ndarray]:
    lo = rng.integers(low, high, size=n)
    return lo, lo + rng.integers(0, width, size=n)


def brute_force_within(lo: list[Any], hi: list[Any], values: list[Any]) -> list[bool]:
    """Per file: is some value within [lo, hi]? (None bounds: unknown, so kept.)"""
    out = []
    for a, b in zip(lo, hi, strict=True):
        out.append(True if a is None or b is None else any(a <= v <= b for v in values))
    return out


def make_stats(t: pa.DataType, lo: list[Any], hi: list[Any], null_count: int = 1) -> FileStats:
    records = [
        {"file": f"f{i}", "row_count": 5, "stats": {"x": {"min": a, "max": b, "null_count": null_count}}}
        for i, (a, b) in enumerate(zip(lo, hi, strict=True))
    ]
    return FileStats.from_pylist(records, pa.schema([("x", t)]))


def test_100k_in_list_matches_brute_force() -> None:
    rng = np.random.default_rng(11)
    values = np.unique(rng.integers(0, 10**9, size=100_000) * 2)  # even numbers only
    lo, hi = random_files(rng, 300, 0, 2 * 10**9, 40_000)
    hi[:50] = lo[:50]  # single-value files: odd ones can never match
    lo_list, hi_list = lo.tolist(), hi.tolist()
    lo_list[7] = None  # unknown bound: kept
    stats = make_stats(pa.int64(), lo_list, hi_list)
    sorted_values = values.tolist()
    expected = []
    for a, b in zip(lo_list, hi_list, strict=True):
        if a is None:
            expected.append(True)
            continue
        i = np.searchsorted(values, a)
        expected.append(bool(i < len(values) and values[i] <= b))
    # Cross-check the binary-search oracle by brute force on a few files.
    sample = [i for i in range(300) if i != 7][:30]
    brute = brute_force_within([lo_list[i] for i in sample], [hi_list[i] for i in sample], sorted_values)
    assert brute == [expected[i] for i in sample]
    got = might_match(col("x").isin(sorted_values), stats).to_pylist()
    assert got == expected
    assert 0 < sum(got) < len(got)  # the case prunes some files and keeps others
    # The same 100,000 values as an OR of 16-value IN lists, each on the per-value path.
    small = Or(*(In("x", sorted_values[i : i + 16]) for i in range(0, len(sorted_values), 16)))
    assert might_match(small, stats).to_pylist() == got
    # Every file has a NULL row, so no file surely matches NOT IN.
    assert all_match(col("x").notin(sorted_values), stats).to_pylist() == [False] * len(got)


def brute_force_check(lo: list[Any], hi: list[Any], values: list[Any], got: list[bool]) -> None:
    assert got == brute_force_within(lo, hi, values)


Gen = Callable[[np.random.Generator, int], list[Any]]

EPOCH = dt.datetime(2020, 1, 1)


def gen_int(rng: np.random.Generator, n: int) -> list[Any]:
    return rng.integers(-(10**6), 10**6, size=n).tolist()


def gen_uint(rng: np.random.Generator, n: int) -> list[Any]:
    return (rng.integers(0, 10**6, size=n).astype(np.uint64) + np.uint64(2**63)).tolist()


def gen_float(rng: np.random.Generator, n: int) -> list[Any]:
    return (rng.integers(-(10**6), 10**6, size=n) / 8).tolist()


def gen_str(rng: np.random.Generator, n: int) -> list[Any]:
    alphabet = ["a", "b", "z", "é", "中", "\U0001f600"]
    return ["".join(alphabet[int(k)] for k in rng.integers(0, len(alphabet), size=4)) for _ in range(n)]


def gen_bytes(rng: np.random.Generator, n: int) -> list[Any]:
    return [bytes(rng.integers(0, 256, size=3).astype(np.uint8)) for _ in range(n)]


def gen_date(rng: np.random.Generator, n: int) -> list[Any]:
    return [EPOCH.date() + dt.timedelta(days=int(d)) for d in rng.integers(0, 20_000, size=n)]


def gen_ts(rng: np.random.Generator, n: int) -> list[Any]:
    return [EPOCH + dt.timedelta(seconds=int(s)) for s in rng.integers(0, 10**7, size=n)]


def gen_decimal(rng: np.random.Generator, n: int) -> list[Any]:
    return [decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-(10**6), 10**6, size=n)]


@pytest.mark.parametrize(
    ("t", "gen"),
    [
        (pa.int64(), gen_int),
        (pa.int16(), lambda rng, n: rng.integers(-30000, 30000, size=n).tolist()),
        (pa.uint64(), gen_uint),
        (pa.float64(), gen_float),
        (pa.float32(), gen_float),
        (pa.string(), gen_str),
        (pa.large_string(), gen_str),
        (pa.binary(), gen_bytes),
        (pa.date32(), gen_date),
        (pa.timestamp("ms"), gen_ts),
        (pa.decimal128(12, 2), gen_decimal),
        (pa.decimal256(40, 2), gen_decimal),  # no sortable form: the per-value path
    ],
    ids=lambda x: str(x) if isinstance(x, pa.DataType) else "",
)
def test_large_in_equals_small_in_chunks(t: pa.DataType, gen: Gen) -> None:
    rng = np.random.default_rng(5)
    points = gen(rng, 400)
    pairs = [sorted(p) for p in zip(points[::2], points[1::2], strict=True)]
    # Narrow some files to one value so that most values miss them.
    lo = [p[0] for p in pairs]
    hi = [p[0] if i % 3 == 0 else p[1] for i, p in enumerate(pairs)]
    lo[5] = None
    stats = make_stats(t, lo, hi)
    values = list(dict.fromkeys(gen(rng, 2000)))
    big = col("x").isin(values)
    got = might_match(big, stats).to_pylist()
    brute_force_check(lo, hi, values, got)
    # The same list as an OR of IN lists short enough for the per-value path.
    chunks = Or(*(In("x", values[i : i + 16]) for i in range(0, len(values), 16)))
    assert might_match(chunks, stats).to_pylist() == got
    assert 0 < sum(got) < len(got)
    # Without NULL rows, strict NOT IN (no listed value within the bounds) is the complement,
    # except for the file with an unknown bound, which is not surely anything.
    strict = all_match(col("x").notin(values), make_stats(t, lo, hi, null_count=0)).to_pylist()
    assert strict == [not g and i != 5 for i, g in enumerate(got)]


def test_large_not_in_strict_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    lo, hi = random_files(rng, 200, 0, 10**6, 300)
    values = np.unique(rng.integers(0, 10**6, size=5000)).tolist()
    records = [
        {"file": f"f{i}", "row_count": 5, "stats": {"x": {"min": int(a), "max": int(b), "null_count": 0}}}
        for i, (a, b) in enumerate(zip(lo, hi, strict=True))
    ]
    stats = FileStats.from_pylist(records, pa.schema([("x", pa.int64())]))
    within = brute_force_within(lo.tolist(), hi.tolist(), values)
    assert all_match(col("x").notin(values), stats).to_pylist() == [not w for w in within]
    assert might_match(col("x").isin(values), stats).to_pylist() == within
    assert 0 < sum(within) < len(within)
