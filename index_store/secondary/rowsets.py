"""Row-id sets of a secondary index entry: sorted positions, or a compressed bitmap when dense.

Most values of an unclustered column occur a few times per base file: those row ids are stored
as a sorted ``uint32`` list, which parquet's delta encoding and zstd bring to about 1.2-2.6 bytes
an id and which needs no per-value Python work to build. A key covering at least
``1 / DENSE_FRACTION`` of the file's rows is stored as a bitmap instead, compressed with
bitarray's sparse encoding (``bitarray.util.sc_encode``): below that density delta-encoded lists
measured smaller than both bitmap encodings, and of the two bitmap encodings, stored in zstd
parquet, ``sc_encode`` was smaller than a roaring bitmap (pyroaring, ``run_optimize``) on small
files and within 15% on large ones, with no extra dependency (``benchmarks/secondary_bench.py
--codecs``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from bitarray import bitarray
from bitarray.util import sc_decode, sc_encode

__all__ = ["DENSE_FRACTION", "decode_bitmap", "encode_bitmap", "is_dense", "mask_of"]

DENSE_FRACTION = 4
_MIN_DENSE = 64  # below this many rows a list is never larger than a bitmap


def is_dense(counts: np.ndarray, row_count: int | np.ndarray) -> np.ndarray:
    """Per entry: store its rows as a bitmap (True) or as a list (False); ``row_count`` is the
    rows of its file (one for all, or one per entry)."""
    return (counts >= _MIN_DENSE) & (counts * DENSE_FRACTION >= row_count)


def encode_bitmap(rows: np.ndarray, row_count: int) -> bytes:
    """The sparse-compressed bitmap of ``rows`` (positions below ``row_count``)."""
    bits = np.zeros(row_count, dtype=bool)
    bits[rows] = True
    packed = bitarray(endian="little")
    packed.pack(bits.tobytes())
    return bytes(sc_encode(packed))


def decode_bitmap(blob: bytes) -> np.ndarray:
    """The positions a bitmap written by ``encode_bitmap`` holds, ascending (``uint32``)."""
    bits = sc_decode(blob)
    return np.flatnonzero(np.frombuffer(bits.unpack(), dtype=bool)).astype(np.uint32)


def mask_of(
    lists: pa.Array | pa.ChunkedArray, bitmaps: pa.Array | pa.ChunkedArray, row_count: int
) -> np.ndarray:
    """A boolean mask of ``row_count`` rows, True at every row of the given entries."""
    mask = np.zeros(row_count, dtype=bool)
    flat = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    positions = flat.flatten().to_numpy(zero_copy_only=False)
    if len(positions) and int(positions.max()) >= row_count:
        raise ValueError(f"row id {int(positions.max())} beyond the file's {row_count} rows")
    mask[positions] = True
    blobs = bitmaps.combine_chunks() if isinstance(bitmaps, pa.ChunkedArray) else bitmaps
    if blobs.null_count < len(blobs):
        # Few per file by construction (each covers a quarter of the rows or more): a bounded loop.
        for blob in blobs.drop_null().to_pylist():
            positions = decode_bitmap(blob)
            if len(positions) and int(positions[-1]) >= row_count:
                raise ValueError(f"row id {int(positions[-1])} beyond the file's {row_count} rows")
            mask[positions] = True
    return mask
