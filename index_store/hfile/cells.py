"""The cells of a data block, both ways: per cell a key length and a value length (4 bytes each),
the HBase key (2-byte row length, row, then family, qualifier, timestamp and type), the value, and
the cell's MVCC timestamp as a Hadoop vlong (0, one byte, in Hudi's files).

Each cell's lengths say where the next one starts, so finding the cells is one walk over the
block (a loop of two integer reads per cell); the rows and values are then cut out of the payload
into Arrow binary arrays in a few numpy operations, without a Python object per cell."""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from index_store.hfile.index import hbase_key

__all__ = ["CellFormatError", "Cells", "decode_cells", "encode_cells", "find_cell"]

_LENGTHS = struct.Struct(">ii")
_SHORT = struct.Struct(">H")


class CellFormatError(ValueError):
    """Data block bytes whose cells run past the block or hold keys shorter than their rows."""


@dataclass(frozen=True)
class Cells:
    """The cells of one data block in order: rows (Hudi's keys) and values."""

    keys: pa.BinaryArray
    values: pa.BinaryArray

    def __len__(self) -> int:
        return len(self.keys)


def _mvcc_size(first: int) -> int:
    """The size of a Hadoop vlong from its first byte."""
    signed = first - 256 if first > 127 else first
    if signed >= -112:
        return 1
    return (-119 - signed) if signed < -120 else (-111 - signed)


def decode_cells(payload: bytes, with_mvcc: bool = True) -> Cells:
    """The cells of a data block's (uncompressed) payload."""
    starts = _walk(payload, with_mvcc)
    buffer = np.frombuffer(payload, np.uint8)
    at = np.asarray(starts, np.int64)
    key_lengths = _read_be(buffer, at, 4)
    value_lengths = _read_be(buffer, at + 4, 4)
    row_lengths = _read_be(buffer, at + 8, 2)
    if np.any(row_lengths + 2 > key_lengths):
        raise CellFormatError("a cell's row is longer than its key")
    keys = _binary(buffer, at + 10, row_lengths)
    values = _binary(buffer, at + 8 + key_lengths, value_lengths)
    return Cells(keys, values)


def find_cell(payload: bytes, key: bytes, with_mvcc: bool = True) -> bytes | None:
    """The value of the cell whose row is ``key`` in a data block's payload, None when there is
    none: the walk stops at the first row not below ``key`` (cells are sorted), and builds no
    arrays, so one lookup costs half a block's walk on average."""
    end, pos = len(payload), 0
    while pos < end:
        if pos + 10 > end:
            raise CellFormatError(f"a cell at byte {pos} of {end} is cut short")
        key_length, value_length = _LENGTHS.unpack_from(payload, pos)
        row_length = _SHORT.unpack_from(payload, pos + 8)[0]
        value_at = pos + 8 + key_length
        if key_length < 2 + row_length or value_length < 0 or value_at + value_length > end:
            raise CellFormatError(f"the cell at byte {pos} of {end} runs past the block")
        row = payload[pos + 10 : pos + 10 + row_length]
        if row >= key:
            return payload[value_at : value_at + value_length] if row == key else None
        pos = value_at + value_length
        if with_mvcc:
            if pos >= end:
                raise CellFormatError(f"the cell at byte {pos} has no MVCC timestamp")
            pos += _mvcc_size(payload[pos])
    return None


def _walk(payload: bytes, with_mvcc: bool) -> list[int]:
    """Where each cell starts. The fast walk assumes one-byte MVCC timestamps (Hudi's are 0) and
    checks that afterwards in one numpy test; anything else takes the careful walk, which also
    says precisely what is wrong with a damaged block."""
    unpack, end, pos = _LENGTHS.unpack_from, len(payload), 0
    starts: list[int] = []
    tail = 9 if with_mvcc else 8
    append = starts.append
    try:
        while pos < end:
            append(pos)
            key_length, value_length = unpack(payload, pos)
            if key_length < 2 or value_length < 0:
                break
            pos += tail + key_length + value_length
    except struct.error:
        pass
    if pos == end and (not with_mvcc or not starts or _one_byte_mvcc(payload, starts)):
        return starts
    return _careful_walk(payload, with_mvcc)


def _one_byte_mvcc(payload: bytes, starts: list[int]) -> bool:
    """Whether the byte before each next cell (and the block's end) is a one-byte vlong."""
    last = np.frombuffer(payload, np.uint8)[np.append(np.asarray(starts[1:], np.int64), len(payload)) - 1]
    return bool(np.all((last < 128) | (last >= 144)))


def _careful_walk(payload: bytes, with_mvcc: bool) -> list[int]:
    end = len(payload)
    starts: list[int] = []
    pos = 0
    while pos < end:  # the lengths chain: each cell says where the next one is
        if pos + 10 > end:
            raise CellFormatError(f"a cell at byte {pos} of {end} is cut short")
        key_length, value_length = _LENGTHS.unpack_from(payload, pos)
        starts.append(pos)
        pos += 8 + key_length + value_length
        if key_length < 2 or value_length < 0 or pos > end:
            raise CellFormatError(f"the cell at byte {starts[-1]} of {end} runs past the block")
        if with_mvcc:
            if pos >= end:
                raise CellFormatError(f"the cell at byte {starts[-1]} has no MVCC timestamp")
            pos += _mvcc_size(payload[pos])
    if pos != end:
        raise CellFormatError(f"the last cell ends at byte {pos}, past the block's {end}")
    return starts


def _read_be(buffer: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """Big-endian unsigned integers of ``width`` bytes at each of ``at``."""
    out = np.zeros(len(at), np.int64)
    for i in range(width):
        out = out << 8 | buffer[at + i]
    return out


def _binary(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    """The byte ranges of ``buffer`` as one Arrow binary array, gathered in one numpy take."""
    offsets = np.zeros(len(starts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    gather = np.repeat(starts - offsets[:-1], lengths) + np.arange(total, dtype=np.int64)
    data = buffer[gather]
    array = pa.Array.from_buffers(
        pa.binary(), len(starts), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)]
    )
    return array


def encode_cells(keys: list[bytes], values: list[bytes]) -> bytes:
    """A data block's payload from rows and values, keys as HBase writes Hudi's cells."""
    parts = []
    for row, value in zip(keys, values, strict=True):
        key = hbase_key(row)
        parts += [_LENGTHS.pack(len(key), len(value)), key, value, b"\x00"]
    return b"".join(parts)
