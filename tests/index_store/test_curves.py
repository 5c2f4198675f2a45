"""``index_store.curves``: z-order and Hilbert keys from ranks, on grids and on real columns."""

from __future__ import annotations

import datetime as dt
import itertools
import math
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from index_store.curves import column_ranks, curve_keys, grid_bits, hilbert_keys, zorder_keys


def _grid(d: int, bits: int) -> list[np.ndarray]:
    cells = np.array(list(itertools.product(range(2**bits), repeat=d)), dtype=np.uint64)
    return [cells[:, i] for i in range(d)]


@pytest.mark.parametrize(
    ("d", "bits"), [(1, 4), *((2, b) for b in range(1, 6)), *((3, b) for b in range(1, 4))]
)
@pytest.mark.parametrize("curve", [zorder_keys, hilbert_keys])
def test_keys_are_a_bijection_of_the_grid(curve, d: int, bits: int) -> None:  # type: ignore[no-untyped-def]
    keys = curve(_grid(d, bits), bits)
    assert sorted(keys.tolist()) == list(range(2 ** (d * bits)))


@pytest.mark.parametrize(("d", "bits"), [(2, 1), (2, 4), (3, 2), (3, 3)])
def test_consecutive_hilbert_keys_are_neighbouring_cells(d: int, bits: int) -> None:
    cells = _grid(d, bits)
    order = np.argsort(hilbert_keys(cells, bits))
    path = np.stack([c[order].astype(np.int64) for c in cells])
    assert (np.abs(np.diff(path, axis=1)).sum(axis=0) == 1).all()


def test_known_orders() -> None:
    x, y = np.array([0, 0, 1, 1], np.uint64), np.array([0, 1, 0, 1], np.uint64)
    assert zorder_keys([x, y], 1).tolist() == [0, 1, 2, 3]  # (1, 0) is 2: the first column's bit is high
    assert hilbert_keys([x, y], 1).tolist() == [0, 1, 3, 2]  # (0,0), (0,1), (1,1), (1,0)


def test_neighbours_are_close_in_key_order() -> None:
    bits = 6
    x, y = _grid(2, bits)
    side = 2**bits
    rng = np.random.default_rng(1)
    for curve in (zorder_keys, hilbert_keys):
        keys = curve([x, y], bits).astype(np.int64).reshape(side, side)
        random_keys = rng.permutation(side * side).reshape(side, side)
        for k in (keys, random_keys):
            k.setflags(write=False)
        near = np.abs(np.diff(keys, axis=0)).mean() + np.abs(np.diff(keys, axis=1)).mean()
        far = np.abs(np.diff(random_keys, axis=0)).mean() + np.abs(np.diff(random_keys, axis=1)).mean()
        assert near < far / 10, (curve.__name__, near, far)


def test_ranks_keep_sql_order_and_fill_the_grid() -> None:
    bits = 8
    cases = [
        [5, -3, None, 5, 0, 2**40],
        [1.5, math.nan, None, -0.0, 0.0, -math.inf, math.inf],
        ["b", "é", "a", None, "ab", "Z"],
        [dt.date(2020, 1, 2), None, dt.date(1969, 12, 31)],
        [dt.datetime(2020, 1, 1, 0, 0, 1), dt.datetime(2020, 1, 1)],
        [Decimal("1.50"), Decimal("-2.00"), None],
    ]
    for values in cases:
        ranks = column_ranks(pa.array(values), bits).tolist()

        def sql_key(v):  # type: ignore[no-untyped-def]
            if v is None:
                return (0, 0)
            if isinstance(v, float) and math.isnan(v):
                return (2, 0)
            return (1, v.encode() if isinstance(v, str) else v)

        for a, b in itertools.combinations(range(len(values)), 2):
            ka, kb = sql_key(values[a]), sql_key(values[b])
            assert (ka < kb) == (ranks[a] < ranks[b]) and (ka == kb) == (ranks[a] == ranks[b]), (
                values,
                ranks,
            )
        assert min(ranks) == 0 and max(ranks) >= 2**bits // 2
    skewed = pa.array([7] * 990 + list(range(10)))
    assert column_ranks(skewed, bits).max() > 2**bits * 0.8  # a rare value still reaches the top
    assert column_ranks(pa.array([3, 3, 3]), bits).tolist() == [0, 0, 0]
    assert column_ranks(pa.array(["b", "a"]).dictionary_encode(), 1).tolist() == [1, 0]
    with pytest.raises(ValueError, match="bits must be from 1 to 32"):
        column_ranks(pa.array([1]), 33)


def test_a_key_must_fit_64_bits() -> None:
    cells = [np.zeros(3, np.uint64)] * 3
    with pytest.raises(ValueError, match="do not fit a 64-bit key"):
        zorder_keys(cells, 22)
    assert grid_bits(2) == 32 and grid_bits(3) == 21 and grid_bits(1) == 32
    with pytest.raises(ValueError, match="unknown curve 'spiral'"):
        curve_keys("spiral", [pa.array([1])])


def test_two_million_rows() -> None:
    rng = np.random.default_rng(3)
    a, b = pa.array(rng.integers(0, 10**6, 2_000_000)), pa.array(rng.random(2_000_000))
    for strategy in ("zorder", "hilbert"):
        keys = curve_keys(strategy, [a, b])
        assert keys.dtype == np.uint64 and len(keys) == 2_000_000
