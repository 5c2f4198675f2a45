"""Keys that order rows along a space-filling curve of several columns (z-order, Hilbert), for
re-clustering a table so that each file holds a narrow range of every one of those columns.

Keys come from each column's rank, not its value: the dense rank among the column's distinct
values, spread over a grid of ``2**bits`` cells. Strings, dates, decimals and skewed columns then
interleave as fairly as uniform integers, and equal values share a cell. Vectorized over rows (the
loops run over bits and columns only). A plain sort by the columns (``linear``) needs no key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CURVES", "Curve", "column_ranks", "curve_keys", "grid_bits", "hilbert_keys", "zorder_keys"]

Curve = Literal["zorder", "hilbert"]
CURVES: tuple[Curve, ...] = get_args(Curve)
_ONE = np.uint64(1)


def grid_bits(dimensions: int) -> int:
    """Bits per column so that a key of ``dimensions`` columns fits 64 bits (at most 32)."""
    if dimensions < 1:
        raise ValueError("a curve needs at least one column")
    return min(32, 64 // dimensions)


def column_ranks(values: pa.Array | pa.ChunkedArray, bits: int) -> np.ndarray:
    """Each value's cell on a grid of ``2**bits``: its dense rank among the distinct values (SQL's
    order: NULL first, NaN after every number, -0.0 equal to 0.0, strings by their UTF-8 bytes),
    spread so that the column spans the whole grid whatever its number of distinct values."""
    if not 1 <= bits <= 32:
        raise ValueError(f"bits must be from 1 to 32, got {bits}")
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    # Ranked apart: NULL first, the values, NaN last (arrow would put NaN next to NULL).
    null = np.asarray(values.is_null(), dtype=bool)
    nan = np.zeros(n, dtype=bool)
    if pa.types.is_floating(values.type):
        nan = np.asarray(pc.fill_null(pc.is_nan(values), False), dtype=bool)
        # Arrow orders -0.0 before 0.0; SQL holds them equal: one zero before ranking.
        values = pc.if_else(pc.equal(values, 0), pa.scalar(0.0, values.type), values)
    present = ~(null | nan)
    dense = np.zeros(n, dtype=np.uint64)
    offset = int(null.any())
    distinct = offset
    if present.any():
        ranked = pc.rank(values.filter(pa.array(present)), sort_keys="ascending", tiebreaker="dense")
        ranks = np.asarray(ranked, dtype=np.uint64)
        dense[present] = ranks - _ONE + np.uint64(offset)
        distinct += int(ranks.max())
    if nan.any():
        dense[nan] = np.uint64(distinct)
        distinct += 1
    # (rank * 2**bits) // distinct keeps order and fills the grid; it fits: rank < 2**32 here.
    return (dense << np.uint64(bits)) // np.uint64(max(distinct, 1))


def zorder_keys(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Morton order: the bits of the columns' cells interleaved, most significant first, the first
    column's bit highest within each group."""
    cells = _cells(ranks, bits)
    key = np.zeros(len(cells[0]), dtype=np.uint64)
    for bit in range(bits - 1, -1, -1):
        for cell in cells:
            key = (key << _ONE) | ((cell >> np.uint64(bit)) & _ONE)
    return key


def hilbert_keys(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert order (J. Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707, 2004): the
    cells turned into the curve's "transpose" form, whose bits interleaved as in z-order are the
    index. Consecutive keys are neighbouring cells. On a 2x2 grid the order is (0,0), (0,1), (1,1),
    (1,0) for (first column, second column)."""
    x = [cell.copy() for cell in _cells(ranks, bits)]
    n = len(x)
    if n == 1:
        return x[0]
    top = _ONE << np.uint64(bits - 1)
    q = top
    while q > _ONE:  # undo excess work: inverse or exchange, per row
        p = q - _ONE
        for i in range(n):
            high = (x[i] & q) != 0
            x[0] = np.where(high, x[0] ^ p, x[0])
            if i:
                t = np.where(high, np.uint64(0), (x[0] ^ x[i]) & p)
                x[0] ^= t
                x[i] ^= t
        q >>= _ONE
    for i in range(1, n):  # Gray encode
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = top
    while q > _ONE:
        t = np.where((x[n - 1] & q) != 0, t ^ (q - _ONE), t)
        q >>= _ONE
    for i in range(n):
        x[i] ^= t
    return zorder_keys(x, bits)


def curve_keys(strategy: str, columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """The ``zorder`` or ``hilbert`` key of each row of ``columns`` (uint64), from their ranks."""
    if strategy not in CURVES:
        raise ValueError(f"unknown curve {strategy!r}: use one of {', '.join(CURVES)} (linear sorts, no key)")
    bits = grid_bits(len(columns))
    ranks = [column_ranks(c, bits) for c in columns]
    return zorder_keys(ranks, bits) if strategy == "zorder" else hilbert_keys(ranks, bits)


def _cells(ranks: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    if not ranks:
        raise ValueError("a curve needs at least one column")
    if len(ranks) * bits > 64:
        raise ValueError(f"{len(ranks)} columns of {bits} bits do not fit a 64-bit key (at most 64 bits)")
    if len({len(r) for r in ranks}) > 1:
        raise ValueError("the columns' cells differ in length")
    mask = np.uint64((1 << bits) - 1)
    return [np.asarray(r, dtype=np.uint64) & mask for r in ranks]
